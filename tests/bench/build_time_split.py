#!/usr/bin/python3
"""CPU-seconds of a finished build by part, from its .ninja_log: core, the UI,
the CUDA objects, the tests' objects (their precompiled headers included),
benchmarks, and links and generated steps. Run it on a build made from
scratch (scripts/test's, or `cmake --preset release && cmake --build
build/release` in a fresh clone): the figures docs/performance.md gives for
the tests' compile come from it.
Usage: build_time_split.py BUILD_DIR   (e.g. build/release)
"""
import collections
import os
import sys


def part(target):
    if not (target.endswith(".o") or target.endswith(".gch") or target.endswith(".pch")):
        return "links and generated steps"
    if "/bench/" in target or target.startswith("tests/bench"):
        return "benchmarks"
    if target.startswith("tests/"):
        return "tests' objects"
    if "cuda" in target:
        return "CUDA objects"
    if target.startswith("ui/"):
        return "UI"
    if target.startswith("core/"):
        return "core"
    return "other objects"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("Usage: ")[1])
    log = os.path.join(sys.argv[1], ".ninja_log")
    if not os.path.isfile(log):
        sys.exit(f"{log}: no ninja log (build the directory first)")
    seconds = {}  # the last record of each target: a rebuilt one counts once
    with open(log) as f:
        for line in f:
            if line.startswith("#"):
                continue
            start, end, _, target, _ = line.rstrip("\n").split("\t")
            seconds[target] = (int(end) - int(start)) / 1000
    parts = collections.Counter()
    for target, s in seconds.items():
        parts[part(target)] += s
    for name, s in parts.most_common():
        print(f"{s:8.0f} s  {name}")
    print(f"{sum(parts.values()):8.0f} s  in all")


if __name__ == "__main__":
    main()
