#!/bin/sh
# tests/test_launch_probe.sh PROBE - gpu/launch_probe.cu's exit statuses: 2
# and a usage line on stderr for bad arguments; a short run (3 rounds)
# prints a row of figures for each of the 7 ways of launching, with both
# argument blocks, and exits 0 on a device, 77 (ctest: skipped) without one.
bin="$1"
fails=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for args in "0" "x" "12abc" "10001" "-3" "1 2"; do
    # shellcheck disable=SC2086 # the words are separate arguments
    "$bin" $args >/dev/null 2>"$err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q "usage" "$err"; then
        echo "FAIL: launch_probe $args -> status $rc (want 2 and a usage line)"
        fails=$((fails + 1))
    fi
done
out=$("$bin" 3 2>"$err")
rc=$?
if [ $rc -eq 77 ]; then
    [ $fails -eq 0 ] || exit 1
    echo "skipped: $(cat "$err")"
    exit 77
fi
# a device: 7 ways x 2 argument blocks, each with min, median, p90, max
rows=$(printf '%s\n' "$out" | grep -cE '^  [a-z-]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$')
if [ $rc -ne 0 ] || [ "$rows" -ne 14 ]; then
    echo "FAIL: launch_probe 3 -> status $rc, $rows rows (want 0 and 14):"
    printf '%s\n' "$out"
    cat "$err"
    fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo ok
[ $fails -eq 0 ]
