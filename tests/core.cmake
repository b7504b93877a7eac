# core/ suites: one per module, plus the race test (TSan) and the calc CLI test.
pf_criterion_test(test_core_paging SOURCES test_core_paging.c LIBS pf_core)
pf_criterion_test(test_core_pool SOURCES test_core_pool.c test_core_pool_race.c LIBS pf_core)
target_compile_definitions(test_core_pool PRIVATE PF_STRESS_LIB)
pf_race_test(test_core_pool_race SOURCES test_core_pool_race.c LIBS pf_core)
pf_criterion_test(test_core_workload SOURCES test_core_workload.c LIBS pf_core)
pf_criterion_test(test_core_memory SOURCES test_core_memory.c LIBS pf_core)
pf_criterion_test(test_core_attn SOURCES test_core_attn.c LIBS pf_core)

# `pagefault calc` end to end: runs the built binary and checks exit codes,
# empty stdout on errors, and the seed's numbers in table, csv and json form.
pf_criterion_test(test_core_calc SOURCES test_core_calc.c)
target_compile_definitions(test_core_calc PRIVATE PF_PAGEFAULT_BIN="$<TARGET_FILE:pagefault>")
add_dependencies(test_core_calc pagefault)
