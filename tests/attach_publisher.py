#!/usr/bin/env python3
"""tests/attach_publisher.py - feed `pagefault attach` from a small vLLM-like server.

Publishes KV-cache events exactly as vLLM's ZmqEventPublisher frames them
([topic, seq as 8 bytes big-endian, msgpack batch], a ROUTER replay socket
answering [b"", start_seq] with [b"", seq, payload]... then [b"", -1, b""]),
on two data-parallel ranks (ports P and P + 1), and serves /metrics. It runs
`pagefault attach --headless --format jsonl` against them and checks the
counts attach prints against what was sent:

  1. map encoding (current vLLM) with 32-byte bytes hashes, a parent chain;
  2. array_like encoding (older vLLM) with int hashes;
  3. hostile input: a malformed payload, a container claiming 4 G elements,
     a message with the wrong frame count, a 3-byte seq, an unknown event tag,
     an event with wrong field types, a 100 MB metrics page, broken lines;
  4. a gap: three batches kept only in the replay buffer, then the next one
     sent: attach must ask for and apply the three;
  5. a restart: rank 0's publisher closes and a new one binds the same port
     with seq from 0: attach must drop rank 0's blocks (rank 1 keeps its own);
  6. rank 1 publishing with data_parallel_rank = 1 in the batch;
  7. --history: a chain published before attach started, recovered by replay.

Usage: attach_publisher.py PATH/TO/pagefault. Exit 0 pass, 1 fail, 77 skip
(python3-zmq or python3-msgpack missing).
"""
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

try:
    import msgpack
    import zmq
except ImportError as e:  # a skip, not a failure: the packages are optional for Python
    print(f"skipped: {e} (install python3-zmq python3-msgpack)")
    sys.exit(77)

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIN = sys.argv[1]
TIMEOUT = 20.0
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


# ---- metrics page ---------------------------------------------------------

METRICS = {"mode": "good"}
BUCKETS = [0.1, 0.5, 1.0, float("inf")]
TTFT_COUNTS = [5, 25, 38, 40]  # cumulative

GOOD_PAGE = (
    "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5\n'
    'vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.3\n'
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{engine="0",model_name="m"} 6.0\n'
    'vllm:num_requests_running{engine="1",model_name="m"} 5.0\n'
    'vllm:num_requests_waiting{engine="0",model_name="m"} 2.0\n'
    "# TYPE vllm:num_preemptions_total counter\n"
    'vllm:num_preemptions_total{engine="0",model_name="m"} 17.0\n'
    'vllm:prefix_cache_queries_total{engine="0",model_name="m"} 800.0\n'
    'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 200.0\n'
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    + "".join(
        'vllm:time_to_first_token_seconds_bucket{engine="0",le="%s",model_name="m"} %d.0\n'
        % ("+Inf" if b == float("inf") else repr(b), c)
        for b, c in zip(BUCKETS, TTFT_COUNTS)
    )
    + 'vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 40.0\n'
    'vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 21.0\n'
    "this line { is broken\n"
)


def histogram_quantile(q, bounds, cum):
    """Prometheus' bucketQuantile, written out independently of the C code."""
    total = cum[-1]
    rank = q * total
    b = next(i for i, c in enumerate(cum) if c >= rank)
    if b == len(cum) - 1:
        return bounds[-2]
    start = 0.0 if b == 0 else bounds[b - 1]
    below = 0 if b == 0 else cum[b - 1]
    return start + (bounds[b] - start) * (rank - below) / (cum[b] - below)


