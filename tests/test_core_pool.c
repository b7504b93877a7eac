/* tests/test_core_pool.c - the frame pool (core/pool.h): exhaustion, double
 * free, not-owner, range, all-or-nothing, watermark boundaries, peak,
 * sharing and unref, free_n, per-thread caches (parked frames count as free
 * and admit exactly up to the reserve), randomized model-based tests (10^6
 * calls without caches, frame for frame; 4x10^5 over three caches), and the
 * threaded checks of tests/test_core_pool_race.c: stress with 8 and 256
 * threads, a multi-threaded model checked at quiescent points, the exact
 * peak and admission under threads. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/pool.h"
#include "core/rng.h"

int pf_test_pool_stress(int nthreads, int nframes, int iters, char *msg, size_t msglen);
int pf_test_pool_mt_model(int nthreads, int nframes, int rounds, int ops, char *msg,
                          size_t msglen);
int pf_test_pool_peak(int nthreads, int iters, char *msg, size_t msglen);
int pf_test_pool_twin_lists(int rounds, int nframes, char *msg, size_t msglen);
int pf_test_pool_dup_lists(double seconds, char *msg, size_t msglen);
int pf_test_pool_admit(int nthreads, int nframes, int rounds, double watermark, char *msg,
                       size_t msglen);

Test(pool, create_rejects_bad_sizes)
{
    cr_assert_null(pf_pool_create(0));
    cr_assert_null(pf_pool_create(-5));
    cr_assert_null(pf_pool_create((1 << 24) + 1));
    pf_pool *p = pf_pool_create(1);
    cr_assert_not_null(p);
    cr_assert_eq(pf_pool_capacity(p), 1);
    pf_pool_destroy(p);
}

Test(pool, initial_order_is_ascending)
{
    pf_pool *p = pf_pool_create(8);
    for (int i = 0; i < 8; i++) {
        int f = -1;
        cr_assert_eq(pf_pool_alloc(p, 3, &f), PF_OK);
        cr_assert_eq(f, i);
        cr_assert_eq(pf_pool_owner(p, f), 3);
        cr_assert_eq(pf_pool_refcount(p, f), 1);
    }
    pf_pool_destroy(p);
}

Test(pool, exhaustion_then_recovery)
{
    pf_pool *p = pf_pool_create(4);
    int f;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pf_pool_alloc(p, 1, &f), PF_OK);
    cr_assert_eq(pf_pool_free_count(p), 0);
    f = 1234;
    cr_assert_eq(pf_pool_alloc(p, 1, &f), PF_ERR_NOMEM);
    cr_assert_eq(f, 1234, "a failed alloc must not write the output");
    cr_assert_eq(pf_pool_free(p, 1, 2), PF_OK);
    cr_assert_eq(pf_pool_alloc(p, 1, &f), PF_OK);
    cr_assert_eq(f, 2, "LIFO: the frame just freed comes back first");
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

Test(pool, double_free_and_not_owner_and_range)
{
    pf_pool *p = pf_pool_create(4);
    int f;
    cr_assert_eq(pf_pool_alloc(p, 7, &f), PF_OK);
    cr_assert_eq(pf_pool_free(p, 8, f), PF_ERR_NOT_OWNER);
    cr_assert_eq(pf_pool_owner(p, f), 7, "a refused free changes nothing");
    cr_assert_eq(pf_pool_free(p, 7, f), PF_OK);
    cr_assert_eq(pf_pool_free(p, 7, f), PF_ERR_DOUBLE_FREE);
    cr_assert_eq(pf_pool_free(p, 7, 3), PF_ERR_DOUBLE_FREE, "never-allocated frame");
    cr_assert_eq(pf_pool_free(p, 7, -1), PF_ERR_RANGE);
    cr_assert_eq(pf_pool_free(p, 7, 4), PF_ERR_RANGE);
    cr_assert_eq(pf_pool_share(p, 4), PF_ERR_RANGE);
    cr_assert_eq(pf_pool_alloc(p, -1, &f), PF_ERR_ARG);
    cr_assert_eq(pf_pool_free_count(p), 4);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    cr_assert_str_neq(pf_strerror(PF_ERR_DOUBLE_FREE), pf_strerror(PF_ERR_NOT_OWNER));
    cr_assert(strstr(pf_strerror(PF_ERR_DOUBLE_FREE), "double free") != NULL);
    pf_pool_destroy(p);
}

Test(pool, alloc_n_all_or_nothing)
{
    pf_pool *p = pf_pool_create(10);
    int frames[16];
    cr_assert_eq(pf_pool_alloc_n(p, 1, 6, frames), PF_OK);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(frames[i], i);
    for (int i = 0; i < 16; i++)
        frames[i] = -7;
    cr_assert_eq(pf_pool_alloc_n(p, 2, 5, frames), PF_ERR_NOMEM);
    cr_assert_eq(pf_pool_free_count(p), 4, "nothing taken on failure");
    for (int i = 0; i < 16; i++)
        cr_assert_eq(frames[i], -7);
    for (int f = 6; f < 10; f++)
        cr_assert_eq(pf_pool_owner(p, f), PF_POOL_NO_OWNER);
    cr_assert_eq(pf_pool_alloc_n(p, 2, 4, frames), PF_OK);
    cr_assert_eq(pf_pool_free_count(p), 0);
    cr_assert_eq(pf_pool_alloc_n(p, 2, 0, NULL), PF_OK, "n = 0 takes nothing");
    cr_assert_eq(pf_pool_alloc_n(p, 2, -1, frames), PF_ERR_ARG);
    cr_assert_eq(pf_pool_alloc_n(p, 2, 11, frames), PF_ERR_NOMEM);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

Test(pool, watermark_boundaries)
{
    /* N = 100, watermark 0.10 -> reserve exactly 10 frames. */
    pf_pool *p = pf_pool_create(100);
    int frames[100];
    cr_assert_eq(pf_pool_reserve_frames(p, 0.10), 10);
    cr_assert_eq(pf_pool_reserve_frames(p, 0.07), 7, "0.07 * 100 is 7, not 8");
    cr_assert_eq(pf_pool_reserve_frames(p, 0.071), 8, "ceil");
    cr_assert_eq(pf_pool_reserve_frames(p, 0.0), 0);
    cr_assert_eq(pf_pool_reserve_frames(p, 1.0), 100);
    cr_assert_eq(pf_pool_reserve_frames(p, -0.01), PF_ERR_ARG);
    cr_assert_eq(pf_pool_reserve_frames(p, 1.01), PF_ERR_ARG);

    /* Exactly at the reserve: 90 taken leaves exactly 10 free: admitted. */
    cr_assert(pf_pool_can_admit(p, 90, 0.10));
    cr_assert_not(pf_pool_can_admit(p, 91, 0.10));
    cr_assert_eq(pf_pool_alloc_admit(p, 1, 91, 0.10, frames), PF_ERR_WATERMARK);
    cr_assert_eq(pf_pool_free_count(p), 100);
    cr_assert_eq(pf_pool_alloc_admit(p, 1, 90, 0.10, frames), PF_OK);
    cr_assert_eq(pf_pool_free_count(p), 10);
    /* Now at the reserve: even one more frame is refused with the watermark code,
     * but plain alloc (a running sequence growing) may use the reserve. */
    cr_assert_eq(pf_pool_alloc_admit(p, 2, 1, 0.10, frames), PF_ERR_WATERMARK);
    cr_assert_eq(pf_pool_alloc_admit(p, 2, 0, 0.10, frames), PF_OK);
    cr_assert_eq(pf_pool_alloc_admit(p, 2, 11, 0.10, frames), PF_ERR_NOMEM,
                 "more than free at all is NOMEM, not WATERMARK");
    cr_assert_eq(pf_pool_alloc_admit(p, 2, 10, 0.0, frames), PF_OK, "watermark 0: every frame");
    cr_assert_eq(pf_pool_free_count(p), 0);
    cr_assert_eq(pf_pool_alloc_admit(p, 2, 1, 0.5, frames), PF_ERR_NOMEM);
    cr_assert_eq(pf_pool_alloc_admit(p, 2, 1, 2.0, frames), PF_ERR_ARG);
    int freed = -1;
    cr_assert_eq(pf_pool_free_owner(p, 2, &freed), PF_OK);
    cr_assert_eq(freed, 10);
    /* watermark 1.0: nothing can ever be admitted except n = 0. */
    pf_pool_reset(p);
    cr_assert_eq(pf_pool_alloc_admit(p, 1, 1, 1.0, frames), PF_ERR_WATERMARK);
    cr_assert_eq(pf_pool_alloc_admit(p, 1, 0, 1.0, frames), PF_OK);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

