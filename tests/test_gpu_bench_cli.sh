#!/bin/sh
# tests/test_gpu_bench_cli.sh PAGEFAULT - `pagefault bench` exit statuses:
# 2 and one stderr line (nothing on stdout) for usage errors; for a small
# real run, 0 with a PASS report on a device or 3 with "no GPU:" without.
bin="$1"
fails=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

expect_usage() {
    "$bin" bench "$@" >"$out" 2>"$err"
    rc=$?
    if [ $rc -ne 2 ] || [ -s "$out" ] || [ "$(wc -l <"$err")" -ne 1 ]; then
        echo "FAIL: bench $* -> status $rc (want 2), stdout $(wc -c <"$out") bytes, stderr:"
        cat "$err"
        fails=$((fails + 1))
    fi
}
expect_usage --head-dim 96
expect_usage --q-heads 6 --kv-heads 4
expect_usage --block-size 4
expect_usage --dtype fp8
expect_usage --workload nope
expect_usage --len 10 --lengths 1,2
expect_usage --lengths 1,x
expect_usage --lengths 100,200 --max-len 150
expect_usage --kernel 99
expect_usage --splits 300
expect_usage --len 32768 --splits 2
expect_usage --profile-out /nonexistent-dir/profile.txt
expect_usage --timeline /nonexistent-dir/timeline.csv
expect_usage --kernel 11 --grid-order
expect_usage --workload llama --group-tile 3
expect_usage --workload llama --group-tile 8
expect_usage --shuffle-window 0
expect_usage --shuffle-window x
expect_usage --shuffle-seed 0 --shuffle-window 8
expect_usage --tail 0
expect_usage --tail 9
expect_usage --tail 2 --grid-order
expect_usage --tail 2 --kernel 9
expect_usage --tail 2 --kernel 14
expect_usage --compare ""
expect_usage --compare 999
expect_usage --compare 12,
expect_usage --compare ,12
expect_usage --compare 12,,18
expect_usage --compare -1
expect_usage --compare " 12"
expect_usage --compare 12x
expect_usage --compare 1,2,3,4
expect_usage --compare 99999999999999999999
expect_usage --kernel 12 --tail 2 --compare 14
expect_usage --compare 11 --grid-order
expect_usage --kv-layout nope
# flags the lengths or the plan would ignore or refuse, caught before any
# device work (the twenty-seventh session's review: they ran, or failed late
# with "--pack failed: invalid argument", exit 3 without a device)
expect_usage --seqs 10 --lengths 1,2
expect_usage --len 100 --mix-scale 4
expect_usage --lengths 5,6 --mix-scale 4
expect_usage --workload llama --kernel 33 --pack 5
expect_usage --kernel 33 --pack 4
expect_usage --workload llama --kernel 33 --pack 8
expect_usage --workload llama --kernel 33 --pack 4 --splits 2
expect_usage --workload llama --kernel 33 --pack 4 --tail 1
expect_usage --workload llama --kernel 9 --len 40000
expect_usage --workload llama --kernel 31 --splits 9
expect_usage --workload llama --kernel 9 --len 32641 --block-size 48
expect_usage --check-only --profile-out /tmp/pagefault-check-only.prof
expect_usage --check-only --layers 8
expect_usage --layers 1
expect_usage --layers 1001
expect_usage --layers x
tlu=$(mktemp -u)
expect_usage --kernel 6 --timeline "$tlu"
expect_usage --check-only --timeline "$tlu"
[ -e "$tlu" ] && { echo "FAIL: a usage error left a timeline behind"; fails=$((fails + 1)); rm -f "$tlu"; }

prof=$(mktemp -u)
"$bin" bench --workload seed --seqs 8 --iters 3 --format json --profile-out "$prof" >"$out" 2>"$err"
rc=$?
case $rc in
0)
    grep -q '"result": *"PASS"' "$out" || { echo "FAIL: status 0 without PASS"; cat "$out"; fails=$((fails + 1)); }
    # the read probe on: a stream of the pass's bytes beside the passes,
    # which no kernel that reads those bytes can beat by much
    pvs=$(sed -n 's/.*"paged_vs_stream": *\([0-9.e+-]*\).*/\1/p' "$out")
    awk -v v="$pvs" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 1.2) }' ||
        { echo "FAIL: paged_vs_stream = '$pvs'"; fails=$((fails + 1)); }
    # the profile: the format line, then each figure finite and positive
    grep -qx 'format = pagefault-gpu-profile/1' "$prof" || { echo "FAIL: profile format"; cat "$prof"; fails=$((fails + 1)); }
    for k in mem_read_gbps attn_kv_gbps attn_fixed_us; do
        v=$(sed -n "s/^$k = \([^ #]*\).*/\1/p" "$prof")
        awk -v v="$v" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 1e12) }' ||
            { echo "FAIL: profile $k = '$v'"; fails=$((fails + 1)); }
    done
    rm -f "$prof"
    ;;
