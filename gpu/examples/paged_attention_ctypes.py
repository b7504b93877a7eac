#!/usr/bin/env python3
"""gpu/examples/paged_attention_ctypes.py - call PageFault's paged kernel
from Python through ctypes, on PyTorch tensors, and check it against
PyTorch's own attention.

    python3 gpu/examples/paged_attention_ctypes.py build/gpu/libpagefault_gpu.so

The pool layout is the one gpu/gpu.h documents:
    k_pool [frames][kv_heads][block_size][head_dim]   (v_pool the same)
    block_tables [seqs][max_blocks] int32, seq_lens [seqs] int32
    q, out [seqs][q_heads][head_dim]
Exit status: 0 match, 1 mismatch, 3 no device (or no torch).
"""
import ctypes
import math
import sys


class AttnShape(ctypes.Structure):
    _fields_ = [
        ("num_seqs", ctypes.c_int),
        ("num_q_heads", ctypes.c_int),
        ("num_kv_heads", ctypes.c_int),
        ("head_dim", ctypes.c_int),
        ("block_size", ctypes.c_int),
        ("max_blocks_per_seq", ctypes.c_int),
        ("naive_cap", ctypes.c_int),
        ("dtype", ctypes.c_int),  # 0 fp32, 1 fp16, 2 bf16
        ("scale", ctypes.c_float),
    ]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "build/gpu/libpagefault_gpu.so"
    lib = ctypes.CDLL(path)
    why = ctypes.create_string_buffer(200)
    if not lib.pf_gpu_available(why, len(why)):
        print("no GPU:", why.value.decode())
        return 3
    try:
        import torch
    except ImportError:
        print("no torch: this example checks against PyTorch")
        return 3

    torch.manual_seed(0)
    dev = "cuda"
    S, HQ, HKV, D, B = 5, 32, 8, 128, 16
    lens = [1, 17, 300, 1024, 2049]
    maxb = max((n + B - 1) // B for n in lens)
    nblocks = [(n + B - 1) // B for n in lens]
    frames = sum(nblocks)
    perm = torch.randperm(frames).tolist()  # scattered frames
    tables = torch.zeros(S, maxb, dtype=torch.int32)
    it = iter(perm)
    for s in range(S):
        for b in range(nblocks[s]):
            tables[s, b] = next(it)

    dt = torch.bfloat16
    q = torch.randn(S, HQ, D, device=dev, dtype=dt)
    k_pool = torch.full((frames, HKV, B, D), float("nan"), device=dev, dtype=dt)
    v_pool = torch.full_like(k_pool, float("nan"))
    ks, vs = [], []
    for s in range(S):
        k = torch.randn(HKV, lens[s], D, device=dev, dtype=dt)
        v = torch.randn(HKV, lens[s], D, device=dev, dtype=dt)
        ks.append(k)
        vs.append(v)
        for t0 in range(0, lens[s], B):  # write page by page through the table
            f = int(tables[s, t0 // B])
            n = min(B, lens[s] - t0)
            k_pool[f, :, :n] = k[:, t0:t0 + n]
            v_pool[f, :, :n] = v[:, t0:t0 + n]

    tables_d = tables.to(dev)
    lens_d = torch.tensor(lens, dtype=torch.int32, device=dev)
    out = torch.full((S, HQ, D), float("nan"), device=dev, dtype=dt)
    shape = AttnShape(S, HQ, HKV, D, B, maxb, maxb * B, 2, 0.0)
    vp = ctypes.c_void_p
    rc = lib.pf_gpu_paged_attention(
        ctypes.byref(shape), vp(q.data_ptr()), vp(k_pool.data_ptr()), vp(v_pool.data_ptr()),
        vp(tables_d.data_ptr()), vp(lens_d.data_ptr()), vp(out.data_ptr()), None)
    torch.cuda.synchronize()
    if rc != 0:
        print("pf_gpu_paged_attention returned", rc)
        return 1

    worst = 0.0
    for s in range(S):
        kk = ks[s].float().repeat_interleave(HQ // HKV, dim=0)  # GQA: head h reads h // group
        vv = vs[s].float().repeat_interleave(HQ // HKV, dim=0)
        qq = q[s].float().unsqueeze(1)  # [HQ, 1, D]
        ref = torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, scale=1 / math.sqrt(D))
        err = (out[s].float() - ref.squeeze(1)).abs().max().item()
        if math.isnan(err):
            err = float("inf")
        worst = max(worst, err)
    ok = worst < 2e-2  # bf16 output: ~2^-8 relative
    print(f"paged kernel vs torch SDPA (fp32 on the same bf16 inputs), {S} seqs, lengths {lens}: "
          f"max |err| = {worst:.3g} -> {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
