/* tests/fuzz_net.c - fuzzing net/kvev's msgpack decoder and net/prom's parser.
 *
 * Two ways in:
 *  - a plain program (the ctest `fuzz_net`): a seeded random mutator (bit
 *    flips, msgpack-significant bytes, inserted/deleted/duplicated runs,
 *    truncation, splices of two seeds) over valid seed payloads, a fixed
 *    number of inputs per decoder, deterministic for a seed. CI runs it under
 *    ASan/UBSan, which turn any out-of-bounds read or leak into a failure.
 *  - libFuzzer entry points (built when PF_FUZZ_TARGET is set to kvev or
 *    prom, with clang -fsanitize=fuzzer), for longer runs by hand.
 * Besides "no crash", each input checks properties: a decoded batch encodes
 * and decodes again to the same number of events, and applied to the
 * attach model keeps its live count equal to its live slots, within its
 * bound; parser counters stay within the line count.
 *
 *   fuzz_net [--iters N] [--seed S]      (defaults: 100000 inputs each, seed 1)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "net/attach_model.h"
#include "net/kvev.h"
#include "net/prom.h"

static long accepted; /* inputs the decoder took: the mutator must reach both sides */

#if !defined(PF_FUZZ_TARGET_PROM)
/* A decoded batch fed to `attach`'s model on two ranks, with a restart in
 * between, under a small block bound: the live count must match the live
 * slots and stay within the bound. */
static int fuzz_attach(const pf_kvev_batch *b)
{
    enum { BOUND = 16 };
    pf_attach *m = pf_attach_new(BOUND);
    if (!m)
        return 0;
    pf_attach_apply(m, 0, b);
    pf_attach_apply(m, 1, b);
    pf_attach_restart(m, 0);
    pf_attach_apply(m, 0, b);
    const pf_attach_counts *c = pf_attach_counts_get(m);
    uint64_t live = 0;
    for (uint32_t s = 0; s < pf_attach_slot_count(m); s++)
        live += pf_attach_slot(m, s) != NULL;
    int bad = live != c->blocks_live || c->blocks_live > BOUND || pf_attach_slot_count(m) > BOUND;
    pf_attach_free(m);
    return bad;
}

static int fuzz_kvev(const uint8_t *data, size_t len)
{
    pf_kvev_batch b, b2;
    pf_kvev_limits lim = pf_kvev_limits_default();
    lim.max_bytes = 1 << 20;
    int bad = 0;
    if (pf_kvev_decode(data, len, &lim, &b, NULL) == 0) {
        accepted++;
        bad |= fuzz_attach(&b);
        char *p;
        size_t n;
        for (int arr = 0; arr < 2; arr++) {
            if (pf_kvev_encode(&b, arr, &p, &n) != 0)
                continue;
            if (pf_kvev_decode(p, n, NULL, &b2, NULL) != 0 || b2.n_events != b.n_events)
                bad = 1;
            pf_kvev_batch_free(&b2);
            free(p);
        }
    }
    pf_kvev_batch_free(&b);
    return bad;
}
#endif

#if !defined(PF_FUZZ_TARGET_KVEV)
static int fuzz_prom(const uint8_t *data, size_t len)
{
    pf_prom_page pg;
    pf_prom_limits lim = pf_prom_limits_default();
    lim.max_line = 256;
    int bad = 0;
    if (pf_prom_parse((const char *)data, len, &lim, &pg) == 0) {
        if (pg.n_samples && !pg.n_bad)
            accepted++;
        if (pg.n_bad + pg.n_long > pg.n_lines || pg.n_samples > lim.max_samples)
            bad = 1;
        for (uint32_t i = 0; i < pg.n_samples && i < 4; i++) {
            pf_prom_hist h;
            double v;
            pf_prom_sum(&pg, pg.samples[i].name, &v);
            char base[PF_PROM_NAME_MAX];
            strcpy(base, pg.samples[i].name);
            char *u = strstr(base, "_bucket");
            if (u)
                *u = '\0';
            if (pf_prom_histogram(&pg, base, &h) > 0) {
                pf_prom_quantile(&h, 0.5);
                pf_prom_quantile(&h, 0.99);
            }
        }
    }
    pf_prom_page_free(&pg);
    return bad;
}
#endif

