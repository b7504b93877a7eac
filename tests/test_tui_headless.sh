#!/bin/sh
# tests/test_tui_headless.sh BIN - `pagefault --headless`: frames every K
# ticks plus a final summary, the same bytes on every run (deterministic
# engine), ASCII when asked, and usage errors with exit status 2.
set -u
BIN=${1:?usage: test_tui_headless.sh PATH_TO_PAGEFAULT}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" --headless --ticks 60 --dump-every 20 >"$TMP/a" 2>"$TMP/err" || fail "headless run failed: $(cat "$TMP/err")"
for t in 20 40 60; do
    grep -qx -- "--- tick $t ---" "$TMP/a" || fail "no frame at tick $t"
done
[ "$(grep -c -- '^--- tick' "$TMP/a")" -eq 3 ] || fail "expected exactly 3 frames"
grep -q '^summary after 60 ticks (step 60)' "$TMP/a" || fail "no summary"
grep -q 'step 40 | ' "$TMP/a" || fail "the tick-40 frame does not show step 40"
# each frame is the screen: 40 rows of at most 120 columns
awk '/^--- tick/ { n = 0; next } /^summary/ { exit } { n++; if (n > 40) bad = 1 } END { exit bad }' "$TMP/a" ||
    fail "a frame has more than 40 rows"
"$BIN" --headless --ticks 60 --dump-every 20 >"$TMP/b" 2>/dev/null
cmp -s "$TMP/a" "$TMP/b" || fail "two runs differ"

"$BIN" --headless --ticks 10 --ascii --mode naive --width 80 --height 24 >"$TMP/c" || fail "ascii run failed"
LC_ALL=C grep -q '[^ -~]' "$TMP/c" && fail "non-ASCII bytes with --ascii"
grep -q '^+ reserved' "$TMP/c" || grep -q ' + reserved' "$TMP/c" || fail "no ASCII legend"
grep -q '| NAIVE |' "$TMP/c" || fail "naive mode not in the header"

for args in "--dump-every 5" "--headless --width 60" "--headless --ticks -1" "--watermark 1.5" \
            "--policy nope" "--headless --ticks"; do
    # shellcheck disable=SC2086
    "$BIN" $args >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "'$args': exit $rc, want 2"
    [ -s "$TMP/out" ] && fail "'$args': printed on stdout"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "'$args': want one line on stderr, got: $(cat "$TMP/err")"
done
echo PASS