Test(pool, peak_and_reset)
{
    pf_pool *p = pf_pool_create(16);
    int frames[16];
    cr_assert_eq(pf_pool_peak(p), 0);
    cr_assert_eq(pf_pool_alloc_n(p, 1, 5, frames), PF_OK);
    cr_assert_eq(pf_pool_alloc_n(p, 2, 7, frames + 5), PF_OK);
    cr_assert_eq(pf_pool_peak(p), 12);
    int freed;
    cr_assert_eq(pf_pool_free_owner(p, 2, &freed), PF_OK);
    cr_assert_eq(freed, 7);
    cr_assert_eq(pf_pool_used_count(p), 5);
    cr_assert_eq(pf_pool_peak(p), 12, "peak stays after frees");
    pf_pool_reset_peak(p);
    cr_assert_eq(pf_pool_peak(p), 5, "reset_peak drops to current use");
    cr_assert_eq(pf_pool_alloc_total(p), 12u);
    pf_pool_reset(p);
    cr_assert_eq(pf_pool_peak(p), 0);
    cr_assert_eq(pf_pool_used_count(p), 0);
    cr_assert_eq(pf_pool_alloc_total(p), 0u);
    int f;
    cr_assert_eq(pf_pool_alloc(p, 1, &f), PF_OK);
    cr_assert_eq(f, 0, "reset restores the initial order");
    pf_pool_destroy(p);
}