#if defined(PF_FUZZ_TARGET_KVEV) || defined(PF_FUZZ_TARGET_PROM)
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
#ifdef PF_FUZZ_TARGET_KVEV
    if (fuzz_kvev(data, len))
        abort();
#else
    if (fuzz_prom(data, len))
        abort();
#endif
    return 0;
}
#else

/* ---- seeds ---------------------------------------------------------------- */

typedef struct {
    uint8_t *p;
    size_t n;
} blob;

static blob kvev_seed(int array_like, int bytes_hashes)
{
    pf_kvev_hash hs[6];
    uint32_t tok[12];
    pf_kvev_event ev[4];
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < 6; i++) {
        uint8_t raw[32];
        memset(raw, 0x30 + i, sizeof raw);
        hs[i] = bytes_hashes ? pf_kvev_hash_bytes(raw, 32) : pf_kvev_hash_uint(1000003u * (uint64_t)(i + 1));
    }
    for (int i = 0; i < 12; i++)
        tok[i] = (uint32_t)(i * 31);
    ev[0].type = PF_KVEV_STORED;
    ev[0].hashes = hs;
    ev[0].n_hashes = 3;
    ev[0].token_ids = tok;
    ev[0].n_tokens = 12;
    ev[0].block_size = 4;
    strcpy(ev[0].medium, "GPU");
    ev[1].type = PF_KVEV_STORED;
    ev[1].hashes = hs + 3;
    ev[1].n_hashes = 2;
    ev[1].parent = hs[2];
    ev[1].block_size = 4;
    ev[1].has_lora = 1;
    ev[1].lora_id = 3;
    ev[2].type = PF_KVEV_REMOVED;
    ev[2].hashes = hs + 5;
    ev[2].n_hashes = 1;
    ev[2].has_group = 1;
    ev[3].type = PF_KVEV_CLEARED;
    pf_kvev_batch b = {.ts = 1.5, .events = ev, .n_events = 4, .has_dp_rank = 1, .dp_rank = 1};
    blob out = {0};
    char *p;
    if (pf_kvev_encode(&b, array_like, &p, &out.n) == 0)
        out.p = (uint8_t *)p;
    return out;
}

static blob text_seed(const char *s)
{
    blob b = {(uint8_t *)strdup(s), strlen(s)};
    return b;
}

/* ---- mutator --------------------------------------------------------------- */

static const uint8_t interesting[] = {0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc4,
                                      0xc6, 0xca, 0xcb, 0xcf, 0xd3, 0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf,
                                      0xff, '\n', '{', '}', '"', '\\', '=', ',', ' ', '#', 'e', '+'};

static size_t mutate(pf_rng *r, uint8_t *buf, size_t n, size_t cap, const blob *other)
{
    int rounds = (int)pf_rng_range(r, 1, 8);
    for (int k = 0; k < rounds; k++) {
        int op = (int)pf_rng_range(r, 0, 6);
        size_t at = n ? (size_t)pf_rng_range(r, 0, (int64_t)n - 1) : 0;
        switch (op) {
        case 0: /* flip a bit */
            if (n)
                buf[at] ^= (uint8_t)(1u << pf_rng_range(r, 0, 7));
            break;
        case 1: /* a significant byte */
            if (n)
                buf[at] = interesting[pf_rng_range(r, 0, (int64_t)sizeof interesting - 1)];
            break;
        case 2: { /* delete a run */
            size_t len = (size_t)pf_rng_range(r, 1, 16);
            if (at + len > n)
                len = n - at;
            memmove(buf + at, buf + at + len, n - at - len);
            n -= len;
            break;
        }
        case 3: { /* duplicate a run */
            size_t len = (size_t)pf_rng_range(r, 1, 32);
            if (at + len > n)
                len = n - at;
            if (n + len > cap)
                break;
            memmove(buf + at + len, buf + at, n - at);
            n += len;
            break;
        }
        case 4: /* truncate */
            n = at;
            break;
        case 5: { /* splice in part of another seed */
            if (!other->n)
                break;
            size_t from = (size_t)pf_rng_range(r, 0, (int64_t)other->n - 1);
            size_t len = other->n - from;
            if (len > 64)
                len = 64;
            if (at + len > cap)
                break;
            memcpy(buf + at, other->p + from, len);
            if (at + len > n)
                n = at + len;
            break;
        }
        default: /* a random byte */
            if (n)
                buf[at] = (uint8_t)pf_rng_next(r);
        }
    }
    return n;
}

