# tui/cli.c and tui/report.c: the flag parser and the output formats; the
# simulator's flag table (tui/simflags.c) against the simulator.
pf_criterion_test(test_cli SOURCES test_cli.c LIBS pf_simflags pf_sim pf_cli m)
