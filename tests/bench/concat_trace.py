#!/usr/bin/python3
"""Writes copies of one real Kineto trace, one after another in time, into one
trace of at least --mb MB: the input for timing `shardscope-cli analyze`
against Python's json.load on a real trace's own mix (docs/performance.md).
Each copy's timestamps move past the previous copy's end; its correlations,
flow ids and External ids move past the previous copy's largest, and its
ProfilerStep numbers continue, so every copy pairs and steps as the original.
Events are written one per line (Kineto's indented layout is not kept: bytes
per event differ from the original's; the script prints both).
Usage: concat_trace.py IN OUT [--mb 200]
"""
import gzip
import json
import re
import sys

STEP = re.compile(r"^ProfilerStep#(\d+)$")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    src, dst = argv[1], argv[2]
    mb = 200.0
    if len(argv) == 5 and argv[3] == "--mb":
        mb = float(argv[4])
    elif len(argv) != 3:
        sys.exit("error: concat_trace.py IN OUT [--mb N]")
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rb") as f:
        raw = f.read()
    doc = json.loads(raw)
    events = doc if isinstance(doc, list) else doc.get("traceEvents")
    if not isinstance(events, list) or not events:
        sys.exit(f"error: {src} has no traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    begin = min(e["ts"] for e in timed)
    end = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    span = end - begin + 1000.0
    ids = [e.get("id") for e in events if isinstance(e.get("id"), int)]
    ids += [e["args"][k] for e in events for k in ("correlation", "External id")
            if isinstance(e.get("args"), dict) and isinstance(e["args"].get(k), int)]
    id_step = (max(ids) + 1) if ids else 0
    steps = [int(m.group(1)) for e in events if (m := STEP.match(str(e.get("name", ""))))]
    step_step = (max(steps) - min(steps) + 1) if steps else 0
    head = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
    target = int(mb * 1e6)
    written = copies = count = 0
    with open(dst, "w") as out:
        opening = json.dumps(head)[:-1] + (", " if head else "") + '"traceEvents": [\n'
        out.write(opening)
        written += len(opening)
        first = True
        while written < target:
            for e in events:
                if e.get("ph") == "M" and copies:
                    continue  # metadata once
                e = dict(e)
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + copies * span
                if isinstance(e.get("id"), int):
                    e["id"] += copies * id_step
                if isinstance(e.get("args"), dict):
                    a = dict(e["args"])
                    for k in ("correlation", "External id"):
                        if isinstance(a.get(k), int) and a[k] > 0:
                            a[k] += copies * id_step
                    e["args"] = a
                m = STEP.match(str(e.get("name", "")))
                if m:
                    e["name"] = f"ProfilerStep#{int(m.group(1)) + copies * step_step}"
                line = ("" if first else ",\n") + json.dumps(e)
                first = False
                out.write(line)
                written += len(line)
                count += 1
            copies += 1
        out.write("\n]}\n")
    print(f"{dst}: {copies} copies of {src} ({len(events)} events, {len(raw) / len(events):.0f} bytes/event), "
          f"{count} events, {written / count:.0f} bytes/event")


if __name__ == "__main__":
    main(sys.argv)
