#!/bin/sh
# tests/test_sim_publish.sh - `pagefault sim` on vLLM's wire, read back by
# `pagefault attach` over real sockets (issue 13, point 3): the simulator
# publishes its prefix cache's block events (ZeroMQ PUB + replay ROUTER) and
# serves /metrics while its paged run is paced; attach subscribes, asks for
# the history it missed, polls /metrics, and its last jsonl line must agree
# with the figures `sim` itself prints: the prefix-cache hit rate, the
# preemptions, and block events with none lost. Exit 77 when the ports
# cannot be had (a busy machine), 1 on a mismatch.
BIN=$1
TMP=${TMPDIR:-/tmp}/pf_publish_$$
mkdir -p "$TMP"
trap 'rm -rf "$TMP"; kill $APID 2>/dev/null' EXIT
fail() { echo "FAIL: $*"; exit 1; }
BASE=$(( 30000 + ($$ * 13) % 20000 ))
EV=$BASE; RP=$((BASE + 1)); MP=$((BASE + 2))
"$BIN" attach --kv-events tcp://127.0.0.1:$EV --replay tcp://127.0.0.1:$RP --history \
    --metrics http://127.0.0.1:$MP/metrics --headless --tick-ms 200 --ticks 60 \
    >"$TMP/attach.jsonl" 2>"$TMP/attach.err" &
APID=$!
sleep 0.5
# a small pool so that requests are preempted, shared system prompts so
# that they hit; one step per millisecond of wall time, then 3 s of replay
"$BIN" sim --jobs 300 --pool-blocks 600 --enable-prefix-caching --shared-prefix-tokens 128 \
    --prefix-groups 3 --kv-events-publish tcp://127.0.0.1:$EV --kv-events-replay tcp://127.0.0.1:$RP \
    --metrics-port $MP --tick-us 1000 --linger 3 --format csv >"$TMP/sim.csv" 2>"$TMP/sim.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "Address already in use\|cannot serve" "$TMP/sim.err"; then
    echo "skip: ports $EV-$MP taken"; exit 77
fi
[ $rc -eq 0 ] || fail "sim exited $rc: $(cat "$TMP/sim.err")"
wait $APID
python3 - "$TMP/sim.csv" "$TMP/attach.jsonl" <<'PY' || exit 1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def val(table, key):
    return float(next(r for r in rows if r["table"] == table and r["mode"] == "paged")[key])
last = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
w = last["warnings"]
checks = [
    (last["events_stored"] > 0, "attach saw no BlockStored"),
    (last["blocks_removed"] > 0, "attach saw no BlockRemoved (the pool is small: blocks are evicted)"),
    (w["lost"] == 0 and w["malformed"] == 0 and w["bad_events"] == 0, "lost or bad batches: %s" % w),
    (last["prefixes_live"] >= 1, "no prefix chain live"),
    (abs(last["prefix_cache_hit_rate"] - val("kv_memory", "prefix_cache_hit_rate")) < 1e-6,
     "hit rate %s at attach, %s in sim" % (last["prefix_cache_hit_rate"],
                                           val("kv_memory", "prefix_cache_hit_rate"))),
    (last["num_preemptions"] == val("results", "num_preemptions") and last["num_preemptions"] > 0,
     "preemptions %s at attach, %s in sim" % (last["num_preemptions"],
                                              val("results", "num_preemptions"))),
]
bad = [m for ok, m in checks if not ok]
if bad:
    print("FAIL: " + "; ".join(bad)); sys.exit(1)
print("ok: %d stored, %d removed events; hit rate %.4f; %d preemptions" %
      (last["events_stored"], last["blocks_removed"], last["prefix_cache_hit_rate"],
       last["num_preemptions"]))
PY
