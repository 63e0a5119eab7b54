# Shared by scripts/calibrate_machine.sh and scripts/calibrate_cluster.sh (sourced, not run): the
# steps both calibrations take the same way. The caller sets bin, out, cores, reps, steps, warmup
# and train_args (a `tierzero train` command line without --threads and --metrics).

# median_of FIELD FILE...: median over files of the median of FIELD over the steps after the warm-up.
median_of() {
  python3 - "$warmup" "$@" <<'PY'
import json, statistics, sys
warmup, field, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
per_file = [statistics.median(json.loads(line)[field] for line in list(open(f))[warmup:]) for f in files]
print(statistics.median(per_file))
PY
}

# measure_compute_rates: R(t), the 1-rank model-step rate with t = 1..cores threads (the median of
# reps runs each), into the array `rates` in TFLOP/s (what simulate --thread-tflops takes).
measure_compute_rates() {
  echo "== compute: 1-rank model-step rate R(t) with t = 1..$cores threads ($reps runs of $steps steps)"
  rates=()
  local t rep r files
  for t in $(seq 1 "$cores"); do
    files=()
    for rep in $(seq 1 "$reps"); do
      "$bin" "${train_args[@]}" --threads "$t" --metrics "$out/compute_t${t}_r$rep.jsonl" >/dev/null
      files+=("$out/compute_t${t}_r$rep.jsonl")
    done
    r=$(median_of gflops "${files[@]}")
    rates+=("$(python3 -c "print($r / 1000)")")
    echo "  R($t) = $(printf %.2f "$r") GFLOP/s"
  done
}
