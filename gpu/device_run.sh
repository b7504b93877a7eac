#!/bin/bash
# gpu/device_run.sh - everything one GPU session needs, in one call: build
# (carried from gpu/device_pack.sh), the gpu-labelled tests, a memcheck pass, the ctypes
# example, and `pagefault bench` on every workload. Logs go to $OUT (at
# most 8 files come back from the device tool): env.txt, ctest.log,
# bench.txt (tables), bench.json, extra.txt. The last lines of stdout are a
# summary table. Usage: OUT=/some/dir [JSON=1] [VARIANTS=0] [TUNE=1] [PF0=1] gpu/device_run.sh [ITERS]
set -u
ITERS=${1:-50}
OUT=${OUT:-/tmp/pagefault-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/.." || exit 1

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem \
        --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    nproc
} >"$OUT/env.txt"

# The device image has no ncurses or Criterion: the binaries are built on
# the workstation by gpu/device_pack.sh (sm_90) and carried in build-gpu with
# the missing shared libraries in .devlib. CTest files name the workstation's
# absolute build path, so that path is linked to this checkout.
if [ ! -x build-gpu/pagefault ] || [ ! -d .devlib ]; then
    echo "carry build-gpu and .devlib (run gpu/device_pack.sh first)"; exit 1
fi
BUILD_ABS=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' build-gpu/CMakeCache.txt)
SRC_ABS=$(dirname "$BUILD_ABS")
if [ "$SRC_ABS" != "$PWD" ] && [ ! -e "$SRC_ABS" ]; then
    mkdir -p "$(dirname "$SRC_ABS")" && ln -s "$PWD" "$SRC_ABS"
fi
export LD_LIBRARY_PATH=$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=$PWD/build-gpu/pagefault
ldd "$BIN" | grep -i "not found" >>"$OUT/env.txt"

(cd build-gpu && ctest -L gpu --output-on-failure -j1 && ctest -R test_gpu_host --output-on-failure) \
    >"$OUT/ctest.log" 2>&1
echo "ctest status $?" >>"$OUT/ctest.log"

{
    echo "== memcheck: a small GQA bf16 shape with splits, and the seed workload"
    compute-sanitizer --tool memcheck --error-exitcode 9 $BIN bench --lengths 1,17,300,5000 \
        --q-heads 8 --kv-heads 2 --head-dim 128 --dtype bf16 --iters 1 --no-read-bw | tail -4
    echo "memcheck status ${PIPESTATUS[0]}"
    compute-sanitizer --tool memcheck --error-exitcode 9 $BIN bench --workload seed --seqs 8 \
        --iters 1 --no-read-bw | tail -3
    echo "memcheck status ${PIPESTATUS[0]}"
    echo "== ctypes example against torch SDPA"
    LD_LIBRARY_PATH= python3 gpu/examples/paged_attention_ctypes.py build-gpu/gpu/libpagefault_gpu.so 2>&1 | tail -3
    echo "example status ${PIPESTATUS[0]}"
} >"$OUT/extra.txt" 2>&1

: >"$OUT/bench.txt"
: >"$OUT/bench.json"
for w in seed llama mixed long single; do
    echo "### pagefault bench --workload $w --iters $ITERS" >>"$OUT/bench.txt"
    $BIN bench --workload $w --iters "$ITERS" >>"$OUT/bench.txt" 2>&1
    echo "exit status $?" >>"$OUT/bench.txt"
done
# PF0=1: the whole suite again with the register prefetch off (bench_pf0.txt)
if [ "${PF0:-0}" = 1 ]; then
    : >"$OUT/bench_pf0.txt"
    for w in seed llama mixed long single; do
        echo "### PF_GPU_PREFETCH=0 pagefault bench --workload $w --iters $ITERS" >>"$OUT/bench_pf0.txt"
        PF_GPU_PREFETCH=0 $BIN bench --workload $w --iters "$ITERS" >>"$OUT/bench_pf0.txt" 2>&1
        echo "exit status $?" >>"$OUT/bench_pf0.txt"
    done
fi
# the same in JSON (a second, independent run of each), when JSON=1
for w in $([ "${JSON:-0}" = 1 ] && echo seed llama mixed long single); do
    $BIN bench --workload $w --iters "$ITERS" --format json >>"$OUT/bench.json" 2>>"$OUT/bench.txt"
done
[ "${VARIANTS:-1}" = 1 ] && {
    echo "== variants of llama (block size, dtype)"
    for args in "--block-size 128" "--block-size 8" "--dtype fp16" "--dtype fp32"; do
        echo "### pagefault bench --workload llama --iters $ITERS $args"
        $BIN bench --workload llama --iters "$ITERS" $args | sed -n '/Attention latency/,/first failure\|result/p'
    done
} >>"$OUT/extra.txt" 2>&1

# TUNE=1: the tuning knobs of gpu/kernels.cu on the bandwidth-bound workloads
if [ "${TUNE:-0}" = 1 ]; then
    for cfg in "llama 0 8" "llama 1 8" "llama 1 16" "long 0 8" "long 1 8"; do
        set -- $cfg
        echo "### $1 PF_GPU_PREFETCH=$2 PF_GPU_WAVES=$3"
        PF_GPU_PREFETCH=$2 PF_GPU_WAVES=$3 $BIN bench --workload $1 --iters "$ITERS" |
            grep -E "split-KV chunk|naive  |paged-|slowdown|result"
    done >"$OUT/tune.txt" 2>&1
fi

echo "== summary"
grep -E "^(###|exit status)" "$OUT/bench.txt"
grep -E "naive  |paged-|slowdown|scattering|read bandwidth|result" "$OUT/bench.txt" | head -60
tail -3 "$OUT/ctest.log"
grep -E "status|max" "$OUT/extra.txt"
[ -f "$OUT/tune.txt" ] && cat "$OUT/tune.txt"
exit 0
