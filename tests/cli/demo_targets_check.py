#!/usr/bin/env python3
"""Checks that scripts/demo.sh builds only what it runs, and that the full test command still builds
everything.
    python3 demo_targets_check.py SOURCE_DIR
demo.sh's TZ_TARGETS (the targets it hands scripts/build.sh) must be exactly the programs it runs from
its build folder ("$dir"/NAME), each an add_executable of the project; scripts/build.sh must pass
TZ_TARGETS to `cmake --build --target`; a new build folder must be configured as a unity build (the
demo's build time on a fresh machine); scripts/test.sh must build without TZ_TARGETS (every test suite).
Exits 1 naming what differs."""
import pathlib
import re
import sys


def fail(message):
    sys.exit(f"demo_targets_check: {message}")


def builds_line(code):
    """The line of demo.sh that calls scripts/build.sh."""
    return next((line for line in code.splitlines() if "scripts/build.sh" in line), "")


def main():
    root = pathlib.Path(sys.argv[1])
    demo = (root / "scripts/demo.sh").read_text()
    code = "\n".join(line.split("#", 1)[0] for line in demo.splitlines())  # comments may name programs
    builds = re.findall(r"TZ_TARGETS=(\"[^\"]*\"|'[^']*'|\S+)\s+bash\s+scripts/build\.sh", code)
    if len(builds) != 1:
        fail(f"scripts/demo.sh: expected one 'TZ_TARGETS=... bash scripts/build.sh', found {len(builds)}")
    built = set(builds[0].strip("\"'").split())
    ran = set(re.findall(r"\"\$dir\"/([A-Za-z0-9_]+)", code))
    if not ran:
        fail("scripts/demo.sh: runs no program from its build folder (\"$dir\"/NAME)")
    if built != ran:
        fail(f"scripts/demo.sh builds {sorted(built)} but runs {sorted(ran)}")
    executables = set()
    cmakes = [root / "CMakeLists.txt"] + [f for d in ("src", "tests", "bench") for f in (root / d).rglob("CMakeLists.txt")]
    for cmake in cmakes:
        executables |= set(re.findall(r"add_executable\(\s*([A-Za-z0-9_]+)", cmake.read_text()))
    unknown = built - executables
    if unknown:
        fail(f"scripts/demo.sh builds {sorted(unknown)}, which no CMakeLists.txt defines")
    if not re.search(r"unity=\(-DCMAKE_UNITY_BUILD=ON\)", code) or '"${unity[@]}"' not in builds_line(code):
        fail("scripts/demo.sh: a new build folder must be configured as a unity build (-DCMAKE_UNITY_BUILD=ON)")
    build_sh = (root / "scripts/build.sh").read_text()
    if not re.search(r"cmake --build .*\$\{TZ_TARGETS:\+--target \$TZ_TARGETS\}", build_sh):
        fail("scripts/build.sh: does not pass TZ_TARGETS to 'cmake --build --target'")
    test_sh = (root / "scripts/test.sh").read_text()
    release = [line for line in test_sh.splitlines() if re.search(r"bash scripts/build\.sh build\b", line)]
    if not release or any("TZ_TARGETS" in line for line in release):
        fail("scripts/test.sh: the Release build must build every target (no TZ_TARGETS)")
    print(f"demo.sh builds and runs exactly {sorted(built)}; scripts/test.sh builds everything")


if __name__ == "__main__":
    main()
