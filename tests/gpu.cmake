# gpu/: the host side runs everywhere (no label); the kernels need a device
# and carry the label gpu (`ctest -L gpu`): without one they print
# "skipped: no CUDA device (...)" and exit 77, which ctest shows as skipped.
pf_criterion_test(test_gpu_host SOURCES test_gpu_host.c LIBS pf_gpu pf_sim pf_core)

if(PF_HAVE_CUDA)
  pf_criterion_test(test_gpu SOURCES test_gpu.c LIBS pf_gpu pf_core LABELS gpu)
else()
  add_executable(test_gpu test_gpu_skip.c)
  target_link_libraries(test_gpu PRIVATE pf_gpu pf_core)
  add_test(NAME test_gpu COMMAND test_gpu)
  set_tests_properties(test_gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS gpu)
endif()

# `pagefault bench` end to end: usage errors exit 2 with a one-line message;
# a real run exits 0 on a device, 3 ("no GPU: ...") without one.
add_test(NAME test_gpu_bench_cli
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_bench_cli.sh $<TARGET_FILE:pagefault>)
set_tests_properties(test_gpu_bench_cli PROPERTIES TIMEOUT 300 LABELS gpu)

# The device probes (gpu/stream_probe.cu: the copy shape; gpu/launch_probe.cu:
# a launch's host time by the way it is made): usage errors exit 2; a short
# run prints its table on a device, skips (77) without one. What each must
# print is in tests/test_probe_cli.sh.
if(PF_HAVE_CUDA)
  foreach(probe stream_probe launch_probe)
    add_test(NAME test_${probe}
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_probe_cli.sh ${probe}
                     $<TARGET_FILE:pagefault_${probe}>)
    set_tests_properties(test_${probe} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS gpu)
  endforeach()
endif()

# gpu/peers.py (optional, needs PyTorch to run): bad arguments exit 2 with a
# message, checked without PyTorch or a device (with the system python3;
# the script is not run where there is none).
find_program(PF_SYS_PYTHON3 python3 HINTS /usr/bin)
if(PF_SYS_PYTHON3)
  add_test(NAME test_gpu_peers_args
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_peers_args.sh ${PF_SYS_PYTHON3}
                   ${PROJECT_SOURCE_DIR}/gpu/peers.py)
endif()
