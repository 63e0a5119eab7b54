#!/usr/bin/env python3
"""Compares the per-step records of two `tierzero train --metrics` files from step FROM on.
Default: every loss, gradient norm and learning rate must be bitwise equal (the JSON numbers are the
exact floats). With --rtol R (a resume at another world size or plan, where only the reduction order
changes): losses within R relative, learning rates and skip flags equal.
    python3 compare_metrics.py UNINTERRUPTED.jsonl RESUMED.jsonl --from-step N [--rtol R]
Exits 1 naming the first step and field that differ, or when RESUMED has no step >= N."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uninterrupted")
    ap.add_argument("resumed")
    ap.add_argument("--from-step", type=int, required=True)
    ap.add_argument("--rtol", type=float, default=None)
    a = ap.parse_args()
    whole = {r["step"]: r for r in map(json.loads, open(a.uninterrupted)) if r}
    resumed = [r for r in map(json.loads, open(a.resumed)) if r["step"] >= a.from_step]
    if not resumed:
        sys.exit(f"{a.resumed}: no step >= {a.from_step}")
    worst = 0.0
    for r in resumed:
        w = whole.get(r["step"])
        if w is None:
            sys.exit(f"{a.uninterrupted}: no step {r['step']}")
        exact = ("loss", "grad_norm", "lr", "skipped") if a.rtol is None else ("lr", "skipped")
        for key in exact:
            if w[key] != r[key]:
                sys.exit(f"step {r['step']}: {key} {w[key]!r} uninterrupted vs {r[key]!r} resumed")
        if a.rtol is not None:
            rel = abs(r["loss"] - w["loss"]) / abs(w["loss"])
            worst = max(worst, rel)
            if rel > a.rtol:
                sys.exit(f"step {r['step']}: loss {w['loss']!r} uninterrupted vs {r['loss']!r} resumed: "
                         f"{rel:.3g} relative > {a.rtol:g}")
    span = f"steps {resumed[0]['step']}..{resumed[-1]['step']}"
    if a.rtol is None:
        print(f"{span}: losses, gradient norms and learning rates bitwise equal")
    else:
        print(f"{span}: losses within {a.rtol:g} relative (largest {worst:.3g}), learning rates equal")


if __name__ == "__main__":
    main()
