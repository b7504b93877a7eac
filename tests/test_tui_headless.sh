#!/bin/sh
# tests/test_tui_headless.sh BIN - `pagefault --headless`: frames every K
# ticks plus a final summary, the same bytes on every run (deterministic
# engine), ASCII when asked or under a non-UTF-8 locale, usage errors with
# exit status 2, and an unwritable stdout reported (not exit 0).
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
grep -q '^summary after 60 ticks (step 60, ' "$TMP/a" || fail "no summary"
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

# ASCII fallback without being asked: a non-UTF-8 locale gets ASCII glyphs
LC_ALL=C LANG=C "$BIN" --headless --ticks 10 --width 80 --height 24 >"$TMP/d" || fail "C-locale run failed"
LC_ALL=C grep -q '[^ -~]' "$TMP/d" && fail "non-ASCII bytes under LC_ALL=C"
grep -q '# used' "$TMP/d" || fail "no ASCII legend under LC_ALL=C"

# --engine threaded is refused, not silently replaced, under --headless, and
# so are --threads and --tick-us, which it would ignore
for args in "--dump-every 5" "--headless --width 60" "--headless --ticks -1" "--watermark 1.5" \
            "--policy nope" "--headless --ticks" "--headless --engine threaded" \
            "--headless --threads 2" "--headless --tick-us 5"; do
    # shellcheck disable=SC2086
    "$BIN" $args >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "'$args': exit $rc, want 2"
    [ -s "$TMP/out" ] && fail "'$args': printed on stdout"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "'$args': want one line on stderr, got: $(cat "$TMP/err")"
done
# a run whose jobs can never be admitted (watermark 1 keeps the whole pool
# free) ends instead of stepping forever: the simulator aborts those jobs
# (issue 8 point 1) and the run is over; with --ticks it is shown
if command -v timeout >/dev/null 2>&1; then
    timeout 30 "$BIN" --headless --watermark 1 --jobs 5 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 0 ] || fail "never-admissible headless run: exit $rc, want 0: $(cat "$TMP/err")"
    timeout 30 "$BIN" --headless --watermark 1 --jobs 5 --ticks 5 >"$TMP/out" 2>&1 ||
        fail "never-admissible run with --ticks failed: $(cat "$TMP/out")"
fi

# --format jsonl: one JSON object per dumped frame, the last one final,
# nothing else on stdout; the same bytes on every run
"$BIN" --headless --ticks 300 --dump-every 100 --format jsonl >"$TMP/j" 2>"$TMP/err" ||
    fail "jsonl run failed: $(cat "$TMP/err")"
[ "$(wc -l <"$TMP/j")" -eq 3 ] || fail "jsonl: want 3 lines (100, 200, final 300), got $(wc -l <"$TMP/j")"
grep -vq '^{.*}$' "$TMP/j" && fail "jsonl: a line is not one object"
tail -n 1 "$TMP/j" | grep -q '"step":300,.*"final":true' || fail "jsonl: last line not the final step 300"
head -n 1 "$TMP/j" | grep -q '"step":100,.*"final":false' || fail "jsonl: first line not step 100"
grep -q '"frames":{"free":[0-9]*,"used":[0-9]*,"reserved":0,"shared":0,"swapped":0,"cached":0}' "$TMP/j" ||
    fail "jsonl: no per-state frame counts"
if command -v python3 >/dev/null 2>&1; then
    python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    f = r["frames"]
    assert sum(f.values()) == 4096, f
    assert f["used"] + f["reserved"] + f["shared"] + f["swapped"] == r["pool_used"], r
    assert isinstance(r["kv_util"], float) and 0 < r["kv_util"] <= 1, r["kv_util"]
assert [r["step"] for r in rows] == [100, 200, 300]
# time in simulated seconds, rising, and the owner states include prefilling
assert all(r["time_unit"] == "s" and r["v"] == 2 for r in rows)
assert 0 < rows[0]["time"] < rows[1]["time"] < rows[2]["time"], [r["time"] for r in rows]
assert "prefilling" in rows[0]["frames_by_owner_state"]
assert rows[-1]["throughput_vs_naive"] > 0, "headless has the naive baseline"
' "$TMP/j" || fail "jsonl: the objects do not add up"
fi
"$BIN" --headless --ticks 300 --dump-every 100 --format jsonl >"$TMP/j2" 2>/dev/null
cmp -s "$TMP/j" "$TMP/j2" || fail "jsonl: two runs differ"
# naive: util is tokens over the held frames' capacity, not the pool's fill
"$BIN" --headless --ticks 300 --mode naive --format jsonl >"$TMP/n" || fail "naive jsonl failed"
grep -q '"kv_usage":1,' "$TMP/n" || fail "naive: the pool should be full of reservations"
grep -q '"kv_util":0\.[0-3]' "$TMP/n" || fail "naive: util should be low: $(cat "$TMP/n")"
"$BIN" --headless --ticks 300 --mode naive --dump-every 0 >"$TMP/n" || fail "naive run failed"
grep -q 'util *100\.0%' "$TMP/n" && fail "naive shows util 100%"
# the other views headless: colour by state, the charts over a window
"$BIN" --headless --ticks 600 --watermark 0 --coloring state --width 100 --height 30 >"$TMP/s" ||
    fail "--coloring state failed"
