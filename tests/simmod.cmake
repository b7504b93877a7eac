# The simulator's leaf modules (issue 9): the roofline cost model, the
# latency metrics, the prefix cache; and the Figure 2 split of core/memory.
pf_criterion_test(test_sim_cost SOURCES test_sim_cost.c LIBS pf_sim)
pf_criterion_test(test_sim_metrics SOURCES test_sim_metrics.c LIBS pf_sim)
pf_criterion_test(test_sim_prefix SOURCES test_sim_prefix.c LIBS pf_sim)
# core/memory's Figure 2 split (a new suite beside test_core_memory, which
# another change owns).
pf_criterion_test(test_core_memsplit SOURCES test_core_memsplit.c LIBS pf_core)
