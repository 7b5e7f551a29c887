#!/usr/bin/env python3
"""The project's layering: no source file includes a header of a library above its own.

The libraries stand in one order (docs/architecture.md):

    datasets <- reward <- env, kernels <- agents <- experiments <- tools, python

A library's public headers live under FOLDER/include/sparserl/NAME/ (and agents' LibTorch headers
under agents/learning/include/sparserl/agents/torch/), so an `#include "sparserl/NAME/..."` names
the library it reaches into. Every C++ source git tracks under a library's folder may include its
own library and those below it; env and kernels are siblings (neither includes the other); tests/
may include anything. An include guarded by `__has_include` is still an include: the order holds
for optional parts too. Exits 0 when the layering holds, 1 listing each offending line as
`path:line: LIBRARY includes sparserl/NAME (allowed: ...)`, 2 on a usage error, 77 (CTest's
"skipped") outside a git checkout. Python 3 standard library only; tests/tools/check_layers_test.py
tests it on a made-up tree.
"""

import argparse
import os
import re
import subprocess
import sys

SKIPPED = 77
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".in")

# Folder prefix -> the library its sources belong to (the longest prefix wins).
FOLDERS = {
    "datasets/": "datasets",
    "reward/": "reward",
    "env/": "env",
    "agents/kernels/": "kernels",
    "agents/learning/": "agents",
    "experiments/": "experiments",
    "tools/": "tools",
    "python/": "python",
}

# What each library may include (itself included).
ALLOWED = {
    "datasets": {"datasets"},
    "reward": {"datasets", "reward"},
    "env": {"datasets", "reward", "env"},
    "kernels": {"datasets", "reward", "kernels"},
    "agents": {"datasets", "reward", "env", "kernels", "agents"},
    "experiments": {"datasets", "reward", "env", "kernels", "agents", "experiments"},
    "tools": {"datasets", "reward", "env", "kernels", "agents", "experiments", "tools"},
    "python": {"datasets", "reward", "env", "kernels", "agents", "experiments", "python"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"sparserl/([A-Za-z_]+)/')


def library_of(path):
    best = None
    for prefix, library in FOLDERS.items():
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, library)
    return best[1] if best else None


def violations(root, paths):
    """(path, line, library, included) for every include that breaks the order."""
    found = []
    for path in paths:
        library = library_of(path)
        if library is None or not path.endswith(SOURCE_SUFFIXES):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, start=1):
                m = INCLUDE.match(text)
                if m and m.group(1) not in ALLOWED[library]:
                    found.append((path, number, library, m.group(1)))
    return found


def tracked_files(root):
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [p for p in out.decode().split("\0") if p]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.getcwd(), help="the project's root (a git checkout)")
    args = parser.parse_args(argv)
    paths = tracked_files(args.root)
    if paths is None:
        print(f"check_layers: {args.root} is not a git checkout; skipped")
        return SKIPPED
    found = violations(args.root, paths)
    for path, line, library, included in found:
        allowed = ", ".join(sorted(ALLOWED[library]))
        print(f"{path}:{line}: {library} includes sparserl/{included} (allowed: {allowed})")
    if found:
        print(f"check_layers: {len(found)} includes break the layering (docs/architecture.md)")
        return 1
    print(f"check_layers: the layering holds in {len(paths)} tracked files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
