#!/usr/bin/env python3
"""Checks that every `#include "muninn/..."` in include/muninn points down the floors.

The floor order is read from docs/architecture.md, from the one line that starts with
"Floor order:" and holds it in backticks, e.g.

    Floor order: `core < backend < ops < io, engine < nn < policies < model < families < runtime`

Folders joined by a comma share a floor and may include each other; a header may include its
own floor and the floors below it. The headers at the top of include/muninn (muninn.hpp,
cuda.cuh) gather everything and sit above every floor. A folder the order does not name is an
error, so a new folder has to be placed in the order (and in the docs) before it is used.

    include_floors.py --include ROOT/include --docs ROOT/docs/architecture.md

Prints one line per upward include, naming the file, the line and the include, and exits 1.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]muninn/([^">]+)[">]')
ORDER_LINE = re.compile(r'^Floor order:\s*`([^`]+)`')


def read_order(docs):
    with open(docs, encoding="utf-8") as f:
        lines = [m.group(1) for m in map(ORDER_LINE.match, f) if m]
    if len(lines) != 1:
        sys.exit(f"{docs}: expected one line 'Floor order: `a < b, c < ...`', found {len(lines)}")
    floors = {}
    for level, group in enumerate(lines[0].split("<")):
        for name in group.split(","):
            name = name.strip()
            if not name or name in floors:
                sys.exit(f"{docs}: floor order '{lines[0]}' names '{name}' twice or leaves a gap")
            floors[name] = level
    return lines[0].strip(), floors


def floor_of(rel, floors):
    """Floor of a path relative to include/muninn; None for an unknown folder."""
    parts = rel.split("/")
    if len(parts) == 1:  # muninn.hpp, cuda.cuh: the umbrella headers, above every floor
        return len(floors) + 1, "the umbrella headers"
    return floors.get(parts[0]), parts[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--include", required=True, help="the include/ directory that holds muninn/")
    ap.add_argument("--docs", required=True, help="docs/architecture.md, which states the floor order")
    args = ap.parse_args()
    order, floors = read_order(args.docs)
    root = os.path.join(args.include, "muninn")
    problems, checked = [], 0
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            src_level, src_floor = floor_of(rel, floors)
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    checked += 1
                    target = m.group(1)
                    where = f"include/muninn/{rel}:{lineno}: #include \"muninn/{target}\""
                    if src_level is None:
                        problems.append(f"{where}: folder '{src_floor}/' is not in the floor order")
                        continue
                    dst_level, dst_floor = floor_of(target, floors)
                    if dst_level is None:
                        problems.append(f"{where}: folder '{dst_floor}/' is not in the floor order")
                    elif dst_level > src_level:
                        problems.append(f"{where}: runs up a floor ({src_floor} may not include {dst_floor})")
    if checked == 0:
        sys.exit(f"{root}: no muninn includes found (wrong --include?)")
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} include(s) run up a floor; floor order: {order}")
        return 1
    print(f"{checked} includes checked; all point down the floors: {order}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
