#!/usr/bin/env bash
# The whole test suite, from a clean clone on a fresh Debian 12 machine: installs what is missing,
# builds (Release), runs every CTest test (unit tests with ranks as threads, real mpirun runs), then
# builds again with AddressSanitizer + UndefinedBehaviorSanitizer and runs the unit tests there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bash scripts/build.sh build
(cd build && ctest --output-on-failure -j 2 --timeout 600)
if [ "${TZ_SKIP_SANITIZERS:-0}" != 1 ]; then
  bash scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTZ_SANITIZE=ON -DTZ_BUILD_BENCH=OFF
  # Real multi-process runs are covered by the Release pass; Open MPI itself is not sanitizer-clean.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j 2 --timeout 900 -LE "mpi|slow")
fi
