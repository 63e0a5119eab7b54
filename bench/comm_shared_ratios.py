#!/usr/bin/env python3
"""Busbw of tierzero's collectives over Open MPI's, medians of interleaved repeats.

For each configuration (ranks, topology, shared memory on or off) runs, REPEATS times and
interleaved with the others (so that load changes hit every configuration alike):

  mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism M -np K \\
    BUILD/tierzero bench comm --topology T [--emulate] --min-bytes 4194304 --max-bytes 67108864 \\
    --ops OPS --rounds 5 --groups world --format json [--shared-memory off] [--single-copy off] \
    [--shared-all-to-all A]
M is Open MPI's single-copy mechanism for large shared-memory messages: with --mpi-single-copy auto
(the default) `cma` (process_vm_readv, one copy per message) where a probe run shows this host
allows it, which is Open MPI's best setting here, else `none` (every message copied in and out of
shared memory, as in containers without ptrace rights); the table says which ran.

Each run already alternates tierzero and Open MPI round by round and reports the ratio of their
median times (tierzero busbw / native busbw). This script prints, per (configuration, op, size),
the median of those ratios over the repeats with every repeat's value, the median busbw of both
sides, and the load average seen before each repeat (the machine is shared). With --compare-off
it also runs each configuration with `--shared-memory off` (the ring, pairwise exchange and
binomial tree over MPI point-to-point) so that the two tierzero algorithms can be compared through
the same run's native reference. --tierzero-single-copy and --shared-all-to-all take comma-separated
lists, and every combination runs as its own configuration, interleaved with the others (so the
in-place all-to-all and the two staged ones are compared through the same runs' Open MPI reference):

  python3 bench/comm_shared_ratios.py --ops all_to_all --repeats 7 --rounds 3 \
    --shared-all-to-all auto,pair-rings,rounds,in-place

  python3 bench/comm_shared_ratios.py --ranks 2,4,8 --frontier-mini --repeats 5 --compare-off
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import time


def run_once(build, np_, topology, ops, shared, rounds, mpi_copy="none", tz_single_copy="on", sizes=None,
             shared_all_to_all="auto"):
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl_vader_single_copy_mechanism",
           mpi_copy, "-np", str(np_), os.path.join(build, "tierzero"), "bench", "comm", "--topology", topology]
    if topology != "flat":
        cmd.append("--emulate")
    lo, hi = sizes or (4194304, 67108864)
    cmd += ["--min-bytes", str(lo), "--max-bytes", str(hi), "--ops", ops, "--rounds", str(rounds),
            "--groups", "world", "--format", "json", "--single-copy", tz_single_copy,
            "--shared-all-to-all", shared_all_to_all]
    if not shared:
        cmd += ["--shared-memory", "off"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        sys.exit(f"comm_shared_ratios: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def mpi_cma_works(build):
    """Open MPI with cma moves a 1 MiB message between two ranks here (ptrace rights allow it)."""
    try:
        run_once(build, 2, "flat", "all_to_all", True, 1, "cma", "off", (1 << 20, 1 << 20))
        return True
    except SystemExit:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--ranks", default="2,4,8", help="comma-separated rank counts (flat topology)")
    ap.add_argument("--frontier-mini", action="store_true", help="also 8 ranks of frontier-mini --emulate")
    ap.add_argument("--ops", default="all_to_all,broadcast,reduce_scatter")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--compare-off", action="store_true", help="also run with --shared-memory off")
    ap.add_argument("--json", help="append every run's result document here (one JSON per line)")
    ap.add_argument("--mpi-single-copy", choices=["auto", "cma", "none"], default="auto",
                    help="Open MPI's btl_vader_single_copy_mechanism (auto: cma where it works here)")
    ap.add_argument("--tierzero-single-copy", default="on",
                    help="tierzero's in-place reads (shared all-to-all, all-gather of 2 ranks): on, off or on,off")
    ap.add_argument("--shared-all-to-all", default="auto",
                    help="tierzero's shared all-to-all, comma-separated: auto, pair-rings, rounds, in-place")
    a = ap.parse_args()
    if a.repeats < 1 or a.rounds < 1:
        sys.exit("comm_shared_ratios: --repeats and --rounds must be at least 1")

    configs = [(int(k), "flat") for k in a.ranks.split(",") if k]
    if a.frontier_mini:
        configs.append((8, "frontier-mini"))
    copies = [x for x in a.tierzero_single_copy.split(",") if x]
    kinds = [x for x in a.shared_all_to_all.split(",") if x]
    if not copies or any(x not in ("on", "off") for x in copies):
        sys.exit(f"comm_shared_ratios: --tierzero-single-copy {a.tierzero_single_copy}: on, off or on,off")
    if not kinds or any(x not in ("auto", "pair-rings", "rounds", "in-place") for x in kinds):
        sys.exit(f"comm_shared_ratios: --shared-all-to-all {a.shared_all_to_all}: a comma-separated list "
                 "of auto, pair-rings, rounds, in-place")
    variants = [(k, t, True, c, st) for k, t in configs for c in copies for st in kinds]
    if a.compare_off:
        variants += [(k, t, False, "on", "auto") for k, t in configs]

    mpi_copy = a.mpi_single_copy
    if mpi_copy == "auto":
        mpi_copy = "cma" if mpi_cma_works(a.build) else "none"
    cpu = None
    ratios = collections.defaultdict(list)
    busbw = collections.defaultdict(lambda: ([], []))
    loads = collections.defaultdict(list)
    for rep in range(a.repeats):
        for variant in variants:
            k, topo, shared, copy, a2a = variant
            load = os.getloadavg()[0]
            t0 = time.time()
            doc = run_once(a.build, k, topo, a.ops, shared, a.rounds, mpi_copy, copy, None, a2a)
            loads[variant].append(load)
            cpu = cpu or doc.get("cpu")
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps({"repeat": rep, "shared_memory": shared, "single_copy": copy,
                                        "shared_all_to_all": a2a, "load": load, "doc": doc}) + "\n")
            for r in doc["results"]:
                key = (*variant, r["op"], r["size_bytes"])
                ratios[key].append(r["ratio"])
                busbw[key][0].append(r["tierzero"]["busbw_GBps"])
                busbw[key][1].append(r["native"]["busbw_GBps"])
            print(f"repeat {rep + 1}/{a.repeats}: {k} ranks {topo} shared={'on' if shared else 'off'} "
                  f"single-copy={copy} all-to-all={a2a} ({time.time() - t0:.0f} s, load {load:.1f})",
                  file=sys.stderr, flush=True)

    print(f"{cpu}; load average (1 min) over the repeats {min(min(v) for v in loads.values()):.1f}"
          f" .. {max(max(v) for v in loads.values()):.1f} on {os.cpu_count()} CPUs")
    print(f"Open MPI: btl_vader_single_copy_mechanism {mpi_copy}\n")
    print("| ranks | topology | shared memory | single copy | shared all-to-all | op | MiB | "
          "busbw ratio (median) | ratio per repeat | tierzero busbw GB/s | Open MPI busbw GB/s | "
          "load average per repeat |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(ratios):
        k, topo, shared, copy, a2a, op, size = key
        v = ratios[key]
        tz, nat = busbw[key]
        print(f"| {k} | {topo} | {'on' if shared else 'off'} | {copy} | {a2a} | {op} | {size >> 20} | "
              f"{statistics.median(v):.2f} | {' '.join(f'{x:.2f}' for x in v)} | "
              f"{statistics.median(tz):.3f} | {statistics.median(nat):.3f} | "
              f"{' '.join(f'{x:.1f}' for x in loads[key[:5]])} |")


if __name__ == "__main__":
    main()
