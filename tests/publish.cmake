# `pagefault sim` on vLLM's wire, read back by `pagefault attach` (issue 13).
add_test(NAME test_sim_publish
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_sim_publish.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_sim_publish PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS e2e)
