/* gpu/kernels/v1.cuh - version 1: register tiles (issue 4's kernel), the baseline.
 *
 * Part of gpu/kernels.cuh, which includes the parts in order; CUDA C++,
 * inside gpu/ only. Everything is in the unnamed namespace: each element
 * type's translation unit keeps the instances it makes to itself. */
#pragma once

#include "gpu/kernels/common.cuh"

namespace {

/* Version 1: register tiles (issue 4's kernel). */
template <typename T, int D, int GT, bool PAGED, bool PREFETCH>
__global__ void __launch_bounds__(kThreads) attn_v1(const AttnArgs<T> a)
{
    const T *__restrict__ q = a.q;
    const T *__restrict__ k = a.k;
    const T *__restrict__ v = a.v;
    const int *__restrict__ tables = a.tables;
    T *__restrict__ out = a.out;
    float *__restrict__ part_o = a.part_o;
    float *__restrict__ part_lse = a.part_lse;
    const int hq = a.hq, hkv = a.hkv, B = a.B, bshift = a.bshift, maxb = a.maxb, cap = a.cap;
    const int chunk = a.chunk, splits = a.splits;
    const float qscale = a.qscale;
    constexpr int EPV = Elt<T>::kPer16;  /* elements per 16-byte vector */
    constexpr int TG = D / EPV;          /* threads per token row       */
    constexpr int NG = kThreads / TG;    /* rows per step               */
    constexpr int N = GT >= 8 ? 2 : 4;   /* steps per tile              */
    constexpr int TILE = NG * N;
    static_assert(TG <= 32 && 32 % TG == 0, "a row must fit in one warp");

    __shared__ int tbl[kTableCache];
    __shared__ float sm_m[NG][GT], sm_l[NG][GT];
    __shared__ __align__(16) float sm_acc[NG][GT][D];

    const int seq = blockIdx.z;
    const int len = min(a.lens[seq], a.lim);
    const int group = hq / hkv;
    const int nsub = group / GT;
    const int kvh = blockIdx.y / nsub;
    const int qh0 = kvh * group + (blockIdx.y % nsub) * GT;
    if (len <= 0) {
        write_zeros<T, D, GT>(a, seq, qh0, blockIdx.x);
        return;
    }
    const int t0 = blockIdx.x * chunk;
    if (t0 >= len)
        return; /* this sequence has fewer chunks; the merge never reads this one */
    const int t1 = min(len, t0 + chunk);
    const int tid = threadIdx.x, grp = tid / TG, r = tid % TG;

    /* Read the chunk's slice of the block table ahead of use. */
    int b0 = 0;
    if (PAGED) {
        b0 = bshift >= 0 ? (t0 >> bshift) : t0 / B;
        const int b1 = bshift >= 0 ? ((t1 - 1) >> bshift) : (t1 - 1) / B;
        const int *row = tables + (size_t)seq * maxb;
        for (int i = tid; i <= b1 - b0; i += kThreads)
            tbl[i] = row[b0 + i];
    }

    /* This thread's slice of the GT query vectors, pre-scaled for exp2. */
    float qf[GT][EPV];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        uint4 u = ld16(q + ((size_t)seq * hq + qh0 + g) * D + r * EPV);
        Elt<T>::unpack(u, qf[g]);
#pragma unroll
        for (int e = 0; e < EPV; e++)
            qf[g][e] *= qscale;
    }
    float m[GT], l[GT], acc[GT][EPV];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -INFINITY;
        l[g] = 0.f;
#pragma unroll
        for (int e = 0; e < EPV; e++)
            acc[g][e] = 0.f;
    }
    if (PAGED)
        __syncthreads();

    /* Row addresses. naive: rows of this (sequence, KV head) are
     * contiguous. paged: frame * frame_stride + (kv head * B + offset) * D,
     * only the frame term in 64 bits. */
    const T *kb, *vb;
    const size_t frame_stride = (size_t)hkv * B * D;
    const int head_off = kvh * B * D + r * EPV;
    if (PAGED) {
        kb = k;
        vb = v;
    } else {
        const size_t nb = ((size_t)seq * hkv + kvh) * (size_t)cap * D + r * EPV;
        kb = k + nb;
        vb = v + nb;
    }
    auto load_tile = [&](int base, uint4 *kr, uint4 *vr) {
#pragma unroll
        for (int j = 0; j < N; j++) {
            const int t = base + j * NG + grp;
            kr[j] = make_uint4(0, 0, 0, 0);
            vr[j] = kr[j];
            if (t < t1) {
                size_t rowi;
                if (PAGED) {
                    const int blk = bshift >= 0 ? (t >> bshift) : t / B;
                    rowi = (size_t)tbl[blk - b0] * frame_stride +
                           (unsigned)(head_off + (t - blk * B) * D);
                } else {
                    rowi = (size_t)t * D;
                }
                kr[j] = ld16(kb + rowi);
                vr[j] = ld16(vb + rowi);
            }
        }
    };

    /* With PREFETCH the next tile's loads are issued before this tile's
     * math (registers double-buffered), so memory never waits on the ALUs. */
    uint4 kr[N], vr[N];
    if (PREFETCH)
        load_tile(t0, kr, vr);
    for (int base = t0; base < t1; base += TILE) {
        uint4 kn[N], vn[N];
        if (PREFETCH)
            load_tile(base + TILE, kn, vn);
        else
            load_tile(base, kr, vr);
        /* scores: partial dot products, then a butterfly over the TG lanes */
        float s[N][GT];
#pragma unroll
        for (int j = 0; j < N; j++) {
            float kf[EPV];
            Elt<T>::unpack(kr[j], kf);
#pragma unroll
            for (int g = 0; g < GT; g++) {
                float a = 0.f;
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    a = fmaf(qf[g][e], kf[e], a);
                s[j][g] = a;
            }
        }
#pragma unroll
        for (int off = TG / 2; off > 0; off >>= 1)
#pragma unroll
            for (int j = 0; j < N; j++)
#pragma unroll
                for (int g = 0; g < GT; g++)
                    s[j][g] += __shfl_xor_sync(0xffffffffu, s[j][g], off);
#pragma unroll
        for (int j = 0; j < N; j++)
            if (base + j * NG + grp >= t1)
#pragma unroll
                for (int g = 0; g < GT; g++)
                    s[j][g] = -INFINITY;
        /* online softmax, once per tile */
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float mt = s[0][g];
#pragma unroll
            for (int j = 1; j < N; j++)
                mt = fmaxf(mt, s[j][g]);
            const float mn = fmaxf(m[g], mt);
            const float ms = mn == -INFINITY ? 0.f : mn; /* no valid row yet */
            const float alpha = fast_exp2(m[g] - ms);
            m[g] = mn;
            l[g] *= alpha;
#pragma unroll
            for (int e = 0; e < EPV; e++)
                acc[g][e] *= alpha;
#pragma unroll
            for (int j = 0; j < N; j++) {
                s[j][g] = fast_exp2(s[j][g] - ms);
                l[g] += s[j][g];
            }
        }
