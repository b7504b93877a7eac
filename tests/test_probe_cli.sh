#!/bin/sh
# tests/test_probe_cli.sh NAME PROBE "RUN ARGS" ROW_REGEX MIN_ROWS MAX_ROWS BAD...
# A device probe's exit statuses (gpu/stream_probe.cu, gpu/launch_probe.cu):
# each BAD (one string, split into words) must exit 2 with a usage line on
# stderr; a short real run (RUN ARGS) must print between MIN_ROWS and
# MAX_ROWS lines matching ROW_REGEX (its table of figures) and exit 0 on a
# device, or exit 77 (ctest: skipped) without one.
name="$1"
bin="$2"
run="$3"
rowre="$4"
min="$5"
max="$6"
shift 6
fails=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for args in "$@"; do
    # shellcheck disable=SC2086 # the words are separate arguments
    "$bin" $args >/dev/null 2>"$err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q "usage" "$err"; then
        echo "FAIL: $name $args -> status $rc (want 2 and a usage line)"
        fails=$((fails + 1))
    fi
done
# shellcheck disable=SC2086
out=$("$bin" $run 2>"$err")
rc=$?
if [ $rc -eq 77 ]; then
    [ $fails -eq 0 ] || exit 1
    echo "skipped: $(cat "$err")"
    exit 77
fi
rows=$(printf '%s\n' "$out" | grep -cE "$rowre")
if [ $rc -ne 0 ] || [ "$rows" -lt "$min" ] || [ "$rows" -gt "$max" ]; then
    echo "FAIL: $name $run -> status $rc, $rows rows (want 0 and $min to $max):"
    printf '%s\n' "$out"
    cat "$err"
    fails=$((fails + 1))
fi
[ $fails -eq 0 ] && echo ok
[ $fails -eq 0 ]
