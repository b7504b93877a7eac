"""tests/check_formats.py - read pagefault's machine outputs as a script would.

Usage: check_formats.py [--csv FILE ...] [--json FILE ...]

CSV: read with pandas.read_csv and no options when pandas is installed
(Debian: python3-pandas), else with the csv module; either way every record
must have the header's number of fields, there must be at least one row,
no column may be unnamed or duplicated, and the columns named in
NUMERIC must come out as numbers; sim's CSV holds its three tables (results,
latency, kv_memory) with a row per run in each, and each kv_memory row's
Figure 2 shares sum to 1 (--watermark auto adds load_controller rows: a
decision each, in time order). JSON: parsed strictly (NaN and Infinity
refused), every value under "results" / "sweep" that the CSV calls numeric
is a JSON number, never a string. Exit 0 on success, 1 with a message.
"""
import csv
import json
import sys

# Columns that must be numbers wherever they appear (sweep values included).
NUMERIC = {"watermark", "max-len", "workers", "throughput", "num_preemptions", "block_size",
           "blocks", "reserved_mb", "config.workers", "config.bytes_per_token",
           "utilization.savings", "kv_cache_usage_mean",
           # sim's three tables (issue 9): seconds, rates, shares, counts
           "max-num-seqs", "duration", "output_throughput", "request_queue_time_mean",
           "time_to_first_token_p50", "time_to_first_token_p99", "inter_token_latency_p99",
           "e2e_request_latency_p99", "request_throughput", "slo_attainment", "slo_goodput",
           "token_states", "reserved", "internal_fragmentation", "external_fragmentation",
           "prefix_cache_hit_rate", "frames_saved", "config.max_num_seqs",
           "config.max_num_batched_tokens", "config.num_gpu_blocks"}

# sim's CSV holds three tables, told apart by the "table" column; the
# kv_memory rows are the PagedAttention paper's Figure 2 split: shares of 1.
SIM_TABLES = {"results", "latency", "kv_memory"}
SPLIT = ("token_states", "reserved", "internal_fragmentation", "external_fragmentation")


def check_sim_tables(path, header, rows):
    # sim's outputs: a "table" column beside sim's own "mode" column
    if "table" not in header or "mode" not in header or "num_preemptions" not in header:
        return
    t = header.index("table")
    counts = {}
    last_time = None
    for i, r in enumerate(rows, 2):
        if r[t] == "load_controller":
            # --watermark auto: one row per decision, in time order, each
            # a raise or a lower to a watermark in [0, 1]
            w, when = float(r[header.index("watermark")]), float(r[header.index("time")])
            if r[header.index("decision")] not in ("raise", "lower") or not 0.0 <= w <= 1.0:
                fail(f"{path}:{i}: load controller row {r}")
            if last_time is not None and when < last_time:
                fail(f"{path}:{i}: load controller decisions out of time order")
            last_time = when
            continue
        if r[t] not in SIM_TABLES:
            fail(f"{path}:{i}: table {r[t]!r} is none of {sorted(SIM_TABLES)} or load_controller")
        counts[r[t]] = counts.get(r[t], 0) + 1
        if r[t] == "kv_memory":
            total = sum(float(r[header.index(k)]) for k in SPLIT)
            if abs(total - 1.0) > 1e-6:
                fail(f"{path}:{i}: the Figure 2 split sums to {total}, not 1")
    if set(counts) != SIM_TABLES or len(set(counts.values())) != 1:
        fail(f"{path}: expected the three tables with a row per run each, got {counts}")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        fail(f"{path}: expected a header and rows, got {len(rows)} records")
    header = rows[0]
    for i, r in enumerate(rows[1:], 2):
        if len(r) != len(header):
            fail(f"{path}:{i}: {len(r)} fields, header has {len(header)}")
    if len(set(header)) != len(header):
        fail(f"{path}: duplicate column names")
    check_sim_tables(path, header, rows[1:])
    try:
        import pandas
    except ImportError:
        print(f"{path}: csv module: {len(rows) - 1} rows x {len(header)} columns (pandas absent)")
        return
    df = pandas.read_csv(path)  # no options: the point of the exercise
    if df.shape != (len(rows) - 1, len(header)):
        fail(f"{path}: pandas read {df.shape}, expected {(len(rows) - 1, len(header))}")
    if any(str(c).startswith("Unnamed") for c in df.columns):
        fail(f"{path}: pandas found unnamed columns: {list(df.columns)}")
    for c in NUMERIC & set(df.columns):
        if not pandas.api.types.is_numeric_dtype(df[c]):
            fail(f"{path}: column {c} is not numeric to pandas ({df[c].dtype})")
    print(f"{path}: pandas {pandas.__version__}: {df.shape[0]} rows x {df.shape[1]} columns")


def reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def check_json(path):
    with open(path) as f:
        try:
            doc = json.load(f, parse_constant=reject_constant)
        except ValueError as e:
            fail(f"{path}: not strict JSON: {e}")
    found = 0
    for section, value in doc.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            for k, v in item.items():
                if k in NUMERIC or f"{section}.{k}" in NUMERIC:
                    found += 1
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        fail(f"{path}: {section}.{k} = {v!r} is not a JSON number")
    if not found:
        fail(f"{path}: none of the numeric keys found")
    print(f"{path}: strict JSON, {found} numeric values checked")


def main(argv):
    mode = None
    for a in argv[1:]:
        if a in ("--csv", "--json"):
            mode = a
        elif mode == "--csv":
            check_csv(a)
        elif mode == "--json":
            check_json(a)
        else:
            fail(f"usage: {argv[0]} [--csv FILE ...] [--json FILE ...]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
