#!/bin/sh
# tests/test_cli_bench_files.sh BIN - `pagefault bench --profile-out FILE`
# and `--timeline FILE` on a run that fails: an existing FILE (a profile
# measured earlier) is left as it was, and nothing else is left beside it.
# Both used to be opened with "w" before the flags were checked and removed
# on the way out, so a usage error or a machine without a GPU destroyed
# them. Runs with or without a GPU: the usage error never reaches one, and
# a full run either succeeds (0: the profile replaced by a new one) or
# finds no GPU (3: the file kept).
set -u
BIN=${1:?usage: test_cli_bench_files.sh PATH_TO_PAGEFAULT}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
D=$TMP/targets # the two files alone: a temporary file left there shows
mkdir "$D"

old_profile='format = pagefault-gpu-profile/1 (an earlier measurement)'
reset() {
    printf '%s\n' "$old_profile" >"$D/prof.txt"
    printf 'block,sm\n' >"$D/tl.csv"
}
only_targets() {
    [ "$(ls -A "$D" | tr '\n' ' ')" = "prof.txt tl.csv " ] || fail "$1: files beside the targets: $(ls -A "$D")"
}

# a usage error found after the paths were checked
reset
"$BIN" bench --profile-out "$D/prof.txt" --timeline "$D/tl.csv" --lengths 5000 --max-len 100 \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] || fail "usage error: exit $rc, want 2: $(cat "$TMP/err")"
grep -q -- '--max-len' "$TMP/err" || fail "usage error: $(cat "$TMP/err")"
[ "$(cat "$D/prof.txt" 2>/dev/null)" = "$old_profile" ] || fail "usage error: the --profile-out file lost or changed"
[ "$(cat "$D/tl.csv" 2>/dev/null)" = "block,sm" ] || fail "usage error: the --timeline file lost or changed"
only_targets "usage error"

# a whole run: without a GPU (3) the file is kept; with one (0) the
# profile is a new one
reset
"$BIN" bench --workload seed --seqs 4 --iters 2 --no-read-bw --profile-out "$D/prof.txt" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 3 ]; then
    [ "$(cat "$D/prof.txt" 2>/dev/null)" = "$old_profile" ] || fail "no GPU: the --profile-out file lost or changed"
elif [ "$rc" -eq 0 ]; then
    [ "$(cat "$D/prof.txt")" != "$old_profile" ] || fail "a successful run kept the old profile"
    grep -q 'pagefault-gpu-profile/1' "$D/prof.txt" || fail "a successful run wrote no profile"
else
    fail "bench --profile-out: exit $rc: $(cat "$TMP/err")"
fi
only_targets "bench --profile-out (exit $rc)"

# a run stopped by a signal (with a GPU: without one it ends before a
# signal can be sent) leaves the earlier file as it was and no temporary
# file. SIGTERM: a background job of a script ignores SIGINT
if [ "$rc" -eq 0 ]; then
    reset
    "$BIN" bench --workload long --iters 100000 --profile-out "$D/prof.txt" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    i=0 # the temporary file appears before the GPU work starts
    while [ "$(ls -A "$D" | wc -l)" -lt 3 ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(ls -A "$D" | wc -l)" -eq 3 ] || fail "SIGTERM: no temporary file appeared: $(ls -A "$D")"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 143 ] || fail "SIGTERM: exit $rc, want 143 (killed by SIGTERM): $(cat "$TMP/err")"
    [ "$(cat "$D/prof.txt" 2>/dev/null)" = "$old_profile" ] || fail "SIGTERM: the --profile-out file lost or changed"
    only_targets "SIGTERM"
fi

# a path that cannot be written is still a usage error and creates nothing
"$BIN" bench --profile-out "$D/no-such-dir/p.txt" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] || fail "unwritable --profile-out: exit $rc, want 2"
grep -q -- '--profile-out: cannot write' "$TMP/err" || fail "unwritable --profile-out: $(cat "$TMP/err")"
"$BIN" bench --timeline "$D" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 2 ] || fail "--timeline DIRECTORY: exit $rc, want 2"
grep -q -- '--timeline: cannot write' "$TMP/err" || fail "--timeline DIRECTORY: $(cat "$TMP/err")"
only_targets "unwritable paths"
echo PASS
