#!/bin/sh
# tests/e2e_dashboard.sh BIN - drive the real `pagefault` dashboard in tmux.
#
# Start with no flags, raise the watermark (the parameters panel changes),
# add workers, pause (the step stops), single-step (it moves by one), g (no
# GPU: the panel says why; with one: results), resize below the minimum (the
# message) and back, help, q (the shell gets control back and the pane is
# out of the alternate screen); then q while running, Ctrl-C (130), SIGTERM (143) and
# SIGSEGV in runs of their own. Every wait polls
# capture-pane with a deadline instead of sleeping a fixed time.
# Exit 77 (skipped) without tmux.
set -u
BIN=${1:?usage: e2e_dashboard.sh PATH_TO_PAGEFAULT}
command -v tmux >/dev/null 2>&1 || { echo "tmux not found: skipped"; exit 77; }
[ -x "$BIN" ] || { echo "not executable: $BIN"; exit 1; }

SOCK="pf-e2e-$$"
T="tmux -L $SOCK -f /dev/null"
cleanup() { $T kill-server >/dev/null 2>&1; }
trap cleanup EXIT INT TERM

fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    $T capture-pane -p -t pf 2>/dev/null
    exit 1
}

screen() { $T capture-pane -p -t pf; }

# wait_for TEXT [SECONDS]: poll until TEXT (fixed string) is on screen
wait_for() {
    _deadline=$(( $(date +%s) + ${2:-10} ))
    while :; do
        screen | grep -qF -- "$1" && return 0
        [ "$(date +%s)" -ge "$_deadline" ] && return 1
        sleep 0.1
    done
}

# wait_gone TEXT: poll until TEXT is no longer on screen
wait_gone() {
    _deadline=$(( $(date +%s) + ${2:-10} ))
    while screen | grep -qF -- "$1"; do
        [ "$(date +%s)" -ge "$_deadline" ] && return 1
        sleep 0.1
    done
    return 0
}

# value REGEX: the first match of an extended regex on screen, numbers only
value() { screen | grep -oE -- "$1" | head -n 1 | grep -oE '[0-9]+(\.[0-9]+)?' | head -n 1; }

# wait_change REGEX OLD [SECONDS]: poll until value REGEX differs from OLD
wait_change() {
    _deadline=$(( $(date +%s) + ${3:-10} ))
    while :; do
        _v=$(value "$1")
        [ -n "$_v" ] && [ "$_v" != "$2" ] && { echo "$_v"; return 0; }
        [ "$(date +%s)" -ge "$_deadline" ] && return 1
        sleep 0.1
    done
}

gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# A session that lives for the whole test keeps the server up: killing the
# only session makes tmux exit, and the next new-session could reach the
# dying server ("server exited unexpectedly"), which made this test flaky.
$T new-session -d -s keep -x 80 -y 24 "sleep 600" || fail "cannot start tmux"

# ---- run 1: the keys -----------------------------------------------------
$T new-session -d -s pf -x 120 -y 40 "'$BIN'; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "PageFault - paged KV pool" 15 || fail "dashboard did not start"
wait_for "Counters" || fail "no counters panel"
wait_for "RUNNING" || fail "not running"

wm0=$(value 'watermark [0-9.]+% =') || true
[ -n "$wm0" ] || fail "no watermark in the parameters panel"
$T send-keys -t pf W
wm1=$(wait_change 'watermark [0-9.]+% =' "$wm0") || fail "W did not change the watermark ($wm0)"
gt "$wm1" "$wm0" || fail "W lowered the watermark: $wm0 -> $wm1"
echo "ok watermark $wm0% -> $wm1%"

wk0=$(value 'max seqs [0-9]+  preempt')
[ -n "$wk0" ] || fail "no max seqs in the parameters panel"
$T send-keys -t pf +
wk1=$(wait_change 'max seqs [0-9]+  preempt' "$wk0") || fail "+ did not change max seqs ($wk0)"
gt "$wk1" "$wk0" || fail "+ lowered max seqs: $wk0 -> $wk1"
echo "ok max seqs $wk0 -> $wk1"

# a: the load controller on (the parameters say auto), and off again
$T send-keys -t pf a
wait_for "load controller on" || fail "a did not turn the load controller on"
wait_for "watermark auto" || fail "a: the parameters do not say auto"
$T send-keys -t pf a
wait_for "load controller off" || fail "a did not turn the load controller off"
wait_gone "watermark auto" || fail "a: the parameters still say auto"
echo "ok a: load controller on, off"

