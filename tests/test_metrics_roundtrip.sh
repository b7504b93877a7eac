#!/bin/sh
# tests/test_metrics_roundtrip.sh - the live dashboard on vLLM's wire, read
# by `pagefault attach`: its --metrics-port page (running, waiting, KV usage
# and the TTFT histogram under vLLM's names) and its --kv-events-publish
# stream (the prefix cache's blocks stored). The dashboard runs in a private
# tmux server (it needs a terminal); skipped (77) without tmux.
BIN=$1
command -v tmux >/dev/null 2>&1 || { echo "skip: no tmux"; exit 77; }
T="tmux -L pf_metrics_$$"
fail() { echo "FAIL: $*"; $T kill-server 2>/dev/null; exit 1; }
# a port of our own: pick one in the dynamic range, retry if it is taken
for try in 1 2 3 4 5; do
    PORT=$(( 40000 + ($$ * 7 + try * 131) % 20000 ))
    EV=$((PORT + 1))
    $T kill-server 2>/dev/null
    $T new-session -d -s pf -x 120 -y 40 "'$BIN' --jobs 2000 --metrics-port $PORT --enable-prefix-caching \
        --shared-prefix-tokens 64 --prefix-groups 4 --kv-events-publish tcp://127.0.0.1:$EV; \
        echo PF_EXIT=\$?; sleep 60" || fail "cannot start tmux"
    sleep 2
    $T capture-pane -p -t pf | grep -q "cannot serve /metrics\|kv-events-publish" && continue
    break
done
OUT=$(timeout 20 "$BIN" attach --metrics "http://127.0.0.1:$PORT/metrics" --kv-events "tcp://127.0.0.1:$EV" \
      --headless --tick-ms 500 2>&1 | head -3)
echo "$OUT" | tail -1 | grep -q '"metric_polls":[1-9]' || fail "attach did not poll the dashboard's /metrics: $OUT"
echo "$OUT" | tail -1 | grep -Eq '"num_requests_running":[1-9]' || fail "no running requests seen: $OUT"
# any usage above 0 (a full pool reads exactly 1, as a CI run once saw)
echo "$OUT" | tail -1 | grep -Eq '"kv_cache_usage":(0\.[0-9]*[1-9]|1(\.0*)?)[,}]' ||
    fail "no KV usage seen: $OUT"
echo "$OUT" | tail -1 | grep -Eq '"events_stored":[1-9]' || fail "no block events from the dashboard: $OUT"
echo "$OUT" | tail -1 | grep -Eq '"ttft_p50_s":[0-9]' || fail "no TTFT histogram on the page: $OUT"
$T send-keys -t pf q
i=0
while ! $T capture-pane -p -t pf | grep -q "PF_EXIT=0"; do
    i=$((i + 1))
    [ $i -gt 50 ] && fail "q did not end the dashboard with status 0"
    sleep 0.2
done
$T kill-server
echo "ok: attach read the dashboard's /metrics on port $PORT and its block events on $EV"
