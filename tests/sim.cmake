# sim/: the serving simulator (engines over the scheduler core, policies,
# jobs and traces in seconds) and the `pagefault sim` command.
pf_criterion_test(test_sim_engine SOURCES test_sim_engine.c LIBS pf_sim)
pf_criterion_test(test_sim_policy SOURCES test_sim_policy.c LIBS pf_sim)
pf_criterion_test(test_sim_sched SOURCES test_sim_sched.c LIBS pf_sim)
pf_criterion_test(test_sim_loadctl SOURCES test_sim_loadctl.c LIBS pf_sim)
pf_criterion_test(test_sim_jobs SOURCES test_sim_jobs.c LIBS pf_sim)
pf_criterion_test(test_sim_cli SOURCES test_sim_cli.c ${CMAKE_SOURCE_DIR}/tui/cmd_sim.c
                  LIBS pf_progress pf_simpub pf_simflags pf_sim pf_cli)

# The public Azure trace lives outside the repository (../shared/traces);
# the test is a plain executable that exits 77 (skip) when it is absent.
set(PF_TRACE_DIR "${CMAKE_SOURCE_DIR}/../shared/traces" CACHE PATH
    "Folder holding AzureLLMInferenceTrace_code.csv (tests skip without it)")
add_executable(test_sim_trace test_sim_trace.c)
target_link_libraries(test_sim_trace PRIVATE pf_sim)
target_compile_definitions(test_sim_trace PRIVATE PF_TRACE_DIR="${PF_TRACE_DIR}")
add_test(NAME test_sim_trace COMMAND test_sim_trace)
set_tests_properties(test_sim_trace PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# Live mode under ThreadSanitizer: the threaded engine's crew landing steps,
# a viewer taking snapshots and a hammer thread calling every setter at once.
pf_race_test(race_sim SOURCES race_sim.c LIBS pf_sim)
pf_race_test(race_sched SOURCES race_sched.c LIBS pf_sim)
pf_race_test(race_crew SOURCES race_crew.c LIBS pf_sim)

# The simulator when threads or memory run out: failures made at link time
# (the wrappers are in the test).
pf_criterion_test(test_sim_fail SOURCES test_sim_fail.c LIBS pf_sim)
target_link_options(test_sim_fail PRIVATE -Wl,--wrap=pthread_create -Wl,--wrap=pf_pool_cache_new
                    -Wl,--wrap=pf_pool_alloc_n_c -Wl,--wrap=realloc)
