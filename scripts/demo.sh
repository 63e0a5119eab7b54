#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the communication benchmark on an emulated
# 8-rank frontier-mini (2 nodes x 2 GPUs x 2 GCDs on this one machine): every collective per tier,
# flat and hierarchical, beside Open MPI's own collectives, over a short size range (< 1 minute).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none -np 8 \
  build/tierzero bench comm --topology frontier-mini --emulate \
  --min-bytes 4096 --max-bytes 1048576 --step-factor 16 --rounds 1 --round-seconds 0.05 "$@"
