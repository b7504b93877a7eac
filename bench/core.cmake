# core/ benchmarks: programs that print figures.
add_executable(bench_core_pool bench_core_pool.c)
target_link_libraries(bench_core_pool PRIVATE pf_core Threads::Threads)
