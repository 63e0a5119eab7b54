#!/usr/bin/env python3
"""Checks the layering of src/: every #include "layer/..." must name a layer the including file's
layer may use (docs/architecture.md), and no file of a layer includes a system header kept from it
(the command line reaches MPI only through comm/: no <mpi.h> under src/cli/). Exits 1 and lists
every offending line otherwise.

The allowed uses below are closed under chaining (checked here too), so a file that passes can never
reach a forbidden header through a chain of includes: plan/ reaches no comm/ or quant/ header, and
so on. Run: python3 scripts/check_layers.py [--graph] [--root SRC_DIR]
"""
import pathlib
import re
import sys

# layer -> the layers it may include (besides itself). Lower layers first.
ALLOWED = {
    "core": set(),
    "device": {"core"},
    "topology": {"core"},
    "optim": {"core", "device"},
    "data": {"core"},
    "model": {"core", "device"},
    "collective": {"core", "topology"},
    "comm": {"core", "device", "topology", "collective"},
    "quant": {"core", "device", "topology", "collective", "comm"},
    "plan": {"core", "topology", "collective"},
    "perf": {"core", "device", "topology", "collective", "comm", "plan", "model"},
    "engine": {"core", "device", "topology", "collective", "comm", "quant", "plan", "model", "optim", "data"},
    "checkpoint": {"core", "device", "topology", "collective", "comm", "quant", "plan", "model", "optim",
                   "data", "engine"},
    "train": {"core", "device", "topology", "collective", "comm", "quant", "plan", "model", "optim", "data",
              "engine", "checkpoint", "perf"},
}
# The two layers on top, beside each other: the benchmark library and the command line.
ABOVE_ALL = set(ALLOWED)
ALLOWED["bench"] = set(ABOVE_ALL)
ALLOWED["cli"] = set(ABOVE_ALL) | {"bench"}

# layer -> system headers it may not include, and where the layer reaches that library instead.
FORBIDDEN_SYSTEM = {
    "cli": {"mpi.h": "comm/mpi_mesh.hpp"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')


def check_closed():
    """A chain a -> b -> c must be allowed as a -> c, or the check of direct includes is not enough."""
    bad = []
    for a, uses in ALLOWED.items():
        for b in uses:
            for c in ALLOWED.get(b, ()):
                if c != a and c not in uses:
                    bad.append(f"{a} may use {b}, which may use {c}, but {a} may not use {c}")
    return bad


def main():
    root = pathlib.Path(__file__).resolve().parent.parent / "src"
    if "--root" in sys.argv:
        root = pathlib.Path(sys.argv[sys.argv.index("--root") + 1])
    problems = check_closed()
    if not root.is_dir():
        print(f"check_layers: {root} is not a directory", file=sys.stderr)
        return 2
    edges = {}
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h", ".cu"):
            continue
        layer = path.relative_to(root).parts[0]
        if layer not in ALLOWED:
            problems.append(f"src/{path.relative_to(root)}: folder '{layer}' is not a known layer "
                            "(add it to scripts/check_layers.py and docs/architecture.md)")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            system = SYSTEM_INCLUDE.match(line)
            if system and system.group(1) in FORBIDDEN_SYSTEM.get(layer, {}):
                problems.append(f"src/{path.relative_to(root)}:{n}: {layer} may not include <{system.group(1)}> "
                                f"(it goes through {FORBIDDEN_SYSTEM[layer][system.group(1)]})")
                continue
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            target = m.group(1).split("/")[0]
            if target not in ALLOWED or target == layer:
                continue
            edges.setdefault(layer, set()).add(target)
            if target not in ALLOWED[layer]:
                problems.append(f"src/{path.relative_to(root)}:{n}: {layer} may not include {m.group(1)} "
                                f"(a {target} header); {layer} may use: "
                                f"{', '.join(sorted(ALLOWED[layer])) or 'nothing'}")
    if "--graph" in sys.argv:
        for layer in ALLOWED:
            print(f"{layer:<11} -> {', '.join(sorted(edges.get(layer, ()))) or '-'}")
    if problems:
        print("check_layers: include lines against the layering:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"check_layers: {len(ALLOWED)} layers, no include against the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
