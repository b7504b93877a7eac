# net/: vLLM's wire (KV events, Prometheus text, ZeroMQ, HTTP) and `attach`.
pf_criterion_test(test_net_kvev SOURCES test_net_kvev.c LIBS pf_net_codec)
pf_criterion_test(test_net_prom SOURCES test_net_prom.c LIBS pf_net_codec)

# The seeded mutator over the msgpack decoder and the metrics parser: a fixed
# number of inputs, deterministic, meant to run under ASan/UBSan in CI.
add_executable(fuzz_net fuzz_net.c)
target_link_libraries(fuzz_net PRIVATE pf_net_codec pf_core)
add_test(NAME fuzz_net COMMAND fuzz_net --iters 100000 --seed 1)
set_tests_properties(fuzz_net PROPERTIES TIMEOUT 600)

# libFuzzer targets (optional): cmake -DCMAKE_C_COMPILER=clang -DPF_LIBFUZZER=ON,
# then e.g. build/tests/fuzz_kvev_libfuzzer -max_total_time=60. The decoders
# are compiled into each target so libFuzzer's coverage sees their branches.
option(PF_LIBFUZZER "Build libFuzzer targets for net/ (clang only)" OFF)
if(PF_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  pkg_check_modules(PF_FUZZ_MSGPACK REQUIRED msgpack)
  foreach(t kvev prom)
    string(TOUPPER ${t} T)
    add_executable(fuzz_${t}_libfuzzer fuzz_net.c ${CMAKE_SOURCE_DIR}/net/kvev.c
                   ${CMAKE_SOURCE_DIR}/net/prom.c ${CMAKE_SOURCE_DIR}/net/attach_model.c
                   ${CMAKE_SOURCE_DIR}/core/rng.c ${CMAKE_SOURCE_DIR}/core/err.c)
    target_compile_definitions(fuzz_${t}_libfuzzer PRIVATE PF_FUZZ_TARGET_${T})
    target_compile_options(fuzz_${t}_libfuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${t}_libfuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${t}_libfuzzer PRIVATE ${PF_FUZZ_MSGPACK_LIBRARIES} Threads::Threads m)
  endforeach()
endif()

# Real sockets on 127.0.0.1 (ports chosen by the kernel).
pf_criterion_test(test_net_zmq SOURCES test_net_zmq.c LIBS pf_net)
pf_criterion_test(test_net_http SOURCES test_net_http.c LIBS pf_net_http)
# the server past 1024 descriptors: a plain executable so that a machine
# whose descriptor limit is too low reports it skipped (77), not passed
add_executable(test_net_http_fds test_net_http_fds.c)
target_link_libraries(test_net_http_fds PRIVATE pf_net_http)
add_test(NAME test_net_http_fds COMMAND test_net_http_fds)
set_tests_properties(test_net_http_fds PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
pf_criterion_test(test_net_attach SOURCES test_net_attach.c LIBS pf_net_codec)

# `pagefault attach` end to end: usage errors, and a Python publisher in
# vLLM's wire format (both encodings, a replayed gap, a restart, hostile input,
# a 100 MB metrics page). The Python test needs Debian's python3-zmq and
# python3-msgpack, so it runs the system python3 and skips (77) without them.
add_test(NAME test_net_attach_cli
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_net_attach_cli.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_net_attach_cli PROPERTIES TIMEOUT 60)
find_program(PF_SYS_PYTHON3 python3 HINTS /usr/bin)
if(PF_SYS_PYTHON3)
  add_test(NAME test_net_attach_e2e
           COMMAND ${PF_SYS_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/attach_publisher.py $<TARGET_FILE:pagefault>)
  set_tests_properties(test_net_attach_e2e PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
pf_criterion_test(test_net_attach_view SOURCES test_net_attach_view.c LIBS pf_attach_view)

# The registry under concurrent updates while the HTTP thread renders it (TSan).
pf_race_test(race_net_metrics SOURCES race_net_metrics.c LIBS pf_net_http)
add_test(NAME test_net_attach_tmux
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_net_attach_tmux.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_net_attach_tmux PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS e2e)

# The simulator's block events published in vLLM's format (net/kvpub), read
# back over 127.0.0.1.
pf_criterion_test(test_net_kvpub SOURCES test_net_kvpub.c LIBS pf_net_kvpub)
# The round trip on real sockets, publisher and subscriber on two threads: a
# prefix-caching scheduler run read back by the attach model, a lost batch
# repaired by replay, the counts and the cached hash set equal (also TSan).
pf_race_test(race_net_kvpub SOURCES race_net_kvpub.c LIBS pf_net_kvpub pf_net_codec)
# libzmq passes message buffers between its threads and ours through atomics
# TSan cannot see (an uninstrumented library): tsan_libzmq.supp hides the
# reports that have a libzmq frame, and keeps CI's own TSAN_OPTIONS.
set_tests_properties(race_net_kvpub PROPERTIES
  ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${CMAKE_CURRENT_SOURCE_DIR}/tsan_libzmq.supp")
# The same through the command: `pagefault attach --history` reading a
# scheduler run published by net/kvpub (tests/kvpub_feed).
add_executable(kvpub_feed kvpub_feed.c)
target_link_libraries(kvpub_feed PRIVATE pf_net_kvpub)
add_test(NAME test_net_kvpub_attach
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_net_kvpub_attach.sh $<TARGET_FILE:pagefault>
                 $<TARGET_FILE:kvpub_feed>)
set_tests_properties(test_net_kvpub_attach PROPERTIES TIMEOUT 90)
# tui/simmetrics' histograms updated on one thread while another renders the
# page, as under --metrics-port (TSan).
pf_race_test(race_tui_simmetrics SOURCES race_tui_simmetrics.c LIBS pf_simmetrics)
