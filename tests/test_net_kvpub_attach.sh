#!/bin/sh
# tests/test_net_kvpub_attach.sh - the round trip through the real command:
# tests/kvpub_feed runs a prefix-caching scheduler publishing its block
# events with net/kvpub (a stand-in for `sim --kv-events-publish`), and
# `pagefault attach --history --headless --format jsonl` reads them: the
# blocks stored, removed and held that attach prints equal the scheduler's
# own counts, with nothing lost (the whole run comes back by replay).
BIN=$1
FEED=$2
TMP=${TMPDIR:-/tmp}/pf_kvpub_attach_$$
fail() { echo "FAIL: $*"; [ -n "$FPID" ] && kill "$FPID" 2>/dev/null; rm -f "$TMP"; exit 1; }
"$FEED" 30 >"$TMP" &
FPID=$!
i=0
while [ ! -s "$TMP" ]; do
    i=$((i + 1))
    [ $i -gt 300 ] && fail "the feed printed nothing"
    kill -0 "$FPID" 2>/dev/null || fail "the feed ended early"
    sleep 0.1
done
read -r EP REP STORED REMOVED CACHED <"$TMP"
OUT=$(timeout 30 "$BIN" attach --kv-events "$EP" --replay "$REP" --history --headless --format jsonl \
      --tick-ms 200 --ticks 10 2>&1)
kill "$FPID" 2>/dev/null
wait "$FPID" 2>/dev/null
rm -f "$TMP"
LAST=$(echo "$OUT" | tail -1)
echo "$LAST" | grep -q "\"blocks_stored\":$STORED," || fail "stored: want $STORED in $LAST"
echo "$LAST" | grep -q "\"blocks_removed\":$REMOVED," || fail "removed: want $REMOVED in $LAST"
echo "$LAST" | grep -q "\"blocks_live\":$CACHED," || fail "live: want $CACHED in $LAST"
echo "$LAST" | grep -q '"removed_unknown":0,' || fail "removed blocks attach never saw stored: $LAST"
echo "$LAST" | grep -q '"lost":0' || fail "batches lost: $LAST"
echo "ok: attach saw $STORED stored, $REMOVED removed, $CACHED cached, as the scheduler"