class Metrics(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/metrics":
            self.send_error(404)
            return
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            if METRICS["mode"] == "huge":
                size = 100 << 20
                self.send_header("Content-Length", str(size))
                self.end_headers()
                chunk = b"vllm:junk 1\n" * 8192
                sent = 0
                while sent < size:
                    part = chunk[: size - sent]
                    self.wfile.write(part)
                    sent += len(part)
            else:
                body = GOOD_PAGE.encode()
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # attach stopped reading at its cap: what we want


# ---- the publisher ----------------------------------------------------------

ctx = zmq.Context()


def bind_pair(kind):
    """Two sockets on ports P and P + 1 (data-parallel ranks 0 and 1)."""
    for _ in range(200):
        p = random.randint(20000, 60000)
        a, b = ctx.socket(kind), ctx.socket(kind)
        a.setsockopt(zmq.LINGER, 0)
        b.setsockopt(zmq.LINGER, 0)
        try:
            a.bind(f"tcp://127.0.0.1:{p}")
            b.bind(f"tcp://127.0.0.1:{p + 1}")
            return p, [a, b]
        except zmq.ZMQError:
            a.close()
            b.close()
    raise RuntimeError("no free port pair")


class Rank:
    def __init__(self, pub, router):
        self.pub, self.router = pub, router
        self.seq = 0
        self.buffer = []  # (seq, payload), as vLLM's deque

    def send(self, payload, wire=True):
        s = self.seq
        self.seq += 1
        if wire:
            self.pub.send_multipart([b"", s.to_bytes(8, "big"), payload])
        self.buffer.append((s, payload))

    def service(self):
        while self.router.poll(0):
            frames = self.router.recv_multipart()
            if len(frames) != 3:
                continue
            ident, _, start = frames
            start = int.from_bytes(start, "big")
            for s, buf in self.buffer:
                if s >= start:
                    self.router.send_multipart([ident, b"", s.to_bytes(8, "big"), buf])
            self.router.send_multipart([ident, b"", (-1).to_bytes(8, "big", signed=True), b""])


def batch_map(events, rank=None):
    d = {"ts": time.time(), "events": events}
    if rank is not None:
        d["data_parallel_rank"] = rank
    return msgpack.packb(d, use_bin_type=True)


def batch_array(events):
    return msgpack.packb([time.time(), events], use_bin_type=True)


def stored_map(hashes, parent, block_size=16):
    return {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
            "token_ids": list(range(block_size * len(hashes))), "block_size": block_size,
            "lora_id": None, "medium": "GPU", "lora_name": None}


def removed_map(hashes):
    return {"type": "BlockRemoved", "block_hashes": hashes, "medium": "GPU"}


def stored_array(hashes, parent, block_size=16):
    return ["BlockStored", hashes, parent, list(range(block_size * len(hashes))), block_size, None, "GPU"]


def removed_array(hashes):
    return ["BlockRemoved", hashes, None]


def bhash(i):
    return bytes([i % 256]) * 31 + bytes([i // 256])


# ---- attach's output ----------------------------------------------------------

lines = []
lines_lock = threading.Lock()


def reader(proc):
    for line in proc.stdout:
        try:
            obj = json.loads(line)
        except ValueError:
            failures.append(f"attach printed a line that is not JSON: {line!r}")
            continue
        with lines_lock:
            lines.append(obj)


def last():
    with lines_lock:
        return lines[-1] if lines else None


def wait_for(pred, what, ranks, tick=None):
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        for r in ranks:
            r.service()
        if tick:
            tick()
        cur = last()
        if cur is not None and pred(cur):
            return cur
        time.sleep(0.01)
    check(False, f"timed out waiting for: {what} (last line: {last()})")
    return last()


def main():
    pub_port, pubs = bind_pair(zmq.PUB)
    rep_port, routers = bind_pair(zmq.ROUTER)
    ranks = [Rank(pubs[0], routers[0]), Rank(pubs[1], routers[1])]
    http = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    murl = f"http://127.0.0.1:{http.server_address[1]}/metrics"

    # history: a chain published before attach exists, recovered by --history
    ranks[0].send(batch_map([stored_map([bhash(400), bhash(401)], None)]))
    proc = subprocess.Popen(
        [BIN, "attach", "--kv-events", f"tcp://127.0.0.1:{pub_port}", "--replay",
         f"tcp://127.0.0.1:{rep_port}", "--history", "--metrics", murl, "--dp-ranks", "2", "--headless",
         "--format", "jsonl", "--tick-ms", "100", "--metrics-timeout-s", "5"],
        stdout=subprocess.PIPE, text=True)
    threading.Thread(target=reader, args=(proc,), daemon=True).start()
    try:
        run(ranks, proc, f"tcp://127.0.0.1:{pub_port}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=10)
            check(rc == 0, f"attach exited {rc} after SIGTERM")
        except subprocess.TimeoutExpired:
            proc.kill()
            check(False, "attach did not stop on SIGTERM")
        http.shutdown()


def run(ranks, proc, pub_ep0):
    r0, r1 = ranks
    # Warm up: empty batches until attach has seen one from each rank (a SUB
    # socket misses what is sent before its subscription reaches the PUB).
    seen = {"n": 0}

    def warm():
        if seen["n"] % 5 == 0:
            r0.send(batch_map([]))
            r1.send(batch_map([], rank=1))
        seen["n"] += 1
    wait_for(lambda c: c["batches"] >= 4 and all(c["ranks_live"]), "warm-up batches", ranks, warm)
    base = last()["batches"]
    sent_batches = 0

    # 1. map encoding, bytes hashes: chain A (4 blocks) + continuation (2), remove 1
    A = [bhash(i) for i in range(1, 5)]
    r0.send(batch_map([stored_map(A, None)]))
    r0.send(batch_map([stored_map([bhash(5), bhash(6)], A[3]), removed_map([A[1]])]))
    sent_batches += 2
    # 2. array_like encoding, int hashes: chain B (3 blocks), an unknown tag, bad types
    B = [9_000_000_001, 9_000_000_002, 9_000_000_003]
    r0.send(batch_array([stored_array(B, None), ["BlockMoved", [1], None],
                         ["BlockStored", "not-a-list", None, [], 16, None, None],
                         ["BlockStored", [5], None, [], -5, None, None],          # negative size
                         ["BlockStored", [6], None, [], 2 ** 40, None, None]]))   # enormous size
    sent_batches += 1
    # 3. hostile messages: each counted as malformed
    r0.send(b"\xc1\x00garbage")                               # not msgpack
    r0.send(b"\xdd\xff\xff\xff\xff")                          # claims 4 G elements
    # frames attach cannot read a seq from: they take no number of the stream
    r0.pub.send_multipart([b"", (r0.seq).to_bytes(8, "big")])  # 2 frames
    r0.pub.send_multipart([b"", b"\x00\x00\x01", batch_map([])])  # 3-byte seq
    # 4. a gap: three batches only in the replay buffer (seq advances), then one sent
    C = [bhash(100), bhash(101)]
    r0.send(batch_map([stored_map(C, None)]), wire=False)
    r0.send(batch_map([removed_map([B[0]])]), wire=False)
    r0.send(batch_array([stored_array([7_000_000_001], None)]), wire=False)
    r0.send(batch_map([removed_map([C[1]])]))
    sent_batches += 4
    # 6. rank 1: its own chain E, the rank named in the batch
    E = [bhash(200), bhash(201)]
    r1.send(batch_map([stored_map(E, None)], rank=1))
    sent_batches += 1

    stored = 2 + 4 + 2 + 3 + 2 + 1 + 2  # the history chain first
    removed = 1 + 1 + 1
    live = stored - removed
    cur = wait_for(lambda c: c["batches"] >= base + sent_batches, "the scripted batches", ranks)
    check(cur["blocks_stored"] == stored, f"blocks_stored {cur['blocks_stored']} != {stored}")
    check(cur["blocks_removed"] == removed, f"blocks_removed {cur['blocks_removed']} != {removed}")
    check(cur["blocks_live"] == live, f"blocks_live {cur['blocks_live']} != {live}")
    # prefixes: the history chain, A (with its continuation), B, C, the lone 7e9 block, E
    check(cur["prefixes_live"] == 6, f"prefixes_live {cur['prefixes_live']} != 6")
    check(cur["events_stored"] == 7 and cur["events_removed"] == 3,
          f"events stored/removed {cur['events_stored']}/{cur['events_removed']} != 7/3")
    check(cur["history_batches"] >= 1, f"history_batches {cur['history_batches']}: the history was not replayed")
    w = cur["warnings"]
    check(w["gaps"] >= 1 and w["replayed"] == 3 and w["lost"] == 0,
          f"gap/replay: gaps {w['gaps']} replayed {w['replayed']} lost {w['lost']}")
    check(w["malformed"] == 4, f"malformed {w['malformed']} != 4")
    check(w["unknown_events"] == 1, f"unknown_events {w['unknown_events']} != 1")
    check(w["bad_events"] == 3, f"bad_events {w['bad_events']} != 3")

    # metrics: the page's values, quantiles as Prometheus computes them
    cur = wait_for(lambda c: c["metric_polls"] >= 1 and c["ttft_p50_s"] is not None, "a metrics poll", ranks)
    check(abs(cur["kv_cache_usage"] - 0.4) < 1e-9, f"usage {cur['kv_cache_usage']} != 0.4 (mean of engines)")
    check(cur["num_requests_running"] == 11, f"running {cur['num_requests_running']} != 11")
    check(cur["num_preemptions"] == 17, f"preemptions {cur['num_preemptions']} != 17")
    check(abs(cur["prefix_cache_hit_rate"] - 0.25) < 1e-9, f"hit rate {cur['prefix_cache_hit_rate']}")
    for q, key in ((0.5, "ttft_p50_s"), (0.9, "ttft_p90_s"), (0.99, "ttft_p99_s")):
        want = histogram_quantile(q, BUCKETS, TTFT_COUNTS)
        check(abs(cur[key] - want) < 1e-4 * max(1, want), f"{key} {cur[key]} != {want}")
    check(cur["warnings"]["metrics_bad_lines"] >= 1, "the broken metrics line was not counted")

    # a 100 MB page: cut at attach's cap, counted, attach carries on
    METRICS["mode"] = "huge"
    cur = wait_for(lambda c: c["warnings"]["metrics_truncated"] >= 1, "the 100 MB page to be cut", ranks)
    METRICS["mode"] = "good"
    check(proc.poll() is None, "attach died on the 100 MB page")

    # 5. restart rank 0: a long first life, then a new publisher, seq from 0
    for _ in range(60):
        r0.send(batch_map([]))
    time.sleep(0.3)
    r0.pub.close(linger=0)
    time.sleep(0.2)
    new_pub = ctx.socket(zmq.PUB)
    new_pub.setsockopt(zmq.LINGER, 0)
    new_pub.bind(pub_ep0)
    r0.pub, r0.seq, r0.buffer = new_pub, 0, []
    tick = {"n": 0}

    def restart_warm():
        if tick["n"] % 5 == 0:
            r0.send(batch_map([]))
        tick["n"] += 1
    cur = wait_for(lambda c: c["warnings"]["restarts"] >= 1, "the restart to be noticed", ranks, restart_warm)
    D = [bhash(300), bhash(301)]
    r0.send(batch_map([stored_map(D, None)]))
    cur = wait_for(lambda c: c["blocks_stored"] >= stored + 2, "blocks after the restart", ranks, None)
    # rank 0's old blocks are gone; rank 1's chain E stays
    check(cur["blocks_live"] == 2 + 2, f"after the restart blocks_live {cur['blocks_live']} != 4")
    check(cur["warnings"]["restarts"] == 1, f"restarts {cur['warnings']['restarts']} != 1")
    check(proc.poll() is None, "attach exited early")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a crash of the test itself is a failure, with its reason
        failures.append(f"test error: {e!r}")
        print("FAIL:", repr(e), file=sys.stderr)
    if failures:
        print(f"attach_publisher: {len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("attach_publisher: all checks passed")
    sys.exit(0)
