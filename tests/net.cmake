# net/: vLLM's wire (KV events, Prometheus text, ZeroMQ, HTTP) and `attach`.
pf_criterion_test(test_net_kvev SOURCES test_net_kvev.c LIBS pf_net_codec)
pf_criterion_test(test_net_prom SOURCES test_net_prom.c LIBS pf_net_codec)
