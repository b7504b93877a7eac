# tui/cli.c and tui/report.c: the flag parser and the output formats.
pf_criterion_test(test_cli SOURCES test_cli.c LIBS pf_cli)
