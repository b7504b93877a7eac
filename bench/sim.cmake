# bench_sim: the simulator's speed (simulated sequence-steps per second,
# the time of the default run) - figures for docs/simulator.md.
add_executable(bench_sim ${CMAKE_CURRENT_SOURCE_DIR}/bench_sim.c)
target_link_libraries(bench_sim PRIVATE pf_sim)

# bench_sched: the scheduler core alone, plain and with its land phase on
# threads (the threaded engine's scaling) - figures for docs/simulator.md.
add_executable(bench_sched ${CMAKE_CURRENT_SOURCE_DIR}/bench_sched.c)
target_link_libraries(bench_sched PRIVATE pf_sim Threads::Threads)
