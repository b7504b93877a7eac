/* tests/test_net_attach_view.c - tui/attach_view: attach's screen read back
 * from the cell buffer: the header, the grid coloured by prefix, counters,
 * warnings, the too-small message, and every size drawn without a crash. */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/attach_view.h"

static void store(pf_attach *m, const uint64_t *h, int n, uint64_t parent)
{
    pf_kvev_hash hs[8];
    for (int i = 0; i < n; i++)
        hs[i] = pf_kvev_hash_uint(h[i]);
    pf_kvev_event e = {.type = PF_KVEV_STORED, .hashes = hs, .n_hashes = (uint32_t)n, .block_size = 16};
    if (parent)
        e.parent = pf_kvev_hash_uint(parent);
    pf_kvev_batch b = {.events = &e, .n_events = 1};
    pf_attach_apply(m, 0, &b);
}

static pf_attach *sample_model(void)
{
    pf_attach *m = pf_attach_new(0);
    const uint64_t a[] = {1, 2, 3}, b[] = {50, 51};
    store(m, a, 3, 0);
    store(m, b, 2, 0);
    const char *page = "vllm:kv_cache_usage_perc 0.625\nvllm:num_requests_running 9\n";
    pf_prom_page pg;
    pf_prom_parse(page, strlen(page), NULL, &pg);
    pf_attach_metrics(m, &pg, 1.0);
    pf_prom_page_free(&pg);
    pf_attach_counts_mut(m)->w_gaps = 2;
    pf_attach_note(m, 1.5, "gap of 3 batch(es)");
    pf_attach_sample(m, 1.0);
    return m;
}

Test(net_attach_view, draws_header_grid_counters_and_warnings)
{
    pf_attach *m = sample_model();
    pf_cells b = {0};
    cr_assert_eq(pf_cells_resize(&b, 120, 30), 0);
    int live[2] = {1, 0};
    pf_attach_view_info vi = {"tcp://h:5557", "http://h:8000/metrics", 2, live, 1, 12.0};
    pf_attach_view_render(&b, m, &vi);
    cr_expect(pf_cells_find(&b, "pagefault attach", NULL, NULL));
    cr_expect(pf_cells_find(&b, "1/2 ranks live", NULL, NULL));
    cr_expect(pf_cells_find(&b, "metrics ok", NULL, NULL));
    cr_expect(pf_cells_find(&b, "5 blocks in 2 prefixes", NULL, NULL));
    cr_expect(pf_cells_find(&b, "KV usage  62.5%", NULL, NULL));
    cr_expect(pf_cells_find(&b, "not vLLM's block id", NULL, NULL));
    cr_expect(pf_cells_find(&b, "warnings 2", NULL, NULL));
    cr_expect(pf_cells_find(&b, "gap of 3 batch(es)", NULL, NULL));
    /* the grid's first row: slots 0-2 one prefix, 3-4 another, then blank */
    const pf_cell *c0 = pf_cells_at(&b, 0, 2), *c2 = pf_cells_at(&b, 2, 2), *c3 = pf_cells_at(&b, 3, 2);
    cr_expect_eq(c0->ch, 0x2588u);
    cr_expect_eq(c0->color, c2->color);
    cr_expect_geq(c0->color, PF_COL_OWNER0);
    cr_expect_eq(c3->ch, 0x2588u);
    cr_expect_eq(pf_cells_at(&b, 5, 2)->ch, (uint32_t)' ');
    pf_cells_free(&b);
    pf_attach_free(m);
}

Test(net_attach_view, small_terminals_get_a_message_and_no_size_crashes)
{
    pf_attach *m = sample_model();
    pf_cells b = {0};
    int live[1] = {1};
    pf_attach_view_info vi = {"tcp://h:5557", NULL, 1, live, 0, 0};
    cr_assert_eq(pf_cells_resize(&b, 40, 10), 0);
    pf_attach_view_render(&b, m, &vi);
    cr_expect(pf_cells_find(&b, "terminal too small", NULL, NULL));
    for (int w = 1; w <= 140; w += 7)
        for (int h = 1; h <= 50; h += 3) {
            cr_assert_eq(pf_cells_resize(&b, w, h), 0);
            pf_attach_view_render(&b, m, &vi);
        }
    pf_cells_free(&b);
    pf_attach_free(m);
}

/* At the smallest heights the counters give way to the charts below them:
 * the history title's row holds the title alone (the "hit rate" row used
 * to run on into it at 72 x 20: "...newest right)ate  -  now -"). */
Test(net_attach_view, counters_stop_above_the_charts_at_the_smallest_height)
{
    pf_attach *m = sample_model();
    pf_cells b = {0};
    int live[1] = {1};
    pf_attach_view_info vi = {"tcp://h:5557", "http://h:8000/metrics", 1, live, 1, 0};
    for (int h = PF_ATTACH_VIEW_MIN_H; h <= PF_ATTACH_VIEW_MIN_H + 6; h++) {
        cr_assert_eq(pf_cells_resize(&b, PF_ATTACH_VIEW_MIN_W, h), 0);
        pf_attach_view_render(&b, m, &vi);
        int x, y;
        cr_assert(pf_cells_find(&b, "history (one column per tick, newest right)", &x, &y), "height %d", h);
        char row[PF_ATTACH_VIEW_MIN_W + 1];
        for (int i = 0; i < PF_ATTACH_VIEW_MIN_W; i++) {
            uint32_t ch = pf_cells_at(&b, i, y)->ch;
            row[i] = ch < 128 ? (char)ch : '?';
        }
        row[PF_ATTACH_VIEW_MIN_W] = 0;
        const char *end = strstr(row, "newest right)") + strlen("newest right)");
        for (const char *p = end; *p; p++)
            cr_assert_eq(*p, ' ', "height %d: the history row reads \"%s\"", h, row);
    }
    pf_cells_free(&b);
    pf_attach_free(m);
}
