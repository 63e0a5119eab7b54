#!/usr/bin/env bash
# Configures and builds tierzero into build/ (or the folder given as $1, with extra CMake flags after it).
# TZ_TARGETS="tierzero ..." builds only those targets (and what they need) instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086  # TZ_TARGETS is a list of target names
cmake --build "$dir" -j "$(nproc)" ${TZ_TARGETS:+--target $TZ_TARGETS}
