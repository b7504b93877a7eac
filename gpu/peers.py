#!/usr/bin/env python3
"""gpu/peers.py - our decode-attention kernels beside PyTorch's, in one process.

    python3 gpu/peers.py build/gpu/libpagefault_gpu.so [--iters N] [--workloads a,b]
                         [--versions 0,5,7] [--group-tiles 0,1] [--no-flex]
                         [--back-to-back] [--flush sum|read_bw] [--data normal|uniform]
                         [--probe-after-mb N] [--kv-layouts split,interleaved]

Optional: it needs PyTorch with CUDA (the device machine has it). For each
workload it draws one set of q, K, V on the GPU and runs, on that same data:
  - ours, paged: pf_gpu_attn_plan_make + pf_gpu_attn_run through
    libpagefault_gpu.so, K/V in a pool of shuffled pages (block 16, and 128
    for llama), the workspace a torch tensor; each kernel version of
    --versions (default 0, the per-shape default), on the same pool; with
    --kv-layouts, each pool layout: split (a K pool and a V pool, vLLM's
    FlashAttention backend) and/or interleaved (one pool [page][2][Hkv][B][D],
    FlashInfer's: the tables name page p as frame 2 p, V's pointer is K's
    plus one frame; docs/gpu.md, *Layouts*);
  - PyTorch SDPA on contiguous K/V [S, Hkv, L, D] with enable_gqa, forced to
    the cuDNN backend and to the FlashAttention backend;
  - PyTorch flex_attention on a paged cache (PagedAttention, page 128), llama
    only (it compiles a kernel per shape).
Each launch is timed with CUDA events after an L2 flush (a read of 256 MB);
the figure is the median. The streaming read bandwidth is measured in the same
process by the probe `pagefault bench` divides by (pf_gpu_launch_read_bw over
4 GiB, the median of 10 launches), before the first workload and after the
last; each row's KV bandwidth is also given as a fraction of the first (the
issue's targets are such fractions, and the read bandwidth differs from one
start of the device machine to the next, so only a fraction from one process
compares ours with the peers'). Every output is checked against a float32 SDPA
(math backend) on the same inputs: max |out - ref| must stay under 2e-2
(bf16/fp16 outputs of values of order 1). Exit status: 0 all checked
outputs agree, 1 a mismatch, 3 no torch / no device.
"""
import argparse
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


class AttnPlan(ctypes.Structure):  # pf_gpu_attn_plan (gpu/gpu.h)
    _fields_ = [
        ("shape", AttnShape),
        ("paged", ctypes.c_int),
        ("version", ctypes.c_int),
        ("max_len", ctypes.c_int),
        ("chunk", ctypes.c_int),
        ("splits", ctypes.c_int),
        ("sm_count", ctypes.c_int),
        ("blocks_per_sm", ctypes.c_int),
        ("group_tile", ctypes.c_int),
        ("workspace_bytes", ctypes.c_size_t),
        ("units", ctypes.c_int),
        ("tail", ctypes.c_int),
        ("pack", ctypes.c_int),
        ("lens_hash", ctypes.c_ulonglong),
        ("magic", ctypes.c_uint),
    ]


