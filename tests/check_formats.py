"""tests/check_formats.py - read pagefault's machine outputs as a script would.

Usage: check_formats.py [--csv FILE ...] [--json FILE ...]

CSV: read with pandas.read_csv and no options when pandas is installed
(Debian: python3-pandas), else with the csv module; either way every record
must have the header's number of fields, there must be at least one row,
no column may be unnamed or duplicated, and the columns named in
NUMERIC must come out as numbers. JSON: parsed strictly (NaN and Infinity
refused), every value under "results" / "sweep" that the CSV calls numeric
is a JSON number, never a string. Exit 0 on success, 1 with a message.
"""
import csv
import json
import sys

# Columns that must be numbers wherever they appear (sweep values included).
NUMERIC = {"watermark", "max-len", "workers", "throughput", "num_preemptions", "block_size",
           "blocks", "reserved_mb", "config.workers", "config.bytes_per_token",
           "utilization.savings", "kv_cache_usage_mean"}


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
