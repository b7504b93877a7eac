#!/bin/bash
# gpu/device_run.sh - one device call's work, stages chosen by variables
# (binaries carried in .dev-bin by gpu/device_pack.sh). Logs under $OUT (at
# most 8 files come back): env.txt, tests.log, bench.txt, extra.txt,
# ncu.txt, peers.txt. The end of stdout is a summary.
#   TESTS=1      test_gpu, test_gpu_host, test_gpu_bench_cli and the two
#                probes' tests (ctest -L gpu), and test_cli_bench_files
#                (its successful run needs a device)
#   SAN=1        compute-sanitizer memcheck and racecheck on test-sized runs,
#                checked and not timed (bench --check-only)
#                (SAN_KERNELS="1 4", SAN_DTYPES="bf16", SAN_LENGTHS=1,17,300,5000,
#                each run cut at SAN_TIMEOUT seconds (400; status 124); SAN_TESTS=0
#                skips memcheck over the whole device test suite, SAN_FILTER
#                runs it on the tests a Criterion glob names (e.g. 'gpu/[a-m]*':
#                the suite takes more than one call's 600 s under memcheck), each
#                test its own process, SAN_PAR at once (default 1); SAN_EXTRA more
#                bench flags, e.g. "--splits 1 --pack 2" for version 33's packs)
#   WORKLOADS="llama long"  KERNELS="1 2"  ITERS=30   pagefault bench runs
#   SPLIT_WORKLOADS="single seed"  SPLIT_KERNELS="5 6"  SPLITS="1 2 4"
#                the planner's split-KV overridden (bench --splits)
#   BENCH_EXTRA="--grid-order"  more flags for those bench runs and BLOCKS
#                (e.g. "--compare 18,12": versions side by side in one process)
#   TIMELINE="llama single"  TL_KERNELS="0 10"  bench --timeline runs; the
#                CSVs come back in timelines.tgz
#   BLOCKS=1     llama at block sizes 8..256, fp16 and bf16 (BLOCK_KERNEL, default 0)
#   NCU=1        Nsight Compute on one paged launch (NCU_KERNEL, default 0) of
#                each of NCU_WORKLOADS (default llama); NCU_SKIP=3 NCU_COUNT=3
#                takes the naive, ordered and shuffled launches of the first
#                warm-up round (default 4 1: the ordered one); NCU_SECTIONS
#                adds sections (e.g. "InstructionStats SchedulerStats");
#                NCU_STALLS=1 adds the warp stall reasons, cycles an issued
#                instruction (to this and to NCU_CUDNN)
#   NCU_SASS=1   the executed count of every SASS instruction of one llama
#                launch, ours (NCU_KERNEL, the shuffled pass) and cuDNN's ->
#                sass_ours.csv, sass_cudnn.csv (ncu's source page), and the
#                instruction-mix section of each -> sass_mix.txt
#   NCU_CUDNN="llama long"  Nsight Compute on PyTorch's cuDNN SDPA: one decode
#                call a workload (llama, long, batch or single; after 3
#                untimed), inside an NVTX range -> ncu.txt
#   PEERS=1      gpu/peers.py (PyTorch SDPA, flex_attention) beside ours
#                (PEERS_VERSIONS=0,7: our versions to run, default 0;
#                PEERS_WORKLOADS=single,llama: default all; PEERS_ARGS more
#                flags, e.g. --back-to-back)
#   PROFILE=1    pagefault bench --profile-out
#   SASS=1       cuobjdump -sass of one kernel (SASS_FUN, a regex of the
#                mangled name; default version 12's paged bf16 D128 tile-4
#                kernel, version 0's for llama) -> sass.txt, with an opcode count
#   PROBE=1      pagefault_stream_probe (v7's copy shape without the
#                arithmetic, beside read_bw; gpu/stream_probe.cu) -> probe.txt;
#                PROBE_PADS="0 2 2600": instead, one process per figure, each
#                allocating that many MB before its K and V (placement rows);
#                PROBE_TRANSLATION=1: instead, the translation rows (cudaMalloc
#                against a 512 MB-aligned driver mapping, shuffle windows);
#                PROBE_STEP=1: instead, the frame layout read in step by
#                thread-block clusters (PROBE_SHAPE, default "256 2": long)
#   LAUNCH=1     pagefault_launch_probe (a launch's host time by the way it is
#                made; gpu/launch_probe.cu), as is and pinned to CPU 3 -> launch.txt
set -u
OUT=${OUT:-/tmp/pagefault-device}
ITERS=${ITERS:-30}
mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 1
# xz through tar, or through Python's lzma where the image lacks xz
[ -x .dev-bin/pagefault ] || [ ! -f .dev-pack/bin.txz ] || tar xJf .dev-pack/bin.txz 2>/dev/null ||
    python3 -c "import tarfile; tarfile.open('.dev-pack/bin.txz').extractall()"
