# tui/: frame render time of the dashboard (the bar: < 2 ms for 4096 frames).
add_executable(bench_render ${CMAKE_CURRENT_SOURCE_DIR}/bench_render.c)
target_link_libraries(bench_render PRIVATE pf_tui_view)
