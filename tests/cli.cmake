# tui/cli.c and tui/report.c: the flag parser and the output formats; the
# simulator's flag table (tui/simflags.c) against the simulator.
pf_criterion_test(test_cli SOURCES test_cli.c LIBS pf_simflags pf_sim pf_cli m)

# What a script reads: CSV through pandas.read_csv with no options (the csv
# module without pandas), strict JSON, a piped trace across a sweep.
add_test(NAME test_cli_formats
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_formats.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_cli_formats PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# `bench --profile-out/--timeline`: a failed run keeps an existing file.
add_test(NAME test_cli_bench_files
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_bench_files.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_cli_bench_files PROPERTIES TIMEOUT 120)