# name: (seqs, len, q heads, kv heads, D, dtype)
WORKLOADS = {
    "llama": (64, 4096, 32, 8, 128, "bf16"),
    "batch": (256, 1024, 32, 8, 128, "bf16"),
    "long": (8, 32768, 32, 8, 128, "bf16"),
    "single": (1, 1024, 32, 8, 128, "bf16"),
    "mha": (32, 2048, 32, 32, 128, "fp16"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib", nargs="?", default="build/gpu/libpagefault_gpu.so")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--workloads", default="llama,batch,long,single,mha")
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--back-to-back", action="store_true",
                    help="queue the timed launches with no wait between them")
    # the ways `pagefault bench` measures differently, one at a time, to find
    # which of them puts its figures about 2 points below these
    # (docs/gpu-journal.md, twelfth session)
    ap.add_argument("--flush", choices=("sum", "read_bw"), default="sum",
                    help="the L2 flush before each timed launch: a torch sum over 256 MB, or "
                         "the bench's (pf_gpu_launch_read_bw over twice the L2)")
    ap.add_argument("--data", choices=("normal", "uniform"), default="normal",
                    help="q, K, V drawn normal, or uniform in [-1, 1) as the bench draws them")
    ap.add_argument("--probe-after-mb", type=int, default=0,
                    help="allocate this many MB before the first read-bandwidth probe's buffer "
                         "(the bench allocates its probe after its pools)")
    ap.add_argument("--versions", default="0",
                    help="our kernel versions to run (0: the per-shape default)")
    ap.add_argument("--group-tiles", default="0",
                    help="query heads one block of ours serves (0: the planner's; else 1, 2, 4, "
                         "8 dividing the group, through pf_gpu__plan_set_group_tile)")
    ap.add_argument("--kv-layouts", default="split",
                    help="our pools' layouts, comma-separated: split (a K and a V pool), "
                         "interleaved (a page's K and V side by side)")
    args = ap.parse_args()
    # bad input is named before any device work, with argparse's status 2
    layouts = args.kv_layouts.split(",")
    if not layouts or any(x not in ("split", "interleaved") for x in layouts):
        ap.error(f"--kv-layouts: expected split and/or interleaved, got '{args.kv_layouts}'")
    unknown = [w for w in args.workloads.split(",") if w not in WORKLOADS]
    if unknown:
        ap.error(f"--workloads: unknown {','.join(unknown)} (known: {','.join(WORKLOADS)})")
    try:
        runs = [(int(v), int(t)) for v in args.versions.split(",")
                for t in args.group_tiles.split(",")]
    except ValueError:
        ap.error("--versions and --group-tiles take comma-separated integers")
    if args.iters < 1:
        ap.error("--iters must be at least 1")
    if args.probe_after_mb < 0:
        ap.error("--probe-after-mb must be at least 0")
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print("no torch:", e)
        return 3
    if not torch.cuda.is_available():
        print("no CUDA device for torch")
        return 3
    lib = ctypes.CDLL(args.lib)
    vp = ctypes.c_void_p
    # the hand-made mirror of pf_gpu_attn_plan must be the library's
    size_t = ctypes.c_size_t
    lib.pf_gpu_attn_plan_layout.argtypes = [ctypes.POINTER(size_t), ctypes.POINTER(size_t)]
    nbytes, magic_at = size_t(), size_t()
    lib.pf_gpu_attn_plan_layout(ctypes.byref(nbytes), ctypes.byref(magic_at))
    if (nbytes.value, magic_at.value) != (ctypes.sizeof(AttnPlan), AttnPlan.magic.offset):
        print(f"peers.py: AttnPlan ({ctypes.sizeof(AttnPlan)} bytes, magic at "
              f"{AttnPlan.magic.offset}) is not the library's pf_gpu_attn_plan ({nbytes.value} "
              f"bytes, magic at {magic_at.value}): update its _fields_ from gpu/gpu.h")
        return 2
    lib.pf_gpu_attn_plan_make.argtypes = [ctypes.POINTER(AttnPlan), ctypes.POINTER(AttnShape),
                                          ctypes.c_int, vp, ctypes.c_int, ctypes.c_int]
    lib.pf_gpu_attn_run.argtypes = [ctypes.POINTER(AttnPlan), vp, vp, vp, vp, vp, vp, vp, vp]
    lib.pf_gpu_attn_workspace_init.argtypes = [ctypes.POINTER(AttnPlan), vp, vp, vp]
    lib.pf_gpu__plan_set_group_tile.argtypes = [ctypes.POINTER(AttnPlan), ctypes.c_int]
    lib.pf_gpu_launch_read_bw.argtypes = [vp, ctypes.c_size_t, vp, ctypes.c_int, vp]
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    usink = torch.zeros(1, dtype=torch.int32, device=dev)
    def launch_read_bw(buf):
        """the bench's streaming read of buf (pf_gpu_launch_read_bw)"""
        if lib.pf_gpu_launch_read_bw(buf.data_ptr(), buf.numel() // 16, usink.data_ptr(), sms,
                                     torch.cuda.current_stream().cuda_stream) != 0:
            raise RuntimeError("pf_gpu_launch_read_bw failed")

    if args.flush == "sum":
        flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
        sink = torch.zeros(1, dtype=torch.int64, device=dev)

        def flush_l2():
            sink.add_(flush.view(torch.int64).sum())  # a 256 MB read
    else:
        l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
        flush = torch.full((2 * l2,), 0x5a, dtype=torch.uint8, device=dev)

        def flush_l2():  # the bench's: gpu/gpu.cu, case_time
            launch_read_bw(flush)

    def time_it(fn, iters, flushed=True, wait=None):
        """median of CUDA-event timings of fn(), after 3 untimed calls, the
        L2 flushed before each timed one unless not flushed; with
        --back-to-back (wait None) the launches are queued with no wait
        between them (as `pagefault bench` queues its timed rounds), else
        the host waits for each before it queues the next"""
        if wait is None:
            wait = not args.back_to_back
        for _ in range(3):
            fn()
        pairs = []
        for _ in range(iters):
            if flushed:
                flush_l2()
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            if wait:
                b.synchronize()
            pairs.append((a, b))
        torch.cuda.synchronize()
        ts = sorted(a.elapsed_time(b) for a, b in pairs)
        return ts[len(ts) // 2]

    def read_bw():
        """the bench's read-bandwidth probe (gpu/gpu.cu, case_read_bw: 4 GiB,
        larger than any L2, so no flush; the median of 10), in TB/s"""
        buf = torch.empty(4 << 30, dtype=torch.uint8, device=dev).fill_(0x5a)
        ms = time_it(lambda: launch_read_bw(buf), 10, flushed=False, wait=True)
        del buf
        torch.cuda.empty_cache()
        return tb_per_s(4 << 30, ms)

    def tb_per_s(n, ms):
        """n bytes in ms milliseconds, in TB/s"""
        return n / (ms * 1e-3) / 1e12

    torch.manual_seed(0)
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    before = torch.empty(args.probe_after_mb << 20, dtype=torch.uint8, device=dev)
    bw0 = read_bw()
    del before
    print(f"read bandwidth (pf_gpu_launch_read_bw, 4 GiB): {bw0:.3f} TB/s")
    rows = []
    bad = 0
    for name in args.workloads.split(","):
        S, L, HQ, HKV, D, dts = WORKLOADS[name]
        dt = torch.bfloat16 if dts == "bf16" else torch.float16
        def draw(*shape):
            if args.data == "uniform":
                return (torch.rand(*shape, device=dev) * 2 - 1).to(dt)
            return torch.randn(*shape, device=dev, dtype=dt)

        q = draw(S, HQ, 1, D)
        k = draw(S, HKV, L, D)
        v = draw(S, HKV, L, D)
        kv_bytes = 2 * k.numel() * k.element_size()
        scale = 1.0 / math.sqrt(D)
        # reference: float32 SDPA, math backend, on the same (rounded) values;
        # at most 16 sequences so the float32 copies stay small
        nref = min(S, 16)
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q[:nref].float(), k[:nref].float(),
                                                 v[:nref].float(), scale=scale, enable_gqa=True)

        def check(out, label):
            nonlocal bad
            err = (out[:nref].float().reshape(ref.shape) - ref).abs().max().item()
            ok = err < 2e-2
            if not ok:
                bad += 1
            return err, ok

        res = {}
        # -- ours, paged, shuffled pages
        for B, layout in [(b, x) for b in ([16, 128] if name == "llama" else [16])
                          for x in layouts]:
            nb = L // B
            frames = S * nb
            perm = torch.randperm(frames, device=dev)
            # [S, Hkv, nb, B, D] -> [S * nb, Hkv, B, D], scattered by perm
            pages_k = k.view(S, HKV, nb, B, D).permute(0, 2, 1, 3, 4).reshape(frames, HKV, B, D)
            pages_v = v.view(S, HKV, nb, B, D).permute(0, 2, 1, 3, 4).reshape(frames, HKV, B, D)
            if layout == "split":
                kp = torch.empty(frames, HKV, B, D, device=dev, dtype=dt)
                vpool = torch.empty_like(kp)
                kp[perm] = pages_k
                vpool[perm] = pages_v
                k_ptr, v_ptr, fmul = kp.data_ptr(), vpool.data_ptr(), 1
            else:  # one pool, page p's K at frame 2p, its V one frame later
                kp = torch.empty(frames, 2, HKV, B, D, device=dev, dtype=dt)
                vpool = kp
                kp[perm, 0] = pages_k
                kp[perm, 1] = pages_v
                k_ptr = kp.data_ptr()
                v_ptr, fmul = k_ptr + HKV * B * D * kp.element_size(), 2
            del pages_k, pages_v
            tables = (perm * fmul).to(torch.int32).view(S, nb).contiguous()
            lens_h = (ctypes.c_int * S)(*([L] * S))
            lens_d = torch.full((S,), L, dtype=torch.int32, device=dev)
            shape = AttnShape(S, HQ, HKV, D, B, nb, L, 2 if dts == "bf16" else 1, 0.0)
            qc = q.view(S, HQ, D).contiguous()
            st = torch.cuda.current_stream().cuda_stream
            for ver, tile in runs:
                plan = AttnPlan()
                rc = lib.pf_gpu_attn_plan_make(ctypes.byref(plan), ctypes.byref(shape), 1,
                                               ctypes.cast(lens_h, vp), 0, ver)
                if rc == 0 and tile:
                    if (HQ // HKV) % tile:
                        continue  # this group has no such tile
                    rc = lib.pf_gpu__plan_set_group_tile(ctypes.byref(plan), tile)
                if rc != 0:
                    print(f"{name}: plan failed ({rc})")
                    bad += 1
                    continue
                # prepared before first use (gpu.h): counters and the work list
                ws = torch.empty(max(plan.workspace_bytes, 1), dtype=torch.uint8, device=dev)
                rc = lib.pf_gpu_attn_workspace_init(ctypes.byref(plan), ctypes.cast(lens_h, vp),
                                                    ws.data_ptr(), st)
                if rc != 0:
                    print(f"{name}: workspace_init failed ({rc})")
                    bad += 1
                    continue
                out = torch.empty(S, HQ, D, device=dev, dtype=dt)

                def ours():
                    r = lib.pf_gpu_attn_run(ctypes.byref(plan), qc.data_ptr(), k_ptr, v_ptr,
                                            tables.data_ptr(),
                                            lens_d.data_ptr(), out.data_ptr(), ws.data_ptr(), st)
                    if r != 0:
                        raise RuntimeError(f"pf_gpu_attn_run: {r}")

                ours()
                torch.cuda.synchronize()
                err, ok = check(out, "ours")
                label = (f"ours v{plan.version} paged B{B}" + (f" tile {tile}" if tile else "") +
                         (" interleaved" if layout == "interleaved" else "") +
                         (" (default)" if ver == 0 and not tile else ""))
                res[label] = (time_it(ours, args.iters), err, ok)
            del kp, vpool
        # -- PyTorch SDPA on contiguous K/V, cuDNN and FlashAttention
        for label, backend in (("cuDNN SDPA", SDPBackend.CUDNN_ATTENTION),
                               ("FlashAttention SDPA", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    def sdpa():
                        return F.scaled_dot_product_attention(q, k, v, scale=scale,
                                                              enable_gqa=True)
                    o = sdpa()
                    torch.cuda.synchronize()
                    err, ok = check(o, label)
                    res[label] = (time_it(sdpa, args.iters), err, ok)
            except Exception as e:  # a backend that does not serve the shape
                res[label] = (None, str(e).splitlines()[0][:60], True)
        # -- flex_attention on a paged cache (page 128), llama only
        if name == "llama" and not args.no_flex:
            try:
                res["flex paged B128"] = flex_paged(torch, q, k, v, scale, time_it, args.iters,
                                                    check)
            except Exception as e:
                res["flex paged B128"] = (None, (type(e).__name__ + ": " + str(e)).splitlines()[0][:70], True)
        base = res.get("cuDNN SDPA", (None,))[0]
        for label, (ms, err, ok) in res.items():
            if ms is None:
                rows.append((name, label, "n/a", "", "", "", str(err)))
                continue
            tbs = tb_per_s(kv_bytes, ms)
            rows.append((name, label, f"{ms:.4f}", f"{tbs:.2f}", f"{tbs / bw0:.3f}",
                         f"{ms / base:.3f}" if base else "", f"{err:.2e}" + ("" if ok else " BAD")))
        del q, k, v, ref
        torch.cuda.empty_cache()

    print(f"read bandwidth after the last workload: {read_bw():.3f} TB/s")
    print()
    print("| workload | kernel | median ms | KV TB/s | / read BW | / cuDNN | max abs err vs fp32 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 1 if bad else 0


def flex_paged(torch, q, k, v, scale, time_it, iters, check):
    """flex_attention through PyTorch's PagedAttention helper, page 128"""
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    S, HKV, L, D = k.shape
    HQ = q.shape[1]
    P = 128
    n_pages = S * L // P
    dev = q.device
    pa = PagedAttention(n_pages, P, S, device=dev)
    k_cache = torch.zeros(1, HKV, n_pages * P, D, device=dev, dtype=k.dtype)
    v_cache = torch.zeros_like(k_cache)
    for b in range(S):  # reserve takes one sequence at a time (scalar tensors)
        pa.reserve(torch.tensor(b, device=dev), torch.tensor(L, device=dev))
    bidx = torch.arange(S, device=dev, dtype=torch.int32)
    pos = torch.arange(L, device=dev, dtype=torch.int32).unsqueeze(0).expand(S, L)
    pa.assign(bidx, pos, k, v, k_cache, v_cache)

    def causal_free(b, h, q_idx, kv_idx):
        return kv_idx >= 0

    logical = create_block_mask(causal_free, S, 1, 1, L, device=dev, BLOCK_SIZE=P)
    mask = pa.convert_logical_block_mask(logical)
    fa = torch.compile(flex_attention, dynamic=False)

    def run():
        return fa(q, k_cache, v_cache, block_mask=mask, scale=scale, enable_gqa=True)

    o = run()
    torch.cuda.synchronize()
    err, ok = check(o, "flex")
    return (time_it(run, iters), err, ok)


if __name__ == "__main__":
    sys.exit(main())
