#!/bin/sh
# tests/test_net_attach_tmux.sh BIN - `pagefault attach`'s curses screen in tmux.
#
# Attach to endpoints where nothing listens: the screen must come up with its
# header, say the rank is not live and the metrics poll fails (with the
# reason as a warning line), show the too-small message below 72x20 and come
# back, then q must exit with status 0 and leave the alternate screen; SIGTERM
# too. Waits poll capture-pane with a deadline. Exit 77 (skipped) without tmux.
set -u
BIN=${1:?usage: test_net_attach_tmux.sh PATH_TO_PAGEFAULT}
command -v tmux >/dev/null 2>&1 || { echo "tmux not found: skipped"; exit 77; }
SOCK="pf-attach-$$"
T="tmux -L $SOCK -f /dev/null"
PIDF=$(mktemp)
cleanup() { $T kill-server >/dev/null 2>&1; rm -f "$PIDF"; }
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*"; echo "---- screen ----"; $T capture-pane -p -t at 2>/dev/null; exit 1; }
screen() { $T capture-pane -p -t at; }
wait_for() {
    _deadline=$(( $(date +%s) + ${2:-10} ))
    while :; do
        screen | grep -qF -- "$1" && return 0
        [ "$(date +%s)" -ge "$_deadline" ] && return 1
        sleep 0.1
    done
}
ARGS="attach --kv-events tcp://127.0.0.1:1 --metrics http://127.0.0.1:1/metrics --tick-ms 100"
$T new-session -d -s keep -x 80 -y 24 "sleep 600" || fail "cannot start tmux"
$T new-session -d -s at -x 110 -y 32 "TERM=xterm-256color '$BIN' $ARGS; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "pagefault attach" 15 || fail "attach did not start"
wait_for "0/1 rank live" || fail "the rank is not shown as silent"
wait_for "metrics failing" || fail "the failing metrics poll is not shown"
wait_for "metrics: " || fail "no warning line for the metrics poll"
wait_for "prefix cache: 0 blocks" || fail "no grid title"
echo "ok screen"
$T resize-window -t at -x 60 -y 15
wait_for "terminal too small: 60x15" || fail "no message below the minimum size"
$T resize-window -t at -x 110 -y 32
wait_for "prefix cache:" || fail "the screen did not come back after resizing"
echo "ok resize"
$T send-keys -t at q
wait_for "PF_EXIT=0" 10 || fail "q did not exit with status 0"
screen | grep -qF "prefix cache:" && fail "the screen was not restored after q"
echo "ok q"
$T kill-session -t at
$T new-session -d -s at -x 110 -y 32 "TERM=xterm-256color sh -c 'echo \$\$ > $PIDF; exec \"$BIN\" $ARGS'; echo PF_EXIT=\$?; sleep 120" ||
    fail "cannot start tmux"
wait_for "prefix cache:" 15 || fail "attach did not start (second run)"
pid=$(cat "$PIDF")
[ -n "$pid" ] || fail "no pid"
kill -TERM "$pid"
wait_for "PF_EXIT=0" 10 || fail "SIGTERM did not exit with status 0"
echo "ok SIGTERM"
exit 0