[ -x .dev-bin/pagefault ] || { echo "carry .dev-pack (run gpu/device_pack.sh first)"; exit 1; }
export LD_LIBRARY_PATH=$PWD/.dev-bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=$PWD/.dev-bin/pagefault
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem \
        --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    ldd "$BIN" | grep -i "not found"
    # registers and spills of the paged bf16 D128 group-4 kernels (llama's)
    cuobjdump --dump-resource-usage .dev-bin/libpagefault_gpu.so 2>&1 |
        grep -A1 -E "Function .*(attn_v7|attn_steal|attn_mma|attn_tma)I13__nv_bfloat16Li128ELi4ELb1E" |
        grep -oE "(attn_v7|attn_steal|attn_mma|attn_tma)I13__nv_bfloat16Li128ELi4ELb1E[^ :]*|REG:[0-9]+|STACK:[0-9]+|SHARED:[0-9]+|LOCAL:[0-9]+"
} >"$OUT/env.txt" 2>&1

if [ "${TESTS:-0}" = 1 ]; then
    {
        echo "== test_gpu"; .dev-bin/test_gpu --jobs=1; echo "test_gpu status $?"
        echo "== test_gpu_host"; .dev-bin/test_gpu_host; echo "test_gpu_host status $?"
        echo "== test_gpu_bench_cli"; sh tests/test_gpu_bench_cli.sh "$BIN"; echo "bench_cli status $?"
        # with a device, its --profile-out run takes the success path (the rename)
        echo "== test_cli_bench_files"; sh tests/test_cli_bench_files.sh "$BIN"; echo "bench_files status $?"
        for probe in stream_probe launch_probe; do
            echo "== test_$probe"; sh tests/test_probe_cli.sh $probe .dev-bin/pagefault_$probe
            echo "$probe test status $?"
        done
    } >"$OUT/tests.log" 2>&1
fi