static int run(const char *what, int (*fn)(const uint8_t *, size_t), const blob *seeds, int ns,
               long iters, uint64_t seed)
{
    pf_rng r;
    pf_rng_seed(&r, seed);
    size_t cap = 0;
    for (int i = 0; i < ns; i++)
        cap = seeds[i].n > cap ? seeds[i].n : cap;
    cap = cap * 2 + 256;
    int failures = 0;
    accepted = 0;
    for (int i = 0; i < ns; i++)
        failures += fn(seeds[i].p, seeds[i].n);
    for (long it = 0; it < iters; it++) {
        /* each input in its own exact-size allocation, so ASan sees a read
         * one byte past the end */
        uint8_t *work = malloc(cap);
        if (!work)
            return 1;
        const blob *s = &seeds[pf_rng_range(&r, 0, ns - 1)];
        memcpy(work, s->p, s->n);
        size_t n = mutate(&r, work, s->n, cap, &seeds[pf_rng_range(&r, 0, ns - 1)]);
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) {
            free(work);
            return 1;
        }
        memcpy(exact, work, n);
        if (fn(exact, n)) {
            fprintf(stderr, "fuzz_net: %s: property failed on input %ld (seed %llu)\n", what, it,
                    (unsigned long long)seed);
            failures++;
        }
        free(exact);
        free(work);
    }
    printf("fuzz_net: %s: %ld mutated inputs, %ld accepted whole, %d failures\n", what, iters, accepted,
           failures);
    return failures;
}

int main(int argc, char **argv)
{
    long iters = 100000;
    unsigned long long seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        char *e;
        if (!strcmp(argv[i], "--iters"))
            iters = strtol(argv[i + 1], &e, 10);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], &e, 10);
        else {
            fprintf(stderr, "fuzz_net: unknown flag '%s' (--iters N, --seed S)\n", argv[i]);
            return 2;
        }
        if (*e || iters < 0) {
            fprintf(stderr, "fuzz_net: %s: expected a non-negative integer, got '%s'\n", argv[i], argv[i + 1]);
            return 2;
        }
    }
    blob kv[4] = {kvev_seed(0, 1), kvev_seed(1, 0), kvev_seed(0, 0), kvev_seed(1, 1)};
    blob pr[2] = {
        text_seed("# HELP vllm:num_requests_running Running.\n"
                  "# TYPE vllm:num_requests_running gauge\n"
                  "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
                  "# TYPE vllm:e2e_request_latency_seconds histogram\n"
                  "vllm:e2e_request_latency_seconds_bucket{le=\"0.3\",model_name=\"m\"} 1.0\n"
                  "vllm:e2e_request_latency_seconds_bucket{le=\"0.5\",model_name=\"m\"} 4.0\n"
                  "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 9.0\n"
                  "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 7.25\n"
                  "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 9.0\n"),
        text_seed("a{b=\"c\\\"d\\\\\\n\"} -Inf 123\nx 1e-3\r\n# TYPE x counter\n"),
    };
    int rc = 0;
    for (int i = 0; i < 4; i++)
        rc |= !kv[i].p;
    if (!rc) {
        rc |= run("kvev", fuzz_kvev, kv, 4, iters, seed) != 0;
        rc |= run("prom", fuzz_prom, pr, 2, iters, seed) != 0;
    }
    for (int i = 0; i < 4; i++)
        free(kv[i].p);
    for (int i = 0; i < 2; i++)
        free(pr[i].p);
    return rc;
}
#endif
