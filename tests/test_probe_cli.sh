#!/bin/sh
# tests/test_probe_cli.sh NAME PROBE - a device probe's exit statuses, with
# each probe's expectations here, in one place (tests/gpu.cmake and
# gpu/device_run.sh both run it): every bad argument list must exit 2 with
# a usage line on stderr; a short real run must print its table (between
# MIN and MAX lines matching ROWS) and exit 0 on a device, or exit 77
# (ctest: skipped) without one.
#   stream_probe (gpu/stream_probe.cu): 64 streams of 1 MB; every
#                configuration row has a figure against read_bw; then the
#                same with a pad of 0 MB (the thirteenth and fourteenth
#                sessions' rows: 27 of them) and with the word translation
#                (the seventeenth session's: 20)
#   launch_probe (gpu/launch_probe.cu): 3 rounds; 10 ways x 2 argument
#                blocks, each with min, median, p90 and max
name="$1"
bin="$2"
case "$name" in
stream_probe)
    runs="64 1:20:1000;64 1 0:27:27;64 1 translation:20:20" rows='/SM +[0-9.]+ +[0-9]+ +[0-9.]+$'
    set -- "0" "x" "12abc" "5000" "1 3" "1 1 -1" "1 1 x" "1 1 1 1" "1 1 translation 1"
    ;;
launch_probe)
    runs="3:20:20" rows='^  [a-z-]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$'
    set -- "0" "x" "12abc" "10001" "-3" "1 2"
    ;;
*)
    echo "usage: test_probe_cli.sh stream_probe|launch_probe PROBE" >&2
    exit 2
    ;;
esac
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
# each real run is ARGS:MIN:MAX, the runs separated by ';'
old_ifs=$IFS
IFS=';'
for spec in $runs; do
    IFS=$old_ifs
    run=${spec%%:*} rest=${spec#*:}
    min=${rest%%:*} max=${rest#*:}
    # shellcheck disable=SC2086
    out=$("$bin" $run 2>"$err")
    rc=$?
    if [ $rc -eq 77 ]; then
        [ $fails -eq 0 ] || exit 1
        echo "skipped: $(cat "$err")"
        exit 77
    fi
    n=$(printf '%s\n' "$out" | grep -cE "$rows")
    if [ $rc -ne 0 ] || [ "$n" -lt "$min" ] || [ "$n" -gt "$max" ]; then
        echo "FAIL: $name $run -> status $rc, $n rows (want 0 and $min to $max):"
        printf '%s\n' "$out"
        cat "$err"
        fails=$((fails + 1))
    fi
done
[ $fails -eq 0 ] && echo ok
[ $fails -eq 0 ]
