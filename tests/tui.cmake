# tui/: the dashboard. Buffer-level tests need only pf_tui_view (no simulator,
# no curses); the end-to-end test drives the real binary in tmux (skipped,
# 77, when tmux is not installed).
pf_criterion_test(test_tui_render SOURCES test_tui_render.c LIBS pf_tui_view)
# Recordings read back, and a damaged file's values refused (tui/record.c).
pf_criterion_test(test_tui_record SOURCES test_tui_record.c LIBS pf_tui_view)

add_test(NAME e2e_dashboard
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/e2e_dashboard.sh $<TARGET_FILE:pagefault>)
set_tests_properties(e2e_dashboard PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS e2e)

add_test(NAME test_tui_headless
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_tui_headless.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_tui_headless PROPERTIES TIMEOUT 120)

# The control thread between the UI and the simulator, under TSan in CI.
pf_race_test(race_tui_bridge SOURCES race_tui_bridge.c LIBS pf_dash)
# `pagefault sim`'s progress lines: the reporter reads a run's statistics
# while the run steps (also under TSan in CI).
pf_race_test(test_tui_progress SOURCES test_tui_progress.c LIBS pf_progress)

# The simulator's figures as vLLM's metrics, rendered and served over HTTP.
pf_criterion_test(test_tui_simmetrics SOURCES test_tui_simmetrics.c LIBS pf_simmetrics pf_net_http)

# The dashboard's /metrics read back by `pagefault attach --metrics`.
add_test(NAME test_metrics_roundtrip
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_metrics_roundtrip.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_metrics_roundtrip PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS e2e)
