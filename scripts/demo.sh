#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains the default GPT (gpt-tiny) on the default
# corpus (Debian's fortunes) with the paper's three-level plan on the emulated 8-rank frontier-mini
# topology (2 nodes x 2 GPUs x 2 GCDs, all on this machine), printing the falling loss, the bytes each
# tier moved per step, and what zero3 would have moved (configs/demo_three_level.json; about a minute
# on 2 cores). Extra arguments go to `tierzero train` (e.g. --steps 40, --plan zeropp).
# The communication benchmark of the same topology: mpirun -np 8 build/tierzero bench comm --topology
# frontier-mini --emulate.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
TZ_TARGETS=tierzero bash scripts/build.sh build  # the command line only: no tests or benchmarks
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none -np 8 \
  build/tierzero train --config configs/demo_three_level.json --model gpt-tiny \
  --topology frontier-mini --emulate --threads 1 "$@"
