#!/bin/sh
# tests/test_gpu_peers_args.sh PYTHON PEERS_PY - gpu/peers.py refuses bad arguments
# before it looks for PyTorch or a device: status 2, and a message on stderr
# that names what was wrong (it once ended in a Python traceback on an
# unknown workload name).
python="$1"
peers="$2"
fails=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

expect_usage() { # WANT ARGS...: status 2 and WANT in the message
    want="$1"
    shift
    "$python" "$peers" no-such-lib.so "$@" >/dev/null 2>"$err"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q -- "$want" "$err"; then
        echo "FAIL: peers.py $* -> status $rc (want 2, a message naming $want):"
        cat "$err"
        fails=$((fails + 1))
    fi
}
expect_usage "unknown seed" --workloads seed
expect_usage "unknown nope,x" --workloads llama,nope,x
expect_usage "comma-separated integers" --versions 0,twelve
expect_usage "comma-separated integers" --group-tiles x
expect_usage "at least 1" --iters 0
expect_usage "at least 0" --probe-after-mb -1
expect_usage "invalid choice" --flush nope
expect_usage "invalid choice" --data nope
expect_usage "split and/or interleaved" --kv-layouts split,nope
expect_usage "split and/or interleaved" --kv-layouts ""
[ $fails -eq 0 ] && echo "peers.py argument checks: all passed"
exit $fails
