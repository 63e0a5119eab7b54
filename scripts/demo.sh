#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains the default GPT (gpt-tiny) on the default
# corpus (Debian's fortunes) with the paper's three-level plan on the emulated 8-rank frontier-mini
# topology (2 nodes x 2 GPUs x 2 GCDs, all on this machine), printing the falling loss, the bytes each
# tier moved per step, and what zero3 would have moved (configs/demo_three_level.json; about a minute
# on 2 cores). Extra arguments go to `tierzero train` (e.g. --steps 40, --plan zeropp).
# It builds only the command line it runs (TZ_TARGETS below; checked by the CTest test
# cli_demo_builds_only_what_it_runs), into build/ or $TZ_BUILD_DIR, and ends with the time of each
# phase (install, build, training).
# The communication benchmark of the same topology: mpirun -np 8 build/tierzero bench comm --topology
# frontier-mini --emulate.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TZ_BUILD_DIR:-build}
phases=()
start=$(date +%s.%N)
phase_done() {  # phase_done NAME: records the seconds since the last phase ended
  local now
  now=$(date +%s.%N)
  phases+=("$1 $(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.1f", b - a }') s")
  echo "demo: $1 took ${phases[-1]#"$1 "}"
  start=$now
}
bash scripts/install_deps.sh
phase_done install
# A new build folder is configured as a unity build (about 8 sources per compiler run, as the test
# command builds): on 2 cores tierzero then builds in about 2.5 min instead of 6. A folder that exists
# keeps its configuration, so a later `cmake --build` of it rebuilds only what changed.
unity=()
[ -e "$dir/CMakeCache.txt" ] || unity=(-DCMAKE_UNITY_BUILD=ON)
TZ_TARGETS=tierzero bash scripts/build.sh "$dir" "${unity[@]}"  # the command line only: no tests or benchmarks
phase_done build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none -np 8 \
  "$dir"/tierzero train --config configs/demo_three_level.json --model gpt-tiny \
  --topology frontier-mini --emulate --threads 1 "$@"
phase_done training
echo "demo: phases: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g')"
