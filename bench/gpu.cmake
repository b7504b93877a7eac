# gpu/ benchmarks: programs that print figures. The planner is host code,
# built with or without CUDA.
add_executable(bench_gpu_plan bench_gpu_plan.c)
target_link_libraries(bench_gpu_plan PRIVATE pf_gpu)
