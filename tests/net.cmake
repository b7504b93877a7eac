# net/: vLLM's wire (KV events, Prometheus text, ZeroMQ, HTTP) and `attach`.
pf_criterion_test(test_net_kvev SOURCES test_net_kvev.c LIBS pf_net_codec)
pf_criterion_test(test_net_prom SOURCES test_net_prom.c LIBS pf_net_codec)

# The seeded mutator over the msgpack decoder and the metrics parser: a fixed
# number of inputs, deterministic, meant to run under ASan/UBSan in CI.
add_executable(fuzz_net fuzz_net.c)
target_link_libraries(fuzz_net PRIVATE pf_net_codec pf_core)
add_test(NAME fuzz_net COMMAND fuzz_net --iters 100000 --seed 1)
set_tests_properties(fuzz_net PROPERTIES TIMEOUT 600)

# libFuzzer targets (optional): cmake -DCMAKE_C_COMPILER=clang -DPF_LIBFUZZER=ON,
# then e.g. build/tests/fuzz_kvev_libfuzzer -max_total_time=60.
option(PF_LIBFUZZER "Build libFuzzer targets for net/ (clang only)" OFF)
if(PF_LIBFUZZER AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  foreach(t kvev prom)
    string(TOUPPER ${t} T)
    add_executable(fuzz_${t}_libfuzzer fuzz_net.c)
    target_compile_definitions(fuzz_${t}_libfuzzer PRIVATE PF_FUZZ_TARGET_${T})
    target_compile_options(fuzz_${t}_libfuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${t}_libfuzzer PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${t}_libfuzzer PRIVATE pf_net_codec pf_core)
  endforeach()
endif()

# Real sockets on 127.0.0.1 (ports chosen by the kernel).
pf_criterion_test(test_net_zmq SOURCES test_net_zmq.c LIBS pf_net)
pf_criterion_test(test_net_http SOURCES test_net_http.c LIBS pf_net_http)
pf_criterion_test(test_net_attach SOURCES test_net_attach.c LIBS pf_net_codec)
