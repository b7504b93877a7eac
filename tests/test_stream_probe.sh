#!/bin/sh
# tests/test_stream_probe.sh PROBE - gpu/stream_probe.cu's exit statuses:
# 2 and a usage line on stderr for bad arguments; a real run (a small one:
# 64 streams of 1 MB) prints its table and exits 0 on a device, 77 (ctest:
# skipped) without one.
bin="$1"
fails=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for args in "0" "x" "12abc" "5000" "1 3" "1 1 1"; do
    # shellcheck disable=SC2086 # the words are separate arguments
    "$bin" $args >/dev/null 2>"$err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q "usage" "$err"; then
        echo "FAIL: stream_probe $args -> status $rc (want 2 and a usage line)"
        fails=$((fails + 1))
    fi
done
out=$("$bin" 64 1 2>"$err")
rc=$?
if [ $rc -eq 77 ]; then
    [ $fails -eq 0 ] || exit 1
    echo "skipped: $(cat "$err")"
    exit 77
fi
# a device: every configuration row has a figure against read_bw
rows=$(printf '%s\n' "$out" | grep -cE '/SM +[0-9.]+ +[0-9]+ +[0-9.]+$')
if [ $rc -ne 0 ] || [ "$rows" -lt 20 ]; then
    echo "FAIL: stream_probe 64 1 -> status $rc, $rows rows (want 0 and 20 or more):"
    printf '%s\n' "$out"
    cat "$err"
    fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo ok
[ $fails -eq 0 ]
