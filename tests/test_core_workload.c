/* tests/test_core_workload.c - the PRNG (core/rng.h) and workloads
 * (core/workload.h): known-answer values, unbiased ranges, the seed's mix,
 * and the checked-in lengths for seeds 42 and 7 that pin the generator, so
 * any change to it (or to the PRNG) is caught. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "core/err.h"
#include "core/rng.h"
#include "core/workload.h"

Test(rng, splitmix_seeding_known_answer)
{
    /* splitmix64 from 0 gives 0xe220a8397b1dcdaf first (Vigna's reference);
     * the next values were computed with an independent Python version. */
    pf_rng r;
    pf_rng_seed(&r, 0);
    cr_assert_eq(r.s[0], 0xe220a8397b1dcdafull);
    cr_assert_eq(r.s[1], 0x6e789e6aa1b965f4ull);
    cr_assert_eq(r.s[2], 0x06c45d188009454full);
    cr_assert_eq(r.s[3], 0xf88bb8a8724c81ecull);
    const uint64_t want[5] = {11091344671253066420ull, 13793997310169335082ull,
                              1900383378846508768ull, 7684712102626143532ull,
                              13521403990117723737ull};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(pf_rng_next(&r), want[i], "xoshiro256** output %d", i);
}

Test(rng, range_is_inclusive_and_uniform)
{
    pf_rng r;
    pf_rng_seed(&r, 123);
    int hist[7] = {0};
    const int draws = 70000;
    for (int i = 0; i < draws; i++) {
        int64_t v = pf_rng_range(&r, -3, 3);
        cr_assert(v >= -3 && v <= 3, "out of range: %lld", (long long)v);
        hist[v + 3]++;
    }
    /* each bucket expects 10000; 5 sigma is about 470 */
    for (int i = 0; i < 7; i++)
        cr_assert(hist[i] > 9500 && hist[i] < 10500, "bucket %d: %d", i, hist[i]);
    cr_assert_eq(pf_rng_range(&r, 5, 5), 5);
    /* full 64-bit span works and does not hang */
    (void)pf_rng_range(&r, INT64_MIN, INT64_MAX);
}

Test(rng, unit_and_symf_ranges)
{
    pf_rng r;
    pf_rng_seed(&r, 9);
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double u = pf_rng_unit(&r);
        float f = pf_rng_symf(&r);
        cr_assert(u >= 0.0 && u < 1.0);
        cr_assert(f >= -1.0f && f < 1.0f);
        sum += u;
    }
    cr_assert(sum / 10000 > 0.48 && sum / 10000 < 0.52, "mean %f", sum / 10000);
}

Test(workload, checked_in_lengths_seed_42_and_7)
{
    static const int want42[40] = {
        116, 44,  307, 351, 297, 127,  98,  1419, 70,  1947,
        64,  106, 43,  372, 86,  50,   36,  394,  80,  114,
        62,  323, 1637, 358, 37, 98,   57,  106,  95,  49,
        53,  81,  50,  1320, 421, 64,  1132, 110, 117, 69};
    static const int want7[40] = {
        1998, 114, 383, 89,  125, 108, 1225, 42,  290, 82,
        1441, 269, 37,  1675, 336, 67, 1254, 112, 1886, 1206,
        122,  1616, 497, 328, 483, 43, 58,   1084, 98,  318,
        1626, 122, 355, 104, 108, 420, 104, 72,   439, 122};
    int got[40];
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 42, 40, 1, 0, got), PF_OK);
    cr_assert_arr_eq(got, want42, sizeof want42);
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 7, 40, 1, 0, got), PF_OK);
    cr_assert_arr_eq(got, want7, sizeof want7);
    /* a prefix of a longer list is the shorter list */
    int first10[10];
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 42, 10, 1, 0, first10), PF_OK);
    cr_assert_arr_eq(first10, want42, sizeof first10);
}

Test(workload, seed_mix_proportions_and_ranges)
{
    enum { N = 20000 };
    static int lens[N];
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 1, N, 1, 0, lens), PF_OK);
    int cls[3] = {0};
    for (int i = 0; i < N; i++) {
        int L = lens[i];
        if (L >= 32 && L <= 128)
            cls[0]++;
        else if (L >= 256 && L <= 512)
            cls[1]++;
        else if (L >= 1024 && L <= 2048)
            cls[2]++;
        else
            cr_assert_fail("length %d outside every class", L);
    }
    /* expected 10000 / 6000 / 4000; 5 sigma is about 350 */
    cr_assert(cls[0] > 9650 && cls[0] < 10350, "short %d", cls[0]);
    cr_assert(cls[1] > 5650 && cls[1] < 6350, "medium %d", cls[1]);
    cr_assert(cls[2] > 3650 && cls[2] < 4350, "long %d", cls[2]);
}

Test(workload, scale_and_clamp)
{
    int a[200], b[200];
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 5, 200, 1, 0, a), PF_OK);
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 5, 200, 2, 3000, b), PF_OK);
    int clamped = 0;
    for (int i = 0; i < 200; i++) {
        int want = a[i] * 2 > 3000 ? 3000 : a[i] * 2;
        cr_assert_eq(b[i], want, "i %d: %d vs %d", i, b[i], want);
        clamped += a[i] * 2 > 3000;
    }
    cr_assert_gt(clamped, 0, "the clamp was exercised");
}

Test(workload, bad_arguments)
{
    int out[4];
    pf_mix empty = {0, {{0, 0, 0}}};
    pf_mix bad_range = {1, {{1, 10, 5}}};
    pf_mix zero_weight = {2, {{0, 1, 5}, {0, 6, 9}}};
    cr_assert_eq(pf_workload_lengths(NULL, 1, 4, 1, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_workload_lengths(&empty, 1, 4, 1, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_workload_lengths(&bad_range, 1, 4, 1, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_workload_lengths(&zero_weight, 1, 4, 1, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 1, -1, 1, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 1, 4, 0, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 1, 4, 1, -1, out), PF_ERR_ARG);
    /* a class of weight 0 is never drawn */
    pf_mix one = {2, {{0, 1, 5}, {3, 100, 100}}};
    cr_assert_eq(pf_workload_lengths(&one, 3, 4, 1, 0, out), PF_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(out[i], 100);
}

Test(workload, parse_lengths)
{
    int out[4];
    cr_assert_eq(pf_workload_parse_lengths("1,16,17,100", out, 4), 4);
    cr_assert_eq(out[0], 1);
    cr_assert_eq(out[1], 16);
    cr_assert_eq(out[2], 17);
    cr_assert_eq(out[3], 100);
    cr_assert_eq(pf_workload_parse_lengths("5", out, 4), 1);
    cr_assert_eq(out[0], 5);
    cr_assert_eq(pf_workload_parse_lengths("1,2,3,4,5", out, 4), PF_ERR_RANGE);
    const char *bad[] = {"", ",", "1,", ",1", "1,,2", "0", "-1", "+3", "1 ,2", "1.5", "x",
                         "12a", "99999999999", NULL};
    for (int i = 0; bad[i]; i++)
        cr_assert_eq(pf_workload_parse_lengths(bad[i], out, 4), PF_ERR_ARG, "'%s'", bad[i]);
}