$T send-keys -t pf Space
wait_for "PAUSED" || fail "space did not pause"
# paused means paused: a step already in flight may still land, then the
# step number must stay put (unchanged over 0.6 s, within 10 s)
_deadline=$(( $(date +%s) + 10 ))
s1=$(value 'step [0-9]+ \|')
while :; do
    sleep 0.6
    _s=$(value 'step [0-9]+ \|')
    [ "$_s" = "$s1" ] && break
    s1=$_s
    [ "$(date +%s)" -ge "$_deadline" ] && fail "step keeps moving while paused ($s1)"
done
$T send-keys -t pf s
s2=$(wait_change 'step [0-9]+ \|' "$s1") || fail "s did not step (step $s1)"
[ "$s2" -eq $((s1 + 1)) ] || fail "s moved the step by more than one: $s1 -> $s2"
wait_for "PAUSED" || fail "not paused after a step"
echo "ok pause at step $s1, single step to $s2"

$T send-keys -t pf g
# no GPU (CI): the panel says why; with one: the results table appears
_deadline=$(( $(date +%s) + 60 ))
while :; do
    _s=$(screen)
    if echo "$_s" | grep -qE "GPU unavailable: [a-zA-Z]"; then
        echo "$_s" | grep -E "GPU unavailable: "
        break
    fi
    if echo "$_s" | grep -qF "paged (ord.)" && echo "$_s" | grep -qE "paged \(now\) +[0-9]"; then
        echo "$_s" | grep -A4 -F "GPU passes"
        break
    fi
    echo "$_s" | grep -qF "GPU pass failed" && fail "g: the GPU pass failed"
    [ "$(date +%s)" -ge "$_deadline" ] &&
        fail "g: the GPU panel neither says why it is unavailable nor shows results"
    sleep 0.1
done
echo "ok g"

$T resize-window -t pf -x 70 -y 20
wait_for "terminal too small: 70x20" || fail "no message below the minimum size"
$T resize-window -t pf -x 100 -y 30
wait_for "Counters" || fail "dashboard did not come back after resizing"
screen | grep -qF "terminal too small" && fail "message left after resizing back"
echo "ok resize"

$T send-keys -t pf '?'
wait_for "single step" || fail "? did not open the help"
$T send-keys -t pf x
_deadline=$(( $(date +%s) + 10 ))
while screen | grep -qF "single step"; do
    [ "$(date +%s)" -ge "$_deadline" ] && fail "a key did not close the help"
    sleep 0.1
done
echo "ok help"

# F1 opens the help, Tab turns its pages, Esc closes it
$T send-keys -t pf F1
wait_for "single step" || fail "F1 did not open the help"
$T send-keys -t pf Tab
wait_for "The grid (2/3)" || fail "Tab did not turn the help page"
$T send-keys -t pf Tab
wait_for "Counters (3/3)" || fail "Tab did not reach the counters page"
$T send-keys -t pf Escape
wait_gone "Counters (3/3)" || fail "Esc did not close the help"
echo "ok F1, Tab, Esc"

# c cycles the colouring; the legend follows
$T send-keys -t pf c
wait_for "Pool by state" || fail "c did not colour by state"
wait_for "recomputing" || fail "no state legend"
$T send-keys -t pf c
wait_for "Pool by age" || fail "c did not colour by age"
wait_for "age<1s" || fail "no age legend (seconds)"
$T send-keys -t pf c
wait_for "Pool by owner" || fail "c did not come back to owner"
echo "ok c: state, age, owner"

# t shows the charts in the grid's place; < and > zoom their window
$T send-keys -t pf t
wait_for "Charts over the last 8 s" || fail "t did not show the charts"
wait_for "tokens/s" || fail "no chart"
$T send-keys -t pf '>'
wait_for "Charts over the last 16 s" || fail "> did not zoom out"
wait_for "-16 s" || fail "the time axis did not follow the zoom"
$T send-keys -t pf '<' '<'
wait_for "Charts over the last 4 s" || fail "< did not zoom in"
$T send-keys -t pf t
wait_for "Pool by owner" || fail "t did not bring the grid back"
echo "ok t, <, >: charts and zoom"

