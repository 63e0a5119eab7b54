#!/usr/bin/env bash
# The whole test suite, from a clean clone on a fresh Debian 12 machine: installs what is missing,
# checks the layering of src/ and the formatting, builds (Release, gcc, warnings as errors) and runs
# every CTest test (unit tests with ranks as threads, real mpirun runs); then one clang build with
# AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's coverage runs the unit tests again
# and fuzzes every input reader for a bounded time (scripts/fuzz.sh); then the thread-world suites
# (collective, comm, quant, engine) run under ThreadSanitizer. Where nvcc is installed, the CUDA
# backend's device layer is compiled too.
#   TZ_SKIP_SANITIZERS=1  skip the sanitizer builds (the fuzzing then builds its own, unless skipped)
#   TZ_SKIP_FUZZ=1        skip the fuzzing
# Each stage prints its start time in seconds since the script began, so a slow stage shows in the log.
# Every build here is a unity build (CMAKE_UNITY_BUILD: about 8 files of one target compiled as one
# unit), which builds from scratch in less than half the time, since the heavy headers (GoogleTest,
# nlohmann/json, CLI11) are parsed and instantiated once per unit instead of once per file; the
# default build of scripts/build.sh compiles file by file, which keeps an edit's rebuild small. The
# sanitizer builds keep line tables only (-gline-tables-only, gcc -g1): reports still name file and
# line, and compiling and linking take less time than with full debug information.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "== test.sh at ${SECONDS} s: $*"; }
bash scripts/install_deps.sh
python3 scripts/check_layers.py  # also a CTest test; first here, so a layering error fails in seconds
bash scripts/check_format.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
stage "Release build"
bash scripts/build.sh build -DTZ_WERROR=ON -DCMAKE_UNITY_BUILD=ON
stage "Release tests"
(cd build && ctest --output-on-failure -j 2 --timeout 600)
# The CUDA backend compiles wherever a CUDA toolkit is installed (its tests need a GPU: tz_cuda_tests,
# docs/backends.md), so a change of the kernel table or the seam that breaks it fails here.
if command -v nvcc >/dev/null; then
  stage "CUDA backend build (device layer)"
  cmake -S . -B build-cuda-ci -G Ninja -DTZ_CUDA=ON -DTZ_WERROR=ON -DTZ_BUILD_TESTS=OFF -DTZ_BUILD_BENCH=OFF \
    -DCMAKE_UNITY_BUILD=ON >/dev/null
  cmake --build build-cuda-ci --target tz_device
else
  stage "CUDA backend build skipped: no nvcc on this machine"
fi
# run_suites NAME BUILD_DIR SUITE[:GTEST_FILTER]...: GoogleTest binaries of BUILD_DIR/tests run whole, in
# that folder (where ctest runs them), each as two shards at once, one per core: one process per suite,
# not one per test case (a sanitizer binary takes about 0.2 s to start, and the suites hold about 1700
# cases), and the rank threads of a suite leave the other core free half the time. A shard's output is
# printed whole after both end, so reports do not interleave; 20 minutes per shard stop a hang.
run_suites() {
  local name=$1 dir=$2 failed=0 entry suite filter shard rc pids
  shift 2
  for entry in "$@"; do
    suite=${entry%%:*}
    filter=${entry#"$suite"}
    filter=${filter#:}
    pids=()
    for shard in 0 1; do
      (cd "$dir/tests" && GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard GTEST_FILTER=${filter:-*} \
        timeout 1200 ./"$suite" --gtest_brief=1 >"$suite.shard$shard.log" 2>&1) &
      pids+=($!)
    done
    for shard in 0 1; do
      rc=0
      wait "${pids[$shard]}" || rc=$?
      echo "$name: $suite shard $shard of 2: exit $rc"
      cat "$dir/tests/$suite.shard$shard.log"
      [ "$rc" = 0 ] || failed=1
    done
  done
  [ "$failed" = 0 ] || { echo "$name: a suite failed (above)" >&2; exit 1; }
}
if [ "${TZ_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "ASan+UBSan build"
  CC=clang CXX=clang++ bash scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_SANITIZE=ON \
    -DTZ_FUZZ=ON -DTZ_WERROR=ON -DCMAKE_UNITY_BUILD=ON -DTZ_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG"
  stage "ASan+UBSan tests"
  # Every GoogleTest suite but the slow one (label slow: hundreds of steps), then the other CTest tests
  # (command-line runs: names without the dot of Suite.Case). Real multi-process runs are covered by the
  # Release pass; Open MPI itself is not sanitizer-clean.
  export ASAN_OPTIONS=detect_leaks=0
  asan_suites=()
  for exe in build-asan/tests/tz_*_tests; do
    [ "${exe##*/}" = tz_engine_slow_tests ] || asan_suites+=("${exe##*/}")
  done
  run_suites "ASan+UBSan" build-asan "${asan_suites[@]}"
  (cd build-asan && ctest --output-on-failure -j 2 --timeout 900 -LE "mpi|slow" -E '[.]')
  stage "fuzzing"
  # libFuzzer targets, 20 s each here (two at a time: about 80 s for 7)
  [ "${TZ_SKIP_FUZZ:-0}" = 1 ] || TZ_FUZZ_SECONDS=${TZ_FUZZ_SECONDS:-20} bash scripts/fuzz.sh build-asan
  # ThreadSanitizer: only the suites whose ranks are threads (races between rank threads, progress
  # threads and the parallel_for pool). The engine suite runs world size 8 in the tests that check
  # the three-level plans and the delays (EngineParity, EngineDelayInjection), not again in each of the
  # other parity suites, whose world-8 cases run the same threads and collectives.
  tsan_suites=(tz_device_tests tz_collective_tests tz_comm_tests tz_quant_tests tz_engine_tests)
  tsan_engine_filter="-Worlds/EngineOnDevices.*/world8:Worlds/EngineAccumulationParity.*/world8"
  tsan_engine_filter+=":Families/EngineFamilyParity.*_world8"
  stage "ThreadSanitizer build"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_TSAN=ON -DTZ_WERROR=ON \
    -DCMAKE_UNITY_BUILD=ON -DTZ_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
  cmake --build build-tsan -j "$(nproc)" --target "${tsan_suites[@]}"
  stage "ThreadSanitizer tests"
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan_suppressions.txt"
  run_suites ThreadSanitizer build-tsan tz_device_tests tz_collective_tests tz_comm_tests tz_quant_tests \
    "tz_engine_tests:$tsan_engine_filter"
elif [ "${TZ_SKIP_FUZZ:-0}" != 1 ]; then
  bash scripts/fuzz.sh build-fuzz
fi
stage "done"
