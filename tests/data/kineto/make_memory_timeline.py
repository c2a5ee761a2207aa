#!/usr/bin/env python3
# Writes the PyTorch profiler's memory timeline exports for one small run, in
# both forms profile.export_memory_timeline writes by suffix (source:
# torch/profiler/profiler.py export_memory_timeline and
# torch/profiler/_memory_profiler.py MemoryProfileTimeline; written from that
# documented behaviour, not by running torch):
#   run.raw.json.gz  export_memory_timeline_raw: [(t ns, action, bytes, category)],
#                    action = Action.value (PREEXISTING 1, CREATE 2,
#                    INCREMENT_VERSION 3, DESTROY 4), category = _CATEGORY_TO_INDEX
#                    (Parameter 0, Optimizer state 1, Input 2, Temporary 3,
#                    Activation 4, Gradient 5, Autograd detail 6, Unknown 7);
#   run.json.gz      _coalesce_timeline: [times us, sizes], each row 9 values,
#                    row[0] = 0, row[c + 1] the bytes of category c; the
#                    pre-existing time -1 becomes the smallest positive time.
# The run, MiB: a 4 Parameter before profiling; at 1000 us Input 1; 2000 us
# Activation 2; 3000 us Gradient 4 created and the Activation freed; 4000 us
# Optimizer state 8 (peak: 4 + 8 + 1 + 4 = 17 MiB, 3000 us after the start);
# 5000 us Gradient and Input freed (12 MiB).
import gzip
import json
import os
import sys

MiB = 1 << 20
PARAM, OPT, INPUT, TEMP, ACT, GRAD, AUTOGRAD, UNKNOWN = range(8)
PRE, CREATE, INCR, DESTROY = 1, 2, 3, 4

RAW = [(-1, PRE, 4 * MiB, PARAM),
       (1000000, CREATE, 1 * MiB, INPUT),
       (2000000, CREATE, 2 * MiB, ACT),
       (3000000, CREATE, 4 * MiB, GRAD),
       (3000000, DESTROY, -2 * MiB, ACT),
       (4000000, CREATE, 8 * MiB, OPT),
       (5000000, DESTROY, -4 * MiB, GRAD),
       (5000000, DESTROY, -1 * MiB, INPUT)]


def coalesce(raw):
    times, sizes = [], []
    t_min = -1
    for t, _action, delta, cat in raw:
        if t != -1:
            t = int(t / 1000)
        if t_min == -1 or (0 < t < t_min):
            t_min = t
        if not times:
            times.append(t)
            sizes.append([0] * 9)
        elif t != times[-1]:
            times.append(t)
            sizes.append(sizes[-1].copy())
        sizes[-1][cat + 1] += delta
    return [t_min if t < 0 else t for t in times], sizes


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "memory_timeline")
    os.makedirs(out, exist_ok=True)
    # mtime=0: the same bytes every time the script runs.
    with open(os.path.join(out, "run.raw.json.gz"), "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as g:
        g.write(json.dumps(RAW).encode())
    with open(os.path.join(out, "run.json.gz"), "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as g:
        g.write(json.dumps(list(coalesce(RAW))).encode())
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(list(coalesce(RAW)), f)


if __name__ == "__main__":
    main()