Test(pool, sharing_counts_references)
{
    pf_pool *p = pf_pool_create(4);
    int f;
    cr_assert_eq(pf_pool_alloc(p, 1, &f), PF_OK);
    cr_assert_eq(pf_pool_share(p, f), PF_OK);
    cr_assert_eq(pf_pool_share(p, f), PF_OK);
    cr_assert_eq(pf_pool_refcount(p, f), 3);
    cr_assert_eq(pf_pool_share(p, 3), PF_ERR_ARG, "cannot share a free frame");
    cr_assert_eq(pf_pool_free(p, 1, f), PF_OK);
    cr_assert_eq(pf_pool_refcount(p, f), 2);
    cr_assert_eq(pf_pool_free_count(p), 3, "still in use while referenced");
    int freed = -1;
    cr_assert_eq(pf_pool_free_owner(p, 1, &freed), PF_OK);
    cr_assert_eq(freed, 0, "one reference dropped, frame not returned yet");
    cr_assert_eq(pf_pool_free(p, 1, f), PF_OK);
    cr_assert_eq(pf_pool_refcount(p, f), 0);
    cr_assert_eq(pf_pool_owner(p, f), PF_POOL_NO_OWNER);
    cr_assert_eq(pf_pool_free_count(p), 4);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

/* Frames parked in caches are free: they count in free_count, admission
 * counts them to the frame, and a taker steals them when the depot is out. */
Test(pool, parked_frames_admit_exactly_up_to_the_reserve)
{
    pf_pool *p = pf_pool_create(100);
    pf_pool_cache *a = pf_pool_cache_new(p), *b = pf_pool_cache_new(p), *c = pf_pool_cache_new(p);
    cr_assert(a && b && c);
    int fa[40], fb[30], frames[100];
    cr_assert_eq(pf_pool_alloc_n_c(a, 1, 40, fa), PF_OK);
    cr_assert_eq(pf_pool_alloc_n_c(b, 2, 30, fb), PF_OK);
    cr_assert_eq(pf_pool_free_n_c(a, 1, fa, 40), PF_OK);
    cr_assert_eq(pf_pool_free_n_c(b, 2, fb, 30), PF_OK);
    int parked = pf_pool_cache_count(a) + pf_pool_cache_count(b);
    cr_assert_geq(parked, 60, "frames freed through a cache stay parked there (%d)", parked);
    cr_assert_eq(pf_pool_free_count(p), 100, "parked frames count as free");
    cr_assert_eq(pf_pool_used_count(p), 0);
    cr_assert(pf_pool_can_admit(p, 90, 0.10));
    cr_assert_not(pf_pool_can_admit(p, 91, 0.10));
    /* reserve 10: 91 is refused with the watermark code, 90 is admitted */
    cr_assert_eq(pf_pool_alloc_admit(p, 3, 91, 0.10, frames), PF_ERR_WATERMARK);
    cr_assert_eq(pf_pool_alloc_admit_c(c, 3, 91, 0.10, frames), PF_ERR_WATERMARK);
    cr_assert_eq(pf_pool_alloc_admit_c(c, 3, 101, 0.10, frames), PF_ERR_NOMEM);
    cr_assert_eq(pf_pool_free_count(p), 100, "a refusal takes nothing");
    cr_assert_eq(pf_pool_alloc_admit_c(c, 3, 90, 0.10, frames), PF_OK);
    cr_assert_eq(pf_pool_free_count(p), 10);
    cr_assert_eq(pf_pool_alloc_admit_c(c, 3, 1, 0.10, frames + 90), PF_ERR_WATERMARK);
    /* a running sequence may grow into the reserve: plain allocs steal the
     * last parked frames wherever they are */
    cr_assert_eq(pf_pool_alloc_n_c(c, 3, 10, frames + 90), PF_OK);
    cr_assert_eq(pf_pool_free_count(p), 0);
    cr_assert_eq(pf_pool_cache_count(a) + pf_pool_cache_count(b), 0);
    cr_assert_eq(pf_pool_alloc(p, 3, frames), PF_ERR_NOMEM);
    unsigned char seen[100] = {0};
    for (int i = 0; i < 100; i++) {
        cr_assert(frames[i] >= 0 && frames[i] < 100 && !seen[frames[i]], "frame %d twice", frames[i]);
        seen[frames[i]] = 1;
    }
    cr_assert_eq(pf_pool_peak(p), 100);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    cr_assert_eq(pf_pool_free_n(p, 3, frames, 100), PF_OK);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_cache_free(a);
    pf_pool_cache_free(b);
    pf_pool_cache_free(c);
    cr_assert_eq(pf_pool_free_count(p), 100);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

Test(pool, free_n_is_all_or_nothing)
{
    pf_pool *p = pf_pool_create(8);
    int a[3], other, f;
    cr_assert_eq(pf_pool_alloc_n(p, 1, 3, a), PF_OK);
    cr_assert_eq(pf_pool_alloc(p, 2, &other), PF_OK);
    int bad_owner[] = {a[0], a[1], other};
    cr_assert_eq(pf_pool_free_n(p, 1, bad_owner, 3), PF_ERR_NOT_OWNER);
    int twice[] = {a[0], a[0]};
    cr_assert_eq(pf_pool_free_n(p, 1, twice, 2), PF_ERR_DOUBLE_FREE, "one reference, listed twice");
    int bad_id[] = {a[2], 8};
    cr_assert_eq(pf_pool_free_n(p, 1, bad_id, 2), PF_ERR_RANGE);
    cr_assert_eq(pf_pool_free_n(p, 1, NULL, 1), PF_ERR_ARG);
    cr_assert_eq(pf_pool_free_n(p, -1, a, 1), PF_ERR_ARG);
    cr_assert_eq(pf_pool_free_n(p, 1, NULL, 0), PF_OK, "an empty list frees nothing");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pf_pool_owner(p, a[i]), 1, "a refused list changed frame %d", a[i]);
        cr_assert_eq(pf_pool_refcount(p, a[i]), 1);
    }
    cr_assert_eq(pf_pool_free_count(p), 4);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    /* two references listed twice: both dropped, the frame is free */
    cr_assert_eq(pf_pool_share(p, a[0]), PF_OK);
    cr_assert_eq(pf_pool_free_n(p, 1, twice, 2), PF_OK);
    cr_assert_eq(pf_pool_refcount(p, a[0]), 0);
    int rest[] = {a[1], a[2]};
    cr_assert_eq(pf_pool_free_n(p, 1, rest, 2), PF_OK);
    cr_assert_eq(pf_pool_free_count(p), 7);
    cr_assert_eq(pf_pool_alloc(p, 1, &f), PF_OK);
    cr_assert_eq(f, a[2], "LIFO as sequential frees: the last freed comes back first");
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

/* Issue 9: any holder drops its own reference; the owner field keeps naming
 * the first allocator; pf_pool_free keeps its owner check. */
Test(pool, any_holder_unrefs)
{
    pf_pool *p = pf_pool_create(4);
    pf_pool_cache *c = pf_pool_cache_new(p);
    int f;
    cr_assert_eq(pf_pool_alloc_c(c, 1, &f), PF_OK);
    cr_assert_eq(pf_pool_share(p, f), PF_OK); /* sequence 2 shares the prefix */
    cr_assert_eq(pf_pool_free(p, 2, f), PF_ERR_NOT_OWNER, "free keeps its owner check");
    cr_assert_eq(pf_pool_free(p, 1, f), PF_OK, "the first owner drops its reference");
    cr_assert_eq(pf_pool_refcount(p, f), 1);
    cr_assert_eq(pf_pool_owner(p, f), 1, "owner still names the first allocator");
    cr_assert_eq(pf_pool_free_count(p), 3);
    cr_assert_eq(pf_pool_unref_c(c, f), PF_OK, "the sharer drops its own reference");
    cr_assert_eq(pf_pool_refcount(p, f), 0);
    cr_assert_eq(pf_pool_owner(p, f), PF_POOL_NO_OWNER);
    cr_assert_eq(pf_pool_unref(p, f), PF_ERR_DOUBLE_FREE);
    cr_assert_eq(pf_pool_unref(p, 4), PF_ERR_RANGE);
    cr_assert_eq(pf_pool_unref(NULL, 0), PF_ERR_ARG);
    cr_assert_eq(pf_pool_free_count(p), 4);
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_cache_free(c);
    pf_pool_destroy(p);
}

Test(pool, caches_come_and_go)
{
    pf_pool *p = pf_pool_create(256);
    static pf_pool_cache *cs[PF_POOL_CACHE_MAX];
    for (int i = 0; i < PF_POOL_CACHE_MAX; i++)
        cr_assert_not_null(cs[i] = pf_pool_cache_new(p));
    cr_assert_null(pf_pool_cache_new(p), "at most PF_POOL_CACHE_MAX caches");
    int f;
    cr_assert_eq(pf_pool_alloc_c(cs[7], 1, &f), PF_OK);
    cr_assert_eq(pf_pool_free_c(cs[7], 1, f), PF_OK);
    int parked = pf_pool_cache_count(cs[7]);
    cr_assert_gt(parked, 0, "a refill parks frames in the cache");
    pf_pool_cache_free(cs[7]);
    pf_pool_cache_free(cs[7]); /* twice: no-op */
    cr_assert_eq(pf_pool_free_count(p), 256, "detaching a cache keeps its frames free");
    cr_assert_eq(pf_pool_check(p), PF_OK);
    cr_assert_not_null(cs[7] = pf_pool_cache_new(p), "a detached slot is reused");
    cr_assert_eq(pf_pool_cache_count(cs[7]), 0);
    cr_assert_eq(pf_pool_alloc_c(NULL, 1, &f), PF_ERR_ARG);
    cr_assert_eq(pf_pool_alloc_c(cs[7], -1, &f), PF_ERR_ARG);
    cr_assert_eq(pf_pool_alloc_total(p), 1u);
    pf_pool_cache_free(NULL);
    for (int i = 0; i < PF_POOL_CACHE_MAX; i += 2)
        pf_pool_cache_free(cs[i]);
    pf_pool_destroy(p); /* frees the caches still attached */
}

/* The fast path is the point of the caches: once warm, a cache whose churn
 * stays within what the pool has already held at once (here: four caches
 * each taking a list of 8 and single frames, in any interleaving) never
 * locks the other caches. A take beyond that is a new peak, which must
 * stop the world to stay exact (pool.c says why). */
Test(pool, steady_churn_never_stops_the_world)
{
    pf_pool *p = pf_pool_create(4096);
    pf_pool_cache *c[4];
    int f, fr[4][8];
    for (int i = 0; i < 4; i++)
        cr_assert_not_null(c[i] = pf_pool_cache_new(p));
    for (int round = 0; round < 2; round++) {
        uint64_t before = pf_pool_stop_count(p);
        for (int it = 0; it < 2000; it++) {
            for (int k = 0; k < 4; k++)
                cr_assert_eq(pf_pool_alloc_n_c(c[k], k, 8, fr[k]), PF_OK);
            for (int k = 0; k < 4; k++)
                cr_assert_eq(pf_pool_free_n_c(c[k], k, fr[k], 8), PF_OK);
            for (int k = 3; k >= 0; k--) {
                cr_assert_eq(pf_pool_alloc_c(c[k], 9, &f), PF_OK);
                cr_assert_eq(pf_pool_free_c(c[k], 9, f), PF_OK);
            }
        }
        if (round == 1) /* round 0 warmed the caches and found the peak */
            cr_assert_eq(pf_pool_stop_count(p), before, "%llu stops in steady churn",
                         (unsigned long long)(pf_pool_stop_count(p) - before));
    }
    cr_assert_eq(pf_pool_peak(p), 32, "four lists of 8 held at once");
    cr_assert_eq(pf_pool_check(p), PF_OK);
    pf_pool_destroy(p);
}

/* Threads allocate and free in loops (three in four through their own
 * cache); every frame handed out is claimed in a side array with an atomic
 * exchange, so two holders of one frame are caught; at the end every frame
 * is back and the counts are exact. The worker code is shared with the TSan
 * race test (tests/test_core_pool_race.c). */
Test(pool, eight_thread_stress)
{
    char msg[256] = "";
    int rc = pf_test_pool_stress(8, 128, 20000, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

Test(pool, stress_256_threads, .timeout = 60)
{
    char msg[256] = "";
    int rc = pf_test_pool_stress(256, 4096, 300, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

/* Each thread models its references (own allocations, references shared
 * with it); at every round's barrier the pool must match their union. */
Test(pool, threads_against_the_model, .timeout = 60)
{
    char msg[256] = "";
    int rc = pf_test_pool_mt_model(8, 512, 40, 400, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

/* All threads hold their maximum at once: the peak is exactly the sum. */
Test(pool, peak_is_exact_under_threads, .timeout = 60)
{
    char msg[256] = "";
    int rc = pf_test_pool_peak(12, 2000, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

/* Concurrent admitters never dip into the reserve, and are refused only on
 * the exact count, frames parked in caches included. */
Test(pool, admission_counts_parked_frames_under_threads, .timeout = 60)
{
    char msg[256] = "";
    int rc = pf_test_pool_admit(8, 256, 40, 0.1, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

/* Two lists of one owner's frames freed at once, one failing at its last
 * entry: each acts as if it ran alone (before the fix the failing list's
 * tentative drops let the other fail or leave a freed frame referenced). */
Test(pool, twin_lists_of_one_owner_act_alone, .timeout = 60)
{
    char msg[256] = "";
    int rc = pf_test_pool_twin_lists(2000, 256, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

/* A list naming a frame twice clears its pin once: a holder's unref/share
 * beside two failing lists never finds the frame freed. */
Test(pool, a_list_naming_a_frame_twice_leaves_other_pins_alone, .timeout = 60)
{
    char msg[256] = "";
    int rc = pf_test_pool_dup_lists(2.0, msg, sizeof msg);
    cr_assert_eq(rc, 0, "%s", msg);
}

/* ---- randomized model-based test ---------------------------------------- */

/* The model is the contract written plainly: owners, reference counts, a
 * LIFO stack of free frames, the peak, the frames handed out. In `exact`
 * mode (calls without a cache) the pool must hand out the very frames the
 * model's stack does; with caches only the set matters (a cache hands out
 * any free frame), so the model removes whatever frames the pool named,
 * after checking each was free in the model and named once. */

#define M_N 64
#define M_OWNERS 6
#define M_CACHES 3

typedef struct {
    int owner[M_N], ref[M_N];
    int stack[M_N], top;
    int peak;
    uint64_t total;
} model;

static void model_init(model *m)
{
    for (int i = 0; i < M_N; i++) {
        m->owner[i] = PF_POOL_NO_OWNER;
        m->ref[i] = 0;
        m->stack[i] = M_N - 1 - i;
    }
    m->top = M_N;
    m->peak = 0;
    m->total = 0;
}

/* Take n frames: the decision, then (rc OK) the frames. `got` is what the
 * pool returned; in exact mode it must equal the model's pops, otherwise
 * each must be free in the model (and so named once). Returns the model's
 * code; *match is 0 when the pool's frames are wrong. */
static int model_take_n(model *m, int owner, int n, int reserve, const int *got, int exact,
                        int *match)
{
    *match = 1;
    if (owner < 0 || n < 0)
        return PF_ERR_ARG;
    if (n > m->top)
        return PF_ERR_NOMEM;
    if (m->top - n < reserve)
        return PF_ERR_WATERMARK;
    for (int i = 0; i < n; i++) {
        int f;
        if (exact) {
            f = m->stack[--m->top];
            *match &= got[i] == f;
        } else {
            f = got[i];
            int at = -1;
            for (int k = 0; f >= 0 && f < M_N && k < m->top; k++)
                if (m->stack[k] == f)
                    at = k;
            if (at < 0) {
                *match = 0;
                return PF_OK;
            }
            m->stack[at] = m->stack[--m->top];
        }
        m->owner[f] = owner;
        m->ref[f] = 1;
    }
    if (M_N - m->top > m->peak)
        m->peak = M_N - m->top;
    m->total += (uint64_t)n;
    return PF_OK;
}

static void model_release(model *m, int f)
{
    m->ref[f] = 0;
    m->owner[f] = PF_POOL_NO_OWNER;
    m->stack[m->top++] = f;
}

/* check_owner 0: pf_pool_unref (any holder) */
static int model_drop(model *m, int owner, int check_owner, int f)
{
    if (f < 0 || f >= M_N)
        return PF_ERR_RANGE;
    if (m->ref[f] == 0)
        return PF_ERR_DOUBLE_FREE;
    if (check_owner && m->owner[f] != owner)
        return PF_ERR_NOT_OWNER;
    if (--m->ref[f] == 0)
        model_release(m, f);
    return PF_OK;
}

/* n frees in order; the first error undoes them all */
static int model_free_n(model *m, int owner, const int *fr, int n)
{
    if (owner < 0 || n < 0)
        return PF_ERR_ARG;
    model saved = *m;
    for (int i = 0; i < n; i++) {
        int rc = model_drop(m, owner, 1, fr[i]);
        if (rc != PF_OK) {
            *m = saved;
            return rc;
        }
    }
    return PF_OK;
}

static int model_free_owner(model *m, int owner, int *freed)
{
    if (owner < 0)
        return PF_ERR_ARG;
    *freed = 0;
    for (int f = 0; f < M_N; f++) {
        if (m->owner[f] != owner)
            continue;
        if (--m->ref[f] == 0) {
            model_release(m, f);
            (*freed)++;
        }
    }
    return PF_OK;
}

static int model_share(model *m, int f)
{
    if (f < 0 || f >= M_N)
        return PF_ERR_RANGE;
    if (m->ref[f] == 0)
        return PF_ERR_ARG;
    m->ref[f]++;
    return PF_OK;
}

/* A free_n list: mostly the frames of one owner (so most lists succeed),
 * sometimes a duplicate, a stranger's frame, a free frame or a bad id. */
static int make_list(pf_rng *r, const model *m, int *owner, int *list)
{
    int k = (int)pf_rng_range(r, 0, 6), n = 0;
    int start = (int)pf_rng_range(r, 0, M_N - 1);
    for (int i = 0; i < M_N && n < k; i++) {
        int f = (start + i) % M_N;
        if (m->ref[f] > 0 && m->owner[f] == *owner)
            list[n++] = f;
    }
    int spoil = (int)pf_rng_range(r, 0, 7);
    if (spoil == 0 && n > 0) {
        int twice = list[pf_rng_range(r, 0, n - 1)]; /* listed twice */
        list[n++] = twice;
    }
    else if (spoil == 1)
        list[n++] = (int)pf_rng_range(r, -1, M_N); /* anything, bad ids too */
    if (n > 1 && pf_rng_range(r, 0, 1)) { /* the spoiler is not always last */
        int a = (int)pf_rng_range(r, 0, n - 1), t = list[a];
        list[a] = list[n - 1];
        list[n - 1] = t;
    }
    return n;
}

/* nops random operations on a 64-frame pool, each checked against the
 * model: return code, frames, free/used counts and peak after every call;
 * owners, reference counts, alloc_total and pf_pool_check every 1000 calls.
 * With caches, each call picks the depot or one of M_CACHES caches. */
/* Watermarks whose reserve ceil(w * 64) is exact, plus invalid ones. */
static const double model_wms[] = {0.0, 1.0 / 64, 0.125, 0.25, 0.5, 1.0, -0.25, 1.5};
static const int model_reserves[] = {0, 1, 8, 16, 32, 64, -1, -1};
enum { K_ALLOC, K_ALLOC_N, K_ADMIT, K_FREE, K_FREE_OWNER, K_SHARE, K_FREE_N, K_UNREF, K_N };

/* A run of the model test: the pool, its caches, the model beside it. */
typedef struct {
    pf_pool *p;
    pf_pool_cache *caches[M_CACHES];
    int with_caches;
    model m;
    pf_rng r;
    int got[M_N + 8], list[16];
} model_run;

/* One operation of kind `kind` on the pool (through cache c, or none) and
 * on the model, for owner and frame (drawn, some invalid): their return
 * codes into *rc_pool and *rc_model, *match 0 when the pool handed out
 * frames the model does not. 0, or 1 when the draw skipped the operation. */
static int model_op(model_run *x, int op, int kind, int owner, int frame, pf_pool_cache *c,
                    int *rc_pool, int *rc_model, int *match)
{
    pf_pool *p = x->p;
    model *m = &x->m;
    int *got = x->got;
    const int exact = !x->with_caches;
    switch (kind) {
    case K_ALLOC:
        got[0] = -99;
        *rc_pool = c ? pf_pool_alloc_c(c, owner, got) : pf_pool_alloc(p, owner, got);
        *rc_model = model_take_n(m, owner, 1, 0, got, exact, match);
        break;
    case K_ALLOC_N: { /* sometimes more than free */
        int n = (int)pf_rng_range(&x->r, -1, 12);
        *rc_pool = c ? pf_pool_alloc_n_c(c, owner, n, got) : pf_pool_alloc_n(p, owner, n, got);
        *rc_model = model_take_n(m, owner, n, 0, got, exact, match);
        break;
    }
    case K_ADMIT: {
        int n = (int)pf_rng_range(&x->r, 0, 10);
        int w = (int)pf_rng_range(&x->r, 0, 7);
        *rc_pool = c ? pf_pool_alloc_admit_c(c, owner, n, model_wms[w], got)
                     : pf_pool_alloc_admit(p, owner, n, model_wms[w], got);
        *rc_model = model_reserves[w] < 0
                        ? PF_ERR_ARG
                        : model_take_n(m, owner, n, model_reserves[w], got, exact, match);
        if (model_reserves[w] >= 0)
            cr_assert_eq(pf_pool_reserve_frames(p, model_wms[w]), model_reserves[w]);
        break;
    }
    case K_FREE: /* prefer a used frame with its owner so frees succeed often */
        if (pf_rng_range(&x->r, 0, 2) && frame >= 0 && frame < M_N && m->ref[frame] > 0)
            owner = m->owner[frame];
        *rc_pool = c ? pf_pool_free_c(c, owner, frame) : pf_pool_free(p, owner, frame);
        *rc_model = owner < 0 ? PF_ERR_ARG : model_drop(m, owner, 1, frame);
        break;
    case K_FREE_OWNER: { /* rarer in effect because owners are few */
        if (pf_rng_range(&x->r, 0, 3))
            return 1;
        int fp = -1, fm = -1;
        *rc_pool = pf_pool_free_owner(p, owner, &fp);
        *rc_model = model_free_owner(m, owner, &fm);
        if (*rc_model == PF_OK)
            cr_assert_eq(fp, fm, "op %d: free_owner freed %d, model %d", op, fp, fm);
        break;
    }
    case K_SHARE:
        *rc_pool = pf_pool_share(p, frame);
        *rc_model = model_share(m, frame);
        break;
    case K_FREE_N: {
        int *list = x->list;
        if (frame >= 0 && frame < M_N && m->ref[frame] > 0 && pf_rng_range(&x->r, 0, 3))
            owner = m->owner[frame];
        int n = owner < 0 ? 2 : make_list(&x->r, m, &owner, list);
        if (owner < 0)
            list[0] = list[1] = 0;
        *rc_pool = c ? pf_pool_free_n_c(c, owner, list, n) : pf_pool_free_n(p, owner, list, n);
        *rc_model = model_free_n(m, owner, list, n);
        break;
    }
    default: /* K_UNREF: any holder drops a reference */
        *rc_pool = c ? pf_pool_unref_c(c, frame) : pf_pool_unref(p, frame);
        *rc_model = model_drop(m, 0, 0, frame);
        break;
    }
    return 0;
}

/* The pool's counts equal the model's after every operation, and every
 * frame's owner and references every 1000th. */
static void model_compare(model_run *x, int op)
{
    pf_pool *p = x->p;
    cr_assert_eq(pf_pool_free_count(p), x->m.top, "op %d: free count", op);
    cr_assert_eq(pf_pool_used_count(p), M_N - x->m.top);
    cr_assert_eq(pf_pool_peak(p), x->m.peak, "op %d: peak %d, model %d", op, pf_pool_peak(p),
                 x->m.peak);
    if (op % 1000 != 0)
        return;
    cr_assert_eq(pf_pool_check(p), PF_OK, "op %d: check", op);
    cr_assert_eq(pf_pool_alloc_total(p), x->m.total);
    for (int f = 0; f < M_N; f++) {
        cr_assert_eq(pf_pool_owner(p, f), x->m.owner[f], "op %d frame %d owner", op, f);
        cr_assert_eq(pf_pool_refcount(p, f), x->m.ref[f], "op %d frame %d ref", op, f);
    }
}

static void run_model(int nops, int with_caches, uint64_t seed)
{
    model_run x = {.p = pf_pool_create(M_N), .with_caches = with_caches};
    cr_assert_not_null(x.p);
    for (int i = 0; with_caches && i < M_CACHES; i++)
        cr_assert_not_null(x.caches[i] = pf_pool_cache_new(x.p));
    model_init(&x.m);
    pf_rng_seed(&x.r, seed);
    int counts[K_N] = {0};
    int codes[9] = {0}; /* how often each pf_err (by -code) was returned */

    for (int op = 0; op < nops; op++) {
        int kind = (int)pf_rng_range(&x.r, 0, K_N - 1);
        /* mostly valid owners and frames, some invalid ones */
        int owner = (int)pf_rng_range(&x.r, -1, M_OWNERS - 1);
        int frame = (int)pf_rng_range(&x.r, -2, M_N + 1);
        int ci = with_caches ? (int)pf_rng_range(&x.r, -1, M_CACHES - 1) : -1;
        pf_pool_cache *c = ci >= 0 ? x.caches[ci] : NULL;
        int rc_pool = 0, rc_model = 0, match = 1;
        if (model_op(&x, op, kind, owner, frame, c, &rc_pool, &rc_model, &match))
            continue;
        counts[kind]++;
        cr_assert_eq(rc_pool, rc_model, "op %d kind %d: pool %d (%s), model %d", op, kind,
                     rc_pool, pf_strerror(rc_pool), rc_model);
        cr_assert(match, "op %d kind %d: the pool handed out frames the model does not", op, kind);
        codes[-rc_model]++;
        model_compare(&x, op);
        if (with_caches && op % 5000 == 2500) { /* a thread leaves, another comes */
            int k = (int)pf_rng_range(&x.r, 0, M_CACHES - 1);
            pf_pool_cache_free(x.caches[k]);
            cr_assert_not_null(x.caches[k] = pf_pool_cache_new(x.p));
            pf_pool_reset_peak(x.p);
            x.m.peak = M_N - x.m.top;
        }
        if (op % 20000 == 19999) { /* drain now and then so exhaustion is reached from empty too */
            pf_pool_reset(x.p);
            model_init(&x.m);
        }
    }
    /* every kind of operation actually ran a meaningful number of times */
    for (int k = 0; k < K_N; k++)
        cr_assert_gt(counts[k], nops / 100, "operation %d ran %d times", k, counts[k]);
    /* and every outcome the pool can report was exercised */
    static const int outcomes[] = {PF_OK, PF_ERR_NOMEM, PF_ERR_DOUBLE_FREE, PF_ERR_NOT_OWNER,
                                   PF_ERR_RANGE, PF_ERR_ARG, PF_ERR_WATERMARK};
    for (int i = 0; i < 7; i++)
        cr_assert_gt(codes[-outcomes[i]], nops / 1000, "outcome %s seen %d times",
                     pf_strerror(outcomes[i]), codes[-outcomes[i]]);
    cr_assert_eq(pf_pool_check(x.p), PF_OK);
    for (int i = 0; i < M_CACHES; i++)
        pf_pool_cache_free(x.caches[i]);
    cr_assert_eq(pf_pool_check(x.p), PF_OK);
    pf_pool_destroy(x.p);
}

/* 10^6 calls without caches: the pool's original semantics, frame for frame. */
Test(pool, model_based_random_operations, .timeout = 60)
{
    run_model(1000000, 0, 20261202);
}

/* The same calls spread over the depot and three caches. */
Test(pool, model_based_with_caches, .timeout = 60)
{
    run_model(400000, 1, 20261203);
}