grep -q 'Pool by state' "$TMP/s" && grep -q 'stalled' "$TMP/s" || fail "--coloring state: no state legend"
"$BIN" --headless --ticks 600 --charts --window 16 >"$TMP/c2" || fail "--charts failed"
grep -q 'Charts over the last 16 s of simulated time' "$TMP/c2" || fail "--charts: no charts"
grep -q -- '-16 s' "$TMP/c2" || fail "--charts: no time axis in seconds"
grep -q 'tokens/s' "$TMP/c2" && grep -q 'TTFT p99' "$TMP/c2" || fail "--charts: tokens/s or TTFT p99 missing"
grep -q 'x naive, .* preempt/s | run: ' "$TMP/c2" || fail "--charts: no window rates beside the run's"
for args in "--format jsonl" "--headless --format xml" "--window 0.1" "--coloring nope"; do
    # shellcheck disable=SC2086
    "$BIN" $args >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "'$args': exit $rc, want 2"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "'$args': want one line on stderr"
done

# no colour (NO_COLOR, --no-color): every colouring still reads on the text
# alone: the owner colouring draws letters, the age colouring digits, the
# state colouring a glyph per state, and each legend says so
NO_COLOR=1 "$BIN" --headless --ticks 300 --dump-every 0 --ascii >"$TMP/nc" || fail "NO_COLOR run failed"
grep -q 'a used (letter: owner)' "$TMP/nc" || fail "NO_COLOR: the legend does not say letters are owners"
[ "$(sed -n '5,13p' "$TMP/nc" | cut -c1-79 | tr -cd 'a-z' | fold -w1 | sort -u | wc -l)" -ge 10 ] ||
    fail "NO_COLOR: the grid does not tell owners apart by letter"
"$BIN" --headless --ticks 300 --dump-every 0 --ascii >"$TMP/col" || fail "colour run failed"
sed -n '5,13p' "$TMP/col" | cut -c1-79 | grep -q '[a-z]' && fail "with colour the grid is glyphs, not letters"
"$BIN" --headless --ticks 300 --dump-every 0 --ascii --no-color --coloring age >"$TMP/nc" || fail "--no-color age failed"
grep -q '0 age<1s 1 <4s 2 <16s 3 <64s 4 older' "$TMP/nc" || fail "--no-color age: no digit legend"
sed -n '5,13p' "$TMP/nc" | cut -c1-79 | grep -q '[0-4]' || fail "--no-color age: no digits on the grid"
"$BIN" --headless --ticks 300 --dump-every 0 --ascii --no-color --coloring state --prefix-groups 4 \
    --shared-prefix-tokens 256 --enable-prefix-caching >"$TMP/nc" 2>"$TMP/err" ||
    fail "--no-color state failed: $(cat "$TMP/err")"
grep -q '# running ! stalled > prefilling % recomputing S swapped' "$TMP/nc" ||
    fail "--no-color state: the legend does not name a glyph per state"
grep -q '= shared' "$TMP/nc" && grep -q '~ cached' "$TMP/nc" || fail "--no-color state: shared and cached not in the legend"

# --record / replay: a headless recording replays as the very same frames,
# byte for byte, in every colouring; damaged files are one line, status 2
for view in "" "--coloring state" "--coloring age --ascii"; do
    # shellcheck disable=SC2086
    "$BIN" --headless --ticks 400 --dump-every 100 --watermark 0 $view --record "$TMP/r.pfrec" >"$TMP/live" ||
        fail "--record $view failed"
    # shellcheck disable=SC2086
    "$BIN" replay "$TMP/r.pfrec" --headless $view >"$TMP/replay" 2>"$TMP/err" ||
        fail "replay $view failed: $(cat "$TMP/err")"
    sed '/^summary/,$d' "$TMP/live" | cmp -s - "$TMP/replay" || fail "replay $view: the frames differ"
    [ "$(grep -c '^--- tick' "$TMP/replay")" -eq 4 ] || fail "replay $view: want 4 frames"
done
# FILE first, then any number of flags (past 248 of them FILE was refused
# as an unexpected argument: a fixed copy of argv)
# shellcheck disable=SC2046
"$BIN" replay "$TMP/r.pfrec" --headless $(i=0; while [ $i -lt 300 ]; do echo --ascii; i=$((i + 1)); done) \
    >"$TMP/replay" 2>"$TMP/err" || fail "replay FILE with 301 flags: $(cat "$TMP/err")"
[ "$(grep -c '^--- tick' "$TMP/replay")" -eq 4 ] || fail "replay FILE with 301 flags: want 4 frames"
head -c 3000 "$TMP/r.pfrec" >"$TMP/cut.pfrec"
printf 'not a recording\n' >"$TMP/junk.pfrec"
# the header alone (a recording cut before its first snapshot): it replayed
# headless as nothing at all with exit 0
head -c 16 "$TMP/r.pfrec" >"$TMP/hdr.pfrec"
for f in "$TMP/cut.pfrec" "$TMP/junk.pfrec" "$TMP/none.pfrec" "$TMP/hdr.pfrec"; do
    "$BIN" replay "$f" --headless >/dev/null 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "replay of a damaged file ($f): exit $rc, want 2"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "replay of a damaged file: want one line: $(cat "$TMP/err")"
