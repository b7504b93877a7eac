#!/bin/sh
# tests/test_net_attach_cli.sh - `pagefault attach` usage errors: exit 2, one
# line on stderr naming the problem, nothing on stdout; and a headless run
# against nothing listening ends after --ticks with one JSON line per tick.
bin=$1
fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

usage() { # expected-substring args...
    want=$1
    shift
    "$bin" attach "$@" >"$out" 2>"$err"
    rc=$?
    if [ $rc -ne 2 ] || [ -s "$out" ] || [ "$(wc -l <"$err")" -ne 1 ] || ! grep -q -- "$want" "$err"; then
        echo "FAIL: attach $*: rc=$rc, stderr: $(cat "$err"), stdout: $(head -c 200 "$out")"
        fail=1
    fi
}

usage "give --kv-events"
usage "kv-events" --kv-events http://127.0.0.1:5557
usage "kv-events" --kv-events tcp://127.0.0.1:99999
usage "kv-events" --kv-events tcp://127.0.0.1:65535 --dp-ranks 2
usage "kv-events" --kv-events tcp://127.0.0.1
usage "dp-ranks" --kv-events tcp://127.0.0.1:5557 --dp-ranks 0
usage "dp-ranks" --kv-events tcp://127.0.0.1:5557 --dp-ranks 65
usage "metrics" --metrics 127.0.0.1:8000/metrics
usage "replay" --replay tcp://127.0.0.1:5558
usage "history" --kv-events tcp://127.0.0.1:5557 --history
usage "tick-ms" --kv-events tcp://127.0.0.1:5557 --tick-ms 0
usage "format" --kv-events tcp://127.0.0.1:5557 --headless --format xml

"$bin" attach --kv-events tcp://127.0.0.1:1 --metrics http://127.0.0.1:1/metrics --headless --ticks 3 \
    --tick-ms 50 >"$out" 2>"$err"
rc=$?
n=$(grep -c '^{"tick":[0-9]*,.*"warnings":{.*}}$' "$out")
if [ $rc -ne 0 ] || [ "$n" -ne 3 ] || ! grep -q '"metrics_failed":[1-9]' "$out"; then
    echo "FAIL: headless run against nothing: rc=$rc, $n JSON lines, stderr: $(cat "$err")"
    fail=1
fi
exit $fail