# 2: naive beside paged in lockstep, with the ratio; 2 again: back
$T send-keys -t pf 2
wait_for "paged / naive:" || fail "2 did not open the split view"
wait_for "NAIVE (reserve max-len)" || fail "no naive side"
wait_for "PAGED (on demand)" || fail "no paged side"
$T send-keys -t pf 2
wait_for "split view closed" || fail "2 did not close the split view"
wait_gone "paged / naive:" || fail "the split view stayed"
echo "ok 2: split view"

# x: the watermark curve, swept in the background, the live setting marked
$T send-keys -t pf x
wait_for "Watermark curve: 12 of 12 points" 60 || fail "x: the sweep did not finish"
screen | grep -qF " <-" || fail "x: the live watermark is not marked"
screen | grep -qE "^ +0\.0% +[0-9.]+ " || fail "x: no point at watermark 0"
$T send-keys -t pf x
wait_gone "Watermark curve" || fail "x did not close the curve"
echo "ok x: watermark curve"

# the grid is full of sequences by now: arrows open the inspector on one
$T send-keys -t pf Right
wait_for "(Esc closes)" || fail "arrows did not open the inspector"
screen | grep -qE "page table|no longer in the pool|no sequence holds them" || fail "inspector shows nothing"
$T send-keys -t pf Escape
wait_gone "(Esc closes)" || fail "Esc did not close the inspector"
wait_for "Events" || fail "the event log did not come back"
echo "ok inspector: arrows, Esc"

# the mouse: a press on a grid cell (row 4, column 3) opens the inspector;
# a press on the key line's F1 entry opens the help. X10 encoding: ESC [ M,
# then button, column and row, each + 32 (1-based)
m_byte() { printf "\\$(printf '%03o' $((32 + $1)))"; }
mouse() { # press and release of button 1 at column $1, row $2 (0-based)
    $T send-keys -t pf -l "$(printf '\033[M')$(m_byte 0)$(m_byte $(($1 + 1)))$(m_byte $(($2 + 1)))"
    $T send-keys -t pf -l "$(printf '\033[M')$(m_byte 3)$(m_byte $(($1 + 1)))$(m_byte $(($2 + 1)))"
}
mouse 3 4
wait_for "(Esc closes)" || fail "a click on the grid did not open the inspector"
$T send-keys -t pf Escape
wait_gone "(Esc closes)" || fail "Esc did not close the inspector (mouse)"
mouse 1 29
wait_for "single step" || fail "a click on F1 in the key line did not open the help"
$T send-keys -t pf Escape
wait_gone "single step" || fail "Esc did not close the help (mouse)"
echo "ok mouse: grid cell, key line"

$T send-keys -t pf F10
wait_for "PF_EXIT=0" 15 || fail "F10 did not exit with status 0"
[ "$($T display -p -t pf '#{alternate_on}')" = "0" ] || fail "pane still in the alternate screen after q"
echo "ok F10: exit 0, terminal restored"
$T kill-session -t pf

# ---- run 2: q while the threaded engine is running (steps in flight) ----------
$T new-session -d -s pf -x 100 -y 30 "'$BIN' --tick-us 2000; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "RUNNING" 15 || fail "dashboard did not start (run 2)"
sleep 0.3
$T send-keys -t pf q
wait_for "PF_EXIT=0" 15 || fail "q while running did not exit with status 0"
echo "ok q while running"
$T kill-session -t pf

# ---- run 3: Ctrl-C restores the terminal too ---------------------------------
$T new-session -d -s pf -x 100 -y 30 "'$BIN' --engine deterministic; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "Counters" 15 || fail "dashboard did not start (run 2)"
$T send-keys -t pf C-c
wait_for "PF_EXIT=130" 15 || fail "Ctrl-C did not end the dashboard with status 130"
[ "$($T display -p -t pf '#{alternate_on}')" = "0" ] || fail "pane still in the alternate screen after Ctrl-C"
echo "ok Ctrl-C: status 130, terminal restored"
$T kill-session -t pf

# ---- runs 4 and 5: SIGTERM ends it with status 143; a crash (SIGSEGV) still restores
# the terminal and dies of the signal (status 139) -------------------------------
PIDF=$(mktemp)
for sig in TERM SEGV; do
    : >"$PIDF"
    $T new-session -d -s pf -x 100 -y 30 \
        "sh -c 'ulimit -c 0; echo \$\$ >\"$PIDF\"; exec \"$BIN\" --engine deterministic'; echo PF_EXIT=\$?; sleep 120" ||
        fail "cannot start tmux"
    wait_for "Counters" 15 || fail "dashboard did not start (SIG$sig run)"
    pid=$(cat "$PIDF")
    [ -n "$pid" ] || fail "no pid"
    kill -s "$sig" "$pid"
    want=143 # 128 + SIGTERM, as shells expect
    [ "$sig" = SEGV ] && want=139
    wait_for "PF_EXIT=$want" 15 || fail "SIG$sig: expected exit status $want"
    [ "$($T display -p -t pf '#{alternate_on}')" = "0" ] || fail "pane still in the alternate screen after SIG$sig"
    echo "ok SIG$sig: status $want, terminal restored"
    $T kill-session -t pf