3)
    grep -q "no GPU:" "$err" || { echo "FAIL: status 3 without 'no GPU:'"; cat "$err"; fails=$((fails + 1)); }
    [ -s "$out" ] && { echo "FAIL: status 3 printed on stdout"; fails=$((fails + 1)); }
    [ -e "$prof" ] && { echo "FAIL: a failed run left a profile behind"; fails=$((fails + 1)); rm -f "$prof"; }
    echo "no device: $(cat "$err")"
    ;;
*)
    echo "FAIL: bench --workload seed -> status $rc"
    cat "$err"
    fails=$((fails + 1))
    ;;
esac

# expect_pass LABEL PATTERNS ARGS...: bench ARGS --format json must, on a
# device, exit 0 with PASS and every line of PATTERNS (grep regexes) in its
# report; without one, exit 3 (the no-device case is checked above)
expect_pass() {
    label=$1 pats=$2
    shift 2
    "$bin" bench "$@" --format json >"$out" 2>"$err"
    rc=$?
    case $rc in
    0)
        missing=$(printf '%s\n"result": *"PASS"\n' "$pats" | while IFS= read -r p; do
            grep -q -- "$p" "$out" || echo "$p"
        done)
        [ -z "$missing" ] || { echo "FAIL: $label: no $missing"; cat "$out" "$err"; fails=$((fails + 1)); }
        ;;
    3) ;;
    *)
        echo "FAIL: bench $label -> status $rc"
        cat "$err"
        fails=$((fails + 1))
        ;;
    esac
}

# frames shuffled within runs of 3: still every frame once (the pool
# read-back and the checks pass), and the report names the window
expect_pass "--shuffle-window 3" '"shuffle_window": *3' --workload seed --seqs 8 --iters 2 \
    --no-read-bw --shuffle-window 3
# a tail (each block's last eighth as 4 blocks of its own, 128-token
# chunks): the checks pass on the units' partials, and the report names it
expect_pass "--tail 4" '"tail": *4
"chunk": *128' --workload llama --seqs 4 --kernel 12 --splits 1 --tail 4 --iters 2 --no-read-bw

# --compare: each version checked (its keys in the report) and timed in
# the same round-robin; a repeat of --kernel is allowed (the noise floor)
expect_pass "--compare" '"c1_version": *18
"c2_version": *12
"c1_shuffled_ratio": *[0-9]
"c2_max_err_ref"
"c2_max_diff_base": *0[,}]
"pass": *"v18 paged-shuffled"' --workload llama --seqs 4 --len 1000 --kernel 12 --compare 18,12 \
    --iters 3 --no-read-bw

# --check-only: every version checked, nothing timed: no timing table, no
# ratio, no host time in the report (a key's absence is the point)
expect_pass "--check-only" '"c1_version": *19
"c1_max_err_ref"
"c2_max_diff_shuffled": *0[,}]*$' --workload llama --seqs 2 --len 700 --check-only --compare 19,9
if [ $rc -eq 0 ] && grep -qE '"(median_ms|paged_slowdown|host_us_per_run|c1_naive_ratio)"' "$out"; then
    echo "FAIL: --check-only reported a time"
    fails=$((fails + 1))
fi

# the pools in FlashInfer's layout: the checks pass and the report names it
expect_pass "--kv-layout interleaved" '"kv_layout": *"interleaved' --workload seed --seqs 8 \
    --iters 2 --no-read-bw --kv-layout interleaved

# the block timeline: on a device, one CSV line a block, each block's
# start <= first tile <= last tile <= end, as many as the report's tl_blocks
tl=$(mktemp -u)
"$bin" bench --workload single --iters 3 --no-read-bw --format json --timeline "$tl" >"$out" 2>"$err"
rc=$?
case $rc in
0)
    blocks=$(sed -n 's/.*"tl_blocks": *\([0-9]*\).*/\1/p' "$out")
    [ "$(head -n 1 "$tl")" = "block,sm,start_us,ready_us,streamed_us,end_us" ] || { echo "FAIL: timeline header"; fails=$((fails + 1)); }
    lines=$(($(wc -l <"$tl") - 1))
    [ -n "$blocks" ] && [ "$lines" -eq "$blocks" ] && [ "$blocks" -gt 0 ] ||
        { echo "FAIL: timeline has $lines blocks, the report says '$blocks'"; fails=$((fails + 1)); }
    awk -F, 'NR > 1 && !($3 <= $6 && ($4 == "" ? $5 == "" : ($3 <= $4 && $4 <= $5 && $5 <= $6)) && $2 >= 0) { bad++ }
             END { exit bad > 0 }' "$tl" || { echo "FAIL: a timeline record out of order"; fails=$((fails + 1)); }
    rm -f "$tl"
    ;;
3)
    [ -e "$tl" ] && { echo "FAIL: a failed run left a timeline behind"; fails=$((fails + 1)); rm -f "$tl"; }
    ;;
*)
    echo "FAIL: bench --workload single --timeline -> status $rc"
    cat "$err"
    fails=$((fails + 1))
    ;;
esac
[ $fails -eq 0 ] && echo "ok"
exit $((fails > 0))