if [ "${SAN:-0}" = 1 ]; then
    {
        for tool in memcheck racecheck; do
            for k in ${SAN_KERNELS:-1 4}; do
                for dt in ${SAN_DTYPES:-bf16}; do
                    echo "== $tool, kernel $k: GQA $dt with splits and an empty tail"
                    timeout ${SAN_TIMEOUT:-400} compute-sanitizer --tool $tool --error-exitcode 9 $BIN bench --kernel $k \
                        --lengths ${SAN_LENGTHS:-1,17,300,5000} --q-heads 8 --kv-heads 2 --head-dim 128 --dtype $dt \
                        --check-only ${SAN_EXTRA:-} 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|result"
                    echo "$tool kernel $k $dt status ${PIPESTATUS[0]}"
                done
            done
        done
        if [ "${SAN_TESTS:-1}" = 1 ]; then
            echo "== memcheck on the device tests ${SAN_FILTER:-(all)}, ${SAN_PAR:-1} at a time"
            # One compute-sanitizer process a test, SAN_PAR of them at once,
            # sharing the GPU: one at a time the suite outlasts a call under
            # memcheck (block_sizes alone took 105 s). How much side by side
            # saves is not yet measured: it does where the time is the
            # host's (the tool's work at each launch), not the GPU's.
            # Each test's log is its own file (a cut run's Criterion child
            # outlives compute-sanitizer and held a pipe's reader, and the
            # call, until the call's limit; what is left is killed after);
            # the logs are joined into memcheck.log, one test after another.
            mkdir -p "$OUT/mc"
            sed -n 's/^Test(gpu, *\([a-z_0-9]*\).*/gpu\/\1/p' tests/test_gpu.c |
                while read -r t; do
                    case "$t" in ${SAN_FILTER:-*}) echo "$t" ;; esac
                done |
                xargs -P "${SAN_PAR:-1}" -I{} sh -c 'n=$(basename {});
                    timeout '"${SAN_TIMEOUT:-400}"' compute-sanitizer --tool memcheck --error-exitcode 9 \
                        .dev-bin/test_gpu --jobs=1 --verbose --filter {} >"$1/mc/$n.log" 2>&1
                    echo "memcheck {} status $?" >>"$1/mc/$n.log"' sh "$OUT"
            pkill -f .dev-bin/test_gpu
            for f in "$OUT"/mc/*.log; do echo "=== $f"; cat "$f"; done >"$OUT/memcheck.log"
            rm -rf "$OUT/mc"
            grep -E "PASS|FAIL|CRASH|SUMMARY|Synthesis|memcheck gpu/" "$OUT/memcheck.log"
        fi
    } >"$OUT/extra.txt" 2>&1
fi

: >>"$OUT/bench.txt"
for w in ${WORKLOADS:-}; do
    for k in ${KERNELS:-0}; do
        echo "### pagefault bench --workload $w --kernel $k --iters $ITERS ${BENCH_EXTRA:-}" >>"$OUT/bench.txt"
        $BIN bench --workload $w --kernel $k --iters "$ITERS" ${BENCH_EXTRA:-} >>"$OUT/bench.txt" 2>&1
        echo "exit status $?" >>"$OUT/bench.txt"
    done
done
if [ -n "${TIMELINE:-}" ]; then
    mkdir -p "$OUT/tl"
    for w in $TIMELINE; do
        for k in ${TL_KERNELS:-0}; do
            echo "### pagefault bench --workload $w --kernel $k --iters 5 --no-read-bw --timeline tl/$w-v$k.csv" >>"$OUT/bench.txt"
            $BIN bench --workload $w --kernel $k --iters 5 --no-read-bw --timeline "$OUT/tl/$w-v$k.csv" >>"$OUT/bench.txt" 2>&1
            echo "exit status $?" >>"$OUT/bench.txt"
        done
    done
    tar czf "$OUT/timelines.tgz" -C "$OUT" tl && rm -rf "$OUT/tl"
fi
for w in ${SPLIT_WORKLOADS:-}; do
    for k in ${SPLIT_KERNELS:-0}; do
        for sp in ${SPLITS:-1 2 4 8 16}; do
            echo "### pagefault bench --workload $w --kernel $k --splits $sp --iters $ITERS --no-read-bw ${BENCH_EXTRA:-}" >>"$OUT/bench.txt"
            $BIN bench --workload $w --kernel $k --splits $sp --iters "$ITERS" --no-read-bw ${BENCH_EXTRA:-} >>"$OUT/bench.txt" 2>&1
            echo "exit status $?" >>"$OUT/bench.txt"
        done
    done
done
if [ "${BLOCKS:-0}" = 1 ]; then
    for dt in ${BLOCK_DTYPES:-bf16 fp16}; do
        for b in ${BLOCK_SIZES:-8 16 32 64 128 256}; do
            echo "### pagefault bench --workload llama --dtype $dt --block-size $b --kernel ${BLOCK_KERNEL:-0} --iters $ITERS ${BENCH_EXTRA:-}" >>"$OUT/bench.txt"
            $BIN bench --workload llama --dtype $dt --block-size $b --kernel ${BLOCK_KERNEL:-0} --iters "$ITERS" ${BENCH_EXTRA:-} >>"$OUT/bench.txt" 2>&1
            echo "exit status $?" >>"$OUT/bench.txt"
        done
    done
fi
# the stall reasons, each in warp cycles per issued instruction
stalls=(--metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio")
if [ "${NCU:-0}" = 1 ]; then
    : >"$OUT/ncu.txt"
    for w in ${NCU_WORKLOADS:-llama}; do
        echo "### ncu, launches ${NCU_SKIP:-4}+${NCU_COUNT:-1} of pagefault bench --workload $w --kernel ${NCU_KERNEL:-0}" >>"$OUT/ncu.txt"
        extra=()
        for sec in ${NCU_SECTIONS:-}; do extra+=(--section "$sec"); done
        [ "${NCU_STALLS:-0}" = 1 ] && extra+=("${stalls[@]}")
        ncu --clock-control none -k regex:"attn_(v|mma|steal|tma)" --launch-skip ${NCU_SKIP:-4} \
            --launch-count ${NCU_COUNT:-1} \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
            --section LaunchStats --section WarpStateStats "${extra[@]}" \
            $BIN bench --workload $w --kernel ${NCU_KERNEL:-0} --iters 2 --no-read-bw >>"$OUT/ncu.txt" 2>&1
        echo "ncu status $?" >>"$OUT/ncu.txt"
    done
fi
cudnn_extra=()
[ "${NCU_STALLS:-0}" = 1 ] && cudnn_extra=("${stalls[@]}")
# one cuDNN SDPA decode call of a workload (after 3 untimed) inside the NVTX
# range "prof", which the NCU_CUDNN and NCU_SASS stages profile
cudnn_py=$(cat <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
shapes = {"llama": (64, 4096), "long": (8, 32768), "batch": (256, 1024), "single": (1, 1024)}
if sys.argv[1] not in shapes:
    sys.exit(f"NCU_CUDNN: unknown workload {sys.argv[1]} (known: {', '.join(shapes)})")
S, L = shapes[sys.argv[1]]
q = torch.randn(S, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(S, 8, L, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("prof")
    F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
PY
)
for w in ${NCU_CUDNN:-}; do
    # the fifteenth session's look at cuDNN's decode kernel (docs/gpu-journal.md)
    echo "### ncu, PyTorch cuDNN SDPA on $w" >>"$OUT/ncu.txt"
    ncu --clock-control none --nvtx --nvtx-include "prof/" --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --section WarpStateStats --section SchedulerStats \
        "${cudnn_extra[@]}" python3 -c "$cudnn_py" "$w" >>"$OUT/ncu.txt" 2>&1
    echo "ncu status $?" >>"$OUT/ncu.txt"
done
if [ "${NCU_SASS:-0}" = 1 ]; then
    # the fifteenth session found cuDNN issuing half our instructions a
    # cycle; this counts which (twenty-second session)
    ncu --clock-control none -k regex:"attn_(v|mma|steal|tma)" --launch-skip 5 --launch-count 1 \
        --section InstructionStats --section SourceCounters -o "$OUT/ours" -f \
        $BIN bench --workload llama --kernel ${NCU_KERNEL:-0} --iters 2 --no-read-bw >/dev/null 2>"$OUT/sass_mix.txt"
    ncu --clock-control none --nvtx --nvtx-include "prof/" --section InstructionStats \
        --section SourceCounters -o "$OUT/cudnn" -f python3 -c "$cudnn_py" llama >/dev/null 2>>"$OUT/sass_mix.txt"
    for who in ours cudnn; do
        ncu --import "$OUT/$who.ncu-rep" --page source --print-source sass --csv >"$OUT/sass_$who.csv" 2>&1
        echo "### $who" >>"$OUT/sass_mix.txt"
        # the instruction mix as the opcode histogram, in case the source
        # page above is not there: InstructionStats' per-opcode instances
        ncu --import "$OUT/$who.ncu-rep" --page details --print-details all \
            --print-metric-instances values >>"$OUT/sass_mix.txt" 2>&1
        rm -f "$OUT/$who.ncu-rep"
    done
fi
if [ "${PEERS:-0}" = 1 ]; then
    PYTHONUNBUFFERED=1 python3 gpu/peers.py .dev-bin/libpagefault_gpu.so --versions "${PEERS_VERSIONS:-0}" \
        ${PEERS_WORKLOADS:+--workloads "$PEERS_WORKLOADS"} ${PEERS_ARGS:-} >"$OUT/peers.txt" 2>&1
    echo "peers status $?" >>"$OUT/peers.txt"
fi
if [ "${PROFILE:-0}" = 1 ]; then
    $BIN bench --workload single --iters "$ITERS" --profile-out "$OUT/profile.txt" >/dev/null 2>>"$OUT/env.txt"
    echo "profile status $?" >>"$OUT/env.txt"
fi

if [ "${SASS:-0}" = 1 ]; then
    fun=$(cuobjdump --dump-resource-usage .dev-bin/libpagefault_gpu.so 2>/dev/null |
        grep -oE "Function [^ :]+" | sed 's/Function //' |
        grep -E "${SASS_FUN:-attn_mmaI13__nv_bfloat16Li128ELi4ELb1ELi2ELi8ELb1ELb0ELb0ELi0EE}" | head -1)
    {
        echo "### $fun"
        cuobjdump -sass -fun "$fun" .dev-bin/libpagefault_gpu.so
    } >"$OUT/sass.txt" 2>&1
    {
        echo "### opcodes of $fun (static count)"
        grep -oE "^ +/\*[0-9a-f]+\*/ +(@!?U?P[0-9T] +)?[A-Z0-9_.]+" "$OUT/sass.txt" |
            awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn
    } >>"$OUT/sass.txt"
