#!/usr/bin/python3
"""Core's folders include each other in one direction only.

Reads every #include "x/y.h" in core/**/*.{h,cpp,cu,cuh}, maps each file to its
top-level folder under core/ (a file directly in core/ is a node of its own),
and fails when
  - the folder graph has a cycle (printed hop by hop, each hop with the
    file:line of every include that makes it), or
  - an include points at a folder that is not below the including one in
    LAYERS (so an upward include is named before it closes a cycle), or a
    folder is not in LAYERS at all.

Usage: check_include_cycles.py [CORE_DIR] [--strict]
  --strict  ignore KNOWN_EXCEPTIONS (shows what they hide).
"""

import os
import re
import sys

# Bottom -> top. A folder may include folders on lower rows only; folders on one
# row are independent of each other. cuda/ is an optional target beside engine/:
# it implements backend/'s DeviceRuntime, and nothing below cli/ includes it.
LAYERS = [
    ["common"],
    ["tensor", "config"],
    ["trace"],
    ["kernels", "kineto", "postmortem"],
    ["input"],
    ["memory"],
    ["device"],
    ["rank"],
    ["comm"],
    ["model", "backend"],
    ["parallel"],
    ["engine", "cuda"],
    ["analysis"],
    ["inspect", "launch"],
    ["attach"],
    ["cli"],
]

# Files counted in another folder than their own (none today; kept so a
# temporary move can be declared in one place).
KNOWN_EXCEPTIONS = {}

SOURCE_SUFFIXES = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def node_of(rel, exceptions):
    if rel in exceptions:
        return exceptions[rel]
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else rel


def collect(core, exceptions):
    """edges[(a, b)] = [(file, line, included path), ...] for a != b."""
    edges = {}
    nodes = set()
    count = 0
    for dirpath, _, files in os.walk(core):
        for name in sorted(files):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, core).replace(os.sep, "/")
            count += 1
            src = node_of(rel, exceptions)
            nodes.add(src)
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, text in enumerate(f, 1):
                    m = INCLUDE.match(text)
                    if not m:
                        continue
                    inc = m.group(1)
                    # Core-rooted ("comm/communicator.h") or beside the file.
                    if os.path.isfile(os.path.join(core, inc)):
                        target = inc
                    else:
                        local = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                        if not os.path.isfile(os.path.join(core, local)):
                            continue  # not a core header
                        target = local.replace(os.sep, "/")
                    if rel in exceptions:
                        continue  # its includes are checked once it has moved
                    dst = node_of(target, exceptions)
                    if dst != src:
                        edges.setdefault((src, dst), []).append(("core/" + rel, lineno, inc))
    return nodes, edges, count


def strongly_connected(nodes, adj):
    index, low, on_stack, stack, comps = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps


def shortest_cycle_through(start, comp, adj):
    """BFS from start back to start inside comp: a list of nodes a, b, ..., a."""
    prev = {}
    frontier = [start]
    seen = set()
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(adj.get(v, ())):
                if w not in comp:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, start]
                if w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return None


def describe(edge, edges):
    return "; ".join("%s:%d (%s)" % e for e in edges[edge])


def main(argv):
    strict = "--strict" in argv
    args = [a for a in argv[1:] if a != "--strict"]
    core = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..", "core"))
    exceptions = {} if strict else KNOWN_EXCEPTIONS
    nodes, edges, count = collect(core, exceptions)
    adj = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
    problems = 0

    for comp in strongly_connected(nodes, adj):
        if len(comp) < 2:
            continue
        problems += 1
        print("CYCLE among folders: " + ", ".join(comp))
        cycle = shortest_cycle_through(comp[0], set(comp), adj)
        print("  for example: " + " -> ".join(cycle))
        for a, b in sorted(edges):
            if a in comp and b in comp:
                print("  %s -> %s via %s" % (a, b, describe((a, b), edges)))

    level = {f: i for i, row in enumerate(LAYERS) for f in row}
    for n in sorted(nodes):
        if n not in level:
            problems += 1
            print("NOT IN LAYERS: core/%s: add it to LAYERS in %s" % (n, os.path.basename(__file__)))
    for (a, b) in sorted(edges):
        if a in level and b in level and level[b] >= level[a]:
            problems += 1
            print("UPWARD include: %s -> %s (LAYERS puts %s %s) via %s"
                  % (a, b, b, "beside it" if level[b] == level[a] else "above it", describe((a, b), edges)))

    if problems:
        print("FAILED: %d problem(s) in %d files under %s" % (problems, count, core))
        return 1
    print("OK: %d files, %d folder edges, no cycles; every include points down LAYERS%s"
          % (count, len(edges), "" if strict or not exceptions else
             " (known exceptions: %s)" % ", ".join(sorted(exceptions))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
