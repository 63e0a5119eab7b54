#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (libFuzzer + AddressSanitizer +
# UndefinedBehaviorSanitizer) into their own build folder and runs each for a bounded time on its seed
# corpus: tests/fuzz/<target>/ plus the repository's own files of that kind (configs/, models/,
# topologies/). Fails on any crash, uncaught exception, hang (an input running over -timeout),
# sanitizer report, leak, or allocation over the memory limits.
#   scripts/fuzz.sh [build-folder]       default build-fuzz
#   TZ_FUZZ_SECONDS=42                   fuzzing time per target (7 targets on 2 cores: about 2.5 minutes)
#   TZ_FUZZ_JOBS=<cores>                 targets fuzzed at once (default: one per core)
#   TZ_FUZZ_TARGETS="topology plan_json" which targets (default: every tests/fuzz/fuzz_*.cpp)
# New inputs that reach new code are kept in <build-folder>/corpus/<target>/ for the next run;
# a failing input is written to <build-folder>/artifacts/ with the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bash scripts/install_deps.sh
dir=${1:-build-fuzz}
seconds=${TZ_FUZZ_SECONDS:-42}
jobs=${TZ_FUZZ_JOBS:-$(nproc)}
# Whole numbers in range, or a message naming the variable (never a silent default).
check_count() {
  if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt 1 ] || [ "$2" -gt "$3" ]; then
    echo "fuzz.sh: $1 must be a whole number in [1, $3], got '$2'" >&2
    exit 2
  fi
}
check_count TZ_FUZZ_SECONDS "$seconds" 86400
check_count TZ_FUZZ_JOBS "$jobs" 256
targets=${TZ_FUZZ_TARGETS:-$(cd tests/fuzz && ls fuzz_*.cpp | sed 's/^fuzz_//; s/\.cpp$//')}

# A folder already configured for fuzzing (the test command's sanitizer build, which also builds
# the unit tests) is used as it is; otherwise a clang build of the fuzz targets alone is made.
if ! grep -q '^TZ_FUZZ:BOOL=ON' "$dir/CMakeCache.txt" 2>/dev/null; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_SANITIZE=ON \
    -DTZ_FUZZ=ON -DTZ_BUILD_TESTS=OFF -DTZ_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
fi
cmake --build "$dir" -j "$(nproc)" --target tz_fuzz_targets
dir=$(cd "$dir" && pwd)

# Seeds beyond tests/fuzz/<target>/: the files users really pass to each reader.
extra_seeds() {
  case $1 in
    train_config) echo "$root/configs $root/tests/engine/configs" ;;
    model_config) echo "$root/configs $root/models" ;;
    topology) echo "$root/topologies" ;;
  esac
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$dir/tmp" "$dir/artifacts"
export TMPDIR=$dir/tmp  # the token-file target's scratch files
# One target per core at a time (each fuzzer is one process on one core), so that the time bound per
# target holds and the whole pass takes about targets / cores of it.
fuzz_target() {
  local t=$1 rc=0
  mkdir -p "$dir/corpus/$t"
  # -max_len bounds the input, -rss_limit_mb the process and -malloc_limit_mb any single allocation
  # (an input of a few KB has no business asking for more); -timeout is per input.
  # shellcheck disable=SC2046
  "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -max_len=8192 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="$dir/artifacts/${t}-" \
    "$dir/corpus/$t" "$root/tests/fuzz/$t" $(extra_seeds "$t") >"$dir/fuzz_$t.log" 2>&1 || rc=$?
  echo "$rc" >"$dir/fuzz_$t.rc"
}
start=$SECONDS
running=0
for t in $targets; do
  rm -f "$dir/fuzz_$t.rc"
  fuzz_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
failed=()
for t in $targets; do
  log=$dir/fuzz_$t.log
  rc=$(cat "$dir/fuzz_$t.rc" 2>/dev/null || echo "none (the fuzzer did not finish)")
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if [ "$rc" != 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz finding' "$log"; then
    echo "fuzz $t: FAILED (exit $rc); last lines of $log:"
    tail -n 40 "$log"
    failed+=("$t")
  else
    echo "fuzz $t: ok, ${runs:-?} runs in ${seconds} s; ${done_line#*DONE }"
  fi
done
echo "fuzz: $(echo $targets | wc -w) targets in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $dir/artifacts/; replay one with: $dir/fuzz/fuzz_<target> <file>)"
  exit 1
fi