#pragma unroll
        for (int j = 0; j < N; j++) {
            float vf[EPV];
            Elt<T>::unpack(vr[j], vf);
#pragma unroll
            for (int g = 0; g < GT; g++)
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    acc[g][e] = fmaf(s[j][g], vf[e], acc[g][e]);
        }
        if (PREFETCH) {
#pragma unroll
            for (int j = 0; j < N; j++) {
                kr[j] = kn[j];
                vr[j] = vn[j];
            }
        }
    }

    /* merge the NG row groups of the block by log-sum-exp */
#pragma unroll
    for (int g = 0; g < GT; g++) {
        if (r == 0) {
            sm_m[grp][g] = m[g];
            sm_l[grp][g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < EPV; e++)
            sm_acc[grp][g][r * EPV + e] = acc[g][e];
    }
    __syncthreads();
    const int split = blockIdx.x;
    for (int idx = tid; idx < GT * D; idx += kThreads) {
        const int g = idx / D, d = idx % D;
        float M = -INFINITY;
#pragma unroll
        for (int i = 0; i < NG; i++)
            M = fmaxf(M, sm_m[i][g]);
        float L = 0.f, O = 0.f;
#pragma unroll
        for (int i = 0; i < NG; i++) {
            const float w = fast_exp2(sm_m[i][g] - M);
            L = fmaf(sm_l[i][g], w, L);
            O = fmaf(sm_acc[i][g][d], w, O);
        }
        const size_t rowo = (size_t)seq * hq + qh0 + g;
        if (splits == 1) {
            out[rowo * D + d] = Elt<T>::store(O / L);
        } else {
            part_o[(rowo * splits + split) * D + d] = O / L;
            if (d == 0)
                part_lse[rowo * splits + split] = M + log2f(L);
        }
    }
}

} /* namespace */
