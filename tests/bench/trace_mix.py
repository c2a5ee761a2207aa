#!/usr/bin/python3
"""The per-event mix of a Kineto trace (.json or .json.gz): events, bytes per
event, args per event, and each category's share of the events and of the
args. Run it on a real trace and on bench_kineto_parse's real-shaped one to
compare them (docs/performance.md, Real-shaped traces).
Usage: trace_mix.py TRACE [TRACE ...]
"""
import collections
import gzip
import json
import os
import sys


def mix(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        text = f.read()
    doc = json.loads(text)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    cats = collections.Counter()
    args_by_cat = collections.Counter()
    for e in events:
        cat = e.get("cat") or ("(metadata)" if e.get("ph") == "M" else "(none)")
        cats[cat] += 1
        args_by_cat[cat] += len(e.get("args") or {})
    n = max(len(events), 1)
    total_args = sum(args_by_cat.values())
    print(f"{os.path.basename(path)}: {len(events)} events, {len(text) / n:.0f} bytes/event (JSON text), "
          f"{total_args / n:.2f} args/event")
    for cat, count in cats.most_common():
        print(f"  {cat:<22} {100 * count / n:5.1f} % of events  {args_by_cat[cat] / count:5.2f} args each")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        mix(p)
