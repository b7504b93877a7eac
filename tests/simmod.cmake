# The simulator's leaf modules (issue 9): the roofline cost model, the
# latency metrics, the prefix cache; and the Figure 2 split of core/memory.
pf_criterion_test(test_sim_cost SOURCES test_sim_cost.c LIBS pf_sim)
pf_criterion_test(test_sim_metrics SOURCES test_sim_metrics.c LIBS pf_sim)
pf_criterion_test(test_sim_prefix SOURCES test_sim_prefix.c LIBS pf_sim)
