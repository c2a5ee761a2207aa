#!/usr/bin/env python3
"""Cuts a ShardScope trace down to a fuzz seed of a few KB: the metadata,
every op (compute and collective spans, step markers) and only the first few
allocations, frees, gradient and counter events of each rank, written compact.
Fuzzing runs fastest on small inputs; the reader and the models still see each
kind of event. usage: trim_trace.py IN.trace.json OUT.json [--keep N]"""
import argparse
import collections
import json

BULKY = {"alloc", "free", "grad_ready", "copy"}  # many per step; a few show the kind

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--keep", type=int, default=3, help="events of each bulky kind kept per rank")
    ap.add_argument("--max-ops", type=int, default=40, help="ops kept per rank")
    a = ap.parse_args()
    with open(a.src) as f:
        doc = json.load(f)
    seen = collections.Counter()
    out = []
    for e in doc["traceEvents"]:
        kind = "counter" if e["ph"] == "C" else e.get("cat", "meta")
        key = (e.get("pid"), kind if kind in BULKY or kind == "counter" else "op")
        if kind != "meta":
            seen[key] += 1
            limit = a.max_ops if key[1] == "op" else a.keep
            if seen[key] > limit:
                continue
        out.append(e)
    doc["traceEvents"] = out
    with open(a.dst, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")

if __name__ == "__main__":
    main()
