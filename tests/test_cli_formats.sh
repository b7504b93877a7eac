#!/bin/sh
# tests/test_cli_formats.sh BIN - the outputs a script reads (issue 8 points
# 11-13), checked by a script: `calc` and `sim` CSV read by pandas.read_csv
# with no options (or the csv module when pandas is absent: every record
# the header's width), JSON parsed strictly with sweep values as numbers,
# and a trace read once from a pipe (/dev/stdin, and bash's <(...) when
# bash is there) across a sweep; a pool too small for naive refused naming
# the flags; issue 9's three tables (results, latency, kv_memory) and its
# flags in both formats. Skips (77) without python3.
set -u
BIN=${1:?usage: test_cli_formats.sh PATH_TO_PAGEFAULT}
HERE=$(dirname "$0")
# Debian's python3 first: it is the one python3-pandas installs into.
PY=
for p in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
    if [ -n "$p" ] && [ -x "$p" ]; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "python3 not found: skipped"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

SIM="--jobs 48 --workers 16 --pool-blocks 256"
"$BIN" calc --format csv >"$TMP/calc.csv" || fail "calc csv"
"$BIN" calc --model llama3-70b --lengths 1,16,17,100 --format csv >"$TMP/calc70.csv" || fail "calc model csv"
"$BIN" calc --format json >"$TMP/calc.json" || fail "calc json"
"$BIN" sim $SIM --sweep watermark=0,0.05,0.3 --format csv >"$TMP/sim.csv" 2>/dev/null || fail "sim csv"
"$BIN" sim $SIM --sweep watermark=0,0.05,0.3 --format json >"$TMP/sim.json" 2>/dev/null || fail "sim json"
"$BIN" sim $SIM --format csv >"$TMP/sim1.csv" || fail "sim csv without a sweep"
# issue 9's flags in both formats: rates and shares with nothing to divide
# (no prefix queries, no SLO) must still be numbers, never NaN
ISSUE9="--watermark auto --enable-prefix-caching --shared-prefix-tokens 64 --prefix-groups 2 --n 2 --slo-ttft 0.05 --slo-tpot 0.01"
"$BIN" sim $SIM $ISSUE9 --format csv >"$TMP/sim9.csv" || fail "sim csv, issue 9 flags"
"$BIN" sim $SIM $ISSUE9 --format json >"$TMP/sim9.json" || fail "sim json, issue 9 flags"
"$BIN" sim $SIM --naive-reserve oracle --scheduler seed --format json >"$TMP/sim9b.json" || fail "sim json, seed rules"
# the swept flag is a column of its own, not also a (base) config column
head -1 "$TMP/sim.csv" | grep -q '^watermark,mode,' || fail "sweep column first: $(head -1 "$TMP/sim.csv")"
head -1 "$TMP/sim.csv" | grep -q 'config\.watermark' && fail "swept watermark also in config"
head -1 "$TMP/sim1.csv" | grep -q ',config\.watermark,' || fail "config.watermark without a sweep"
# a swept keyword (watermark=auto) is not the number 0: the auto point's
# rows read "0", the same as the watermark=0 point's beside them
"$BIN" sim $SIM --sweep watermark=auto,0 --format csv >"$TMP/simauto.csv" 2>/dev/null || fail "sim csv, watermark=auto swept"
first=$(sed -n 2p "$TMP/simauto.csv" | cut -d, -f1)
[ "$first" != "0" ] || fail "--sweep watermark=auto reported as watermark 0 in csv"

# A trace through a pipe, swept: read once, parsed for each point.
TRACE='arrival,prompt,output\n0,100,50\n3,30,20\n5,900,40\n9,10,10\n'
printf "$TRACE" | "$BIN" sim --trace /dev/stdin --sweep max-len=200,1000 --format csv \
    >"$TMP/pipe.csv" 2>"$TMP/pipe.err" || fail "--trace /dev/stdin with a sweep: $(cat "$TMP/pipe.err")"
# max-len 200 drops the 940-token request; 1000 keeps it: the two points
# really parsed the same bytes with their own limit.
grep -q '^200,naive,' "$TMP/pipe.csv" && grep -q '^1000,naive,' "$TMP/pipe.csv" ||
    fail "a row per swept max-len: $(cat "$TMP/pipe.csv")"
if command -v bash >/dev/null 2>&1; then
    bash -c "\"\$0\" sim --trace <(printf '$TRACE') --sweep watermark=0,0.1 --format csv" "$BIN" \
        >"$TMP/procsub.csv" 2>"$TMP/procsub.err" || fail "--trace <(...) with a sweep: $(cat "$TMP/procsub.err")"
    set -- --csv "$TMP/procsub.csv"
else
    set --
fi

# A pool too small for one naive reservation is a usage error naming the
# flags, before anything runs (also at any point of a sweep).
for args in "--pool-blocks 100" "--jobs 8 --sweep pool-blocks=4096,100"; do
    "$BIN" sim $args >"$TMP/o" 2>"$TMP/e"
    rc=$?
    [ $rc -eq 2 ] || fail "sim $args: exit $rc, expected 2"
    [ -s "$TMP/o" ] && fail "sim $args: printed on stdout"
    grep -q -- '--pool-blocks 100 cannot hold one naive reservation: --max-len 2048' "$TMP/e" ||
        fail "sim $args: $(cat "$TMP/e")"
    [ "$(wc -l <"$TMP/e")" -eq 1 ] || fail "sim $args: not one line: $(cat "$TMP/e")"
done

"$PY" "$HERE/check_formats.py" "$@" --csv "$TMP/calc.csv" "$TMP/calc70.csv" "$TMP/sim.csv" \
    "$TMP/sim1.csv" "$TMP/sim9.csv" "$TMP/pipe.csv" --json "$TMP/calc.json" "$TMP/sim.json" \
    "$TMP/sim9.json" "$TMP/sim9b.json" || exit 1
echo "PASS"