fi
if [ "${PROBE:-0}" = 1 ]; then
    if [ "${PROBE_STEP:-0}" = 1 ]; then
        .dev-bin/pagefault_stream_probe ${PROBE_SHAPE:-256 2} step >"$OUT/probe.txt" 2>&1
        echo "probe status $?" >>"$OUT/probe.txt"
    elif [ "${PROBE_TRANSLATION:-0}" = 1 ]; then
        .dev-bin/pagefault_stream_probe 512 1 translation >"$OUT/probe.txt" 2>&1
        echo "probe status $?" >>"$OUT/probe.txt"
    elif [ -n "${PROBE_PADS:-}" ]; then # placement: one process per pad (MB before K, V)
        for pad in $PROBE_PADS; do
            echo "=== pad $pad MB"
            .dev-bin/pagefault_stream_probe 512 1 "$pad"
            echo "probe status $?"
        done >"$OUT/probe.txt" 2>&1
    else
        .dev-bin/pagefault_stream_probe >"$OUT/probe.txt" 2>&1
        echo "probe status $?" >>"$OUT/probe.txt"
    fi
fi
if [ "${LAUNCH:-0}" = 1 ]; then
    {
        .dev-bin/pagefault_launch_probe "${LAUNCH_ROUNDS:-30}"
        echo "launch probe status $?"
        echo "== pinned to CPU 3 (taskset -c 3)"
        taskset -c 3 .dev-bin/pagefault_launch_probe "${LAUNCH_ROUNDS:-30}"
        echo "launch probe (pinned) status $?"
    } >"$OUT/launch.txt" 2>&1