done
grep -q 'hdr.pfrec: no records' "$TMP/err" || fail "replay of a header alone: $(cat "$TMP/err")"
# a directory is named as one (it opens for reading, and was reported as
# a file with no PFREC header)
"$BIN" replay "$TMP" --headless >/dev/null 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] || fail "replay of a directory: exit $rc, want 2"
grep -q 'Is a directory' "$TMP/err" || fail "replay of a directory: $(cat "$TMP/err")"

# --mode naive on a pool that cannot hold one naive reservation: every job
# was aborted and the dashboard showed an idle pool with exit 0; refused
# as `sim` refuses it, naming the flags
"$BIN" --headless --mode naive --max-len 100000 --pool-blocks 10 >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--mode naive with a pool too small: exit $rc, want 2"
[ -s "$TMP/out" ] && fail "--mode naive with a pool too small: printed on stdout"
grep -q -- '--pool-blocks 10 cannot hold one naive reservation: --max-len 100000' "$TMP/err" ||
    fail "--mode naive with a pool too small: $(cat "$TMP/err")"
"$BIN" --headless --ticks 5 --record /nonexistent-dir/x.pfrec >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] || fail "--record to an unwritable path: want exit 2"
grep -q "cannot write" "$TMP/err" || fail "--record to an unwritable path: $(cat "$TMP/err")"
# a live --record that fails before it starts (here: no terminal) must
# leave an existing recording alone; it was truncated to a bare header
printf 'an earlier recording\n' >"$TMP/old.pfrec"
"$BIN" --jobs 4 --record "$TMP/old.pfrec" </dev/null >/dev/null 2>"$TMP/err"
[ $? -eq 2 ] || fail "live --record without a terminal: want exit 2"
grep -q 'an earlier recording' "$TMP/old.pfrec" || fail "live --record without a terminal clobbered the file"

# --gpu with no usable GPU: the frame says why, stderr says so in bench's
# words and the status is bench's (3); with a GPU the pass runs (status 0)
"$BIN" --headless --ticks 50 --gpu-pass >"$TMP/g" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 3 ]; then
    grep -q '^pagefault: no GPU: ' "$TMP/err" || fail "--gpu-pass without GPU: stderr: $(cat "$TMP/err")"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "--gpu-pass without GPU: want one line on stderr"
    grep -q 'GPU unavailable: ' "$TMP/g" || fail "--gpu-pass without GPU: the frame does not say so"
else
    [ "$rc" -eq 0 ] || fail "--gpu-pass: exit $rc: $(cat "$TMP/err")"
    grep -q 'paged (now)' "$TMP/g" || fail "--gpu-pass with a GPU: no results in the frame"
fi

# a result that cannot be written is an error (it exited 0 before)
if [ -w /dev/full ]; then
    for args in "--headless --ticks 2" "calc" "sim --jobs 4"; do
        # shellcheck disable=SC2086
        "$BIN" $args >/dev/full 2>"$TMP/err"
        rc=$?
        [ "$rc" -ne 0 ] || fail "'$args' >/dev/full: exit 0"
        grep -q "cannot write the output" "$TMP/err" || fail "'$args' >/dev/full: $(cat "$TMP/err")"
    done
fi
# numbers are C numbers under any locale: the dashboard took LC_ALL from
# the environment (for UTF-8), and under de_DE its headless JSON lines and
# summary wrote 0,5 for 0.5 (broken JSON). A de_DE locale is built into
# $TMP when none is installed (localedef, Debian's locales package).
# (localedef may exit 1 on warnings and still write the locale)
mkdir -p "$TMP/loc"
localedef -i de_DE -f UTF-8 "$TMP/loc/de_DE.UTF-8" >/dev/null 2>&1
if [ -d "$TMP/loc/de_DE.UTF-8" ]; then
    for fmt in text jsonl; do
        # detect_leaks=0: glibc's setlocale keeps 40 bytes (__argz_add_sep)
        # of a locale found through LOCPATH, which LeakSanitizer reports
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        LOCPATH="$TMP/loc" LC_ALL=de_DE.UTF-8 "$BIN" --headless --ticks 100 --dump-every 50 --format $fmt \
            >"$TMP/de" 2>"$TMP/err" || fail "de_DE $fmt: $(cat "$TMP/err")"
        LC_ALL=C.UTF-8 "$BIN" --headless --ticks 100 --dump-every 50 --format $fmt >"$TMP/c" 2>/dev/null
        grep -q '[0-9]\.[0-9]' "$TMP/de" || fail "de_DE $fmt: no decimal number at all"
        cmp -s "$TMP/de" "$TMP/c" || fail "de_DE $fmt: differs from C.UTF-8: $(diff "$TMP/de" "$TMP/c" | head -4)"
    done
else
    echo "note: no localedef here; the decimal-comma check did not run"
fi
echo PASS