done
rm -f "$PIDF"

# ---- a run has an end: the final figures, r for the next, --loop by itself ----
$T new-session -d -s pf -x 120 -y 40 "'$BIN' --jobs 30 --tick-us 1000; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "Run 1 complete: every job finished" 60 || fail "the end of run 1 is not shown"
wait_for "jobs 30 finished" || fail "the final figures are not shown"
screen | grep -qF "| DONE | run 1" || fail "the header does not say DONE"
$T send-keys -t pf r
wait_for "| run 2" || fail "r did not start run 2"
wait_gone "Run 1 complete" || fail "the end box stayed after r"
$T send-keys -t pf q
wait_for "PF_EXIT=0" 15 || fail "q after a run's end"
$T kill-session -t pf
$T new-session -d -s pf -x 120 -y 40 "'$BIN' --jobs 30 --tick-us 1000 --loop; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "Run 1 complete" 60 || fail "--loop: the end of run 1 is not shown"
wait_for "| RUNNING | run 2" 15 || fail "--loop did not start run 2 by itself"
$T send-keys -t pf q
wait_for "PF_EXIT=0" 15 || fail "q with --loop"
$T kill-session -t pf
echo "ok a run's end, r, --loop"

# ---- a large start shows its progress and answers q at once ---------------------
$T new-session -d -s pf -x 120 -y 40 "'$BIN' --jobs 1000000; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "starting: naive baseline" 30 || fail "a large start shows no progress"
$T send-keys -t pf q
wait_for "PF_EXIT=0" 5 || fail "q during a large start did not end it within 5 s"
$T kill-session -t pf
echo "ok large start: progress, q"

# ---- record a live session, then play it back: pause, seek, step, q -------------
REC=$(mktemp)
$T new-session -d -s pf -x 120 -y 40 "'$BIN' --record '$REC'; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "RUNNING" 15 || fail "--record: the dashboard did not start"
sleep 2
$T send-keys -t pf q
wait_for "PF_EXIT=0" 15 || fail "--record: q did not exit 0"
$T kill-session -t pf
$T new-session -d -s pf -x 120 -y 40 "'$BIN' replay '$REC'; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "replay " 15 || fail "replay did not start"
$T send-keys -t pf Space
wait_for " paused," || fail "replay: space did not pause"
$T send-keys -t pf r
wait_for "replay 1/" || fail "replay: r did not go back to the first record"
$T send-keys -t pf s
wait_for "replay 2/" || fail "replay: s did not step one record"
$T send-keys -t pf Right
wait_for "replay 12/" || fail "replay: Right did not seek 10 records"
$T send-keys -t pf Left
wait_for "replay 2/" || fail "replay: Left did not seek back"
$T send-keys -t pf f
wait_for " 5 rec/s" || fail "replay: f did not halve the rate (10 rec/s)"
$T send-keys -t pf F F
wait_for " 20 rec/s" || fail "replay: F did not double the rate"
$T send-keys -t pf W
wait_for "a live key: not here" || fail "replay: W (a live key) not refused on the status line"
$T send-keys -t pf q
wait_for "PF_EXIT=0" 15 || fail "replay: q did not exit 0"
$T kill-session -t pf
rm -f "$REC"
echo "ok --record and replay: pause, step, seek, rate, a live key refused"

# ---- terminals that cannot be driven: one clear line, status 2 -------------------
for term in dumb no-such-terminal-xyz; do
    $T new-session -d -s pf -x 100 -y 30 "TERM=$term '$BIN'; echo PF_EXIT=\$?; sleep 120" ||
        fail "cannot start tmux"
    wait_for "PF_EXIT=2" 15 || fail "TERM=$term: expected exit status 2"
    screen | grep -qF "cannot drive the terminal '$term'" || fail "TERM=$term: no clear message"
    echo "ok TERM=$term refused"
    $T kill-session -t pf
done
echo "PASS"
exit 0