fi

echo "== summary"
grep -A4 -E "attn_(v7|steal|mma|tma)I" "$OUT/env.txt" | head -40
[ -f "$OUT/tests.log" ] && grep -E "status|Synthesis|FAIL" "$OUT/tests.log"
[ -f "$OUT/extra.txt" ] && grep -E "status|SUMMARY" "$OUT/extra.txt"
grep -E "^### |exit status|read bandwidth|split-KV chunk|chunks of the|work-list|naive  |paged-ordered|paged-shuffled|/ v[0-9]+, |host time|result|thread blocks|SMs that|first start|start to first|block duration|median end to|SM time" "$OUT/bench.txt" |
    sed -E 's/  +/ /g' | head -400
[ -f "$OUT/ncu.txt" ] && grep -E "^### ncu|DRAM Throughput|Duration|SM Active Cycles|Elapsed Cycles|Achieved Occupancy|Registers Per|ncu status|unknown workload" "$OUT/ncu.txt" | head -100
[ -f "$OUT/peers.txt" ] && tail -30 "$OUT/peers.txt"
[ -f "$OUT/profile.txt" ] && cat "$OUT/profile.txt"
[ -f "$OUT/probe.txt" ] && cat "$OUT/probe.txt"
[ -f "$OUT/launch.txt" ] && cat "$OUT/launch.txt"
[ -f "$OUT/sass.txt" ] && grep -A12 "^### opcodes" "$OUT/sass.txt"
exit 0
