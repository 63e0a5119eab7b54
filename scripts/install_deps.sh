#!/usr/bin/env bash
# Installs the Debian 12 packages tierzero needs to build, test and run its demos. Idempotent:
# packages already present are not fetched again.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git python3
  libgtest-dev libgmock-dev libbenchmark-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  clang libclang-rt-dev llvm  # libFuzzer targets (scripts/fuzz.sh); llvm-symbolizer for their reports
  fortunes            # default training corpus: real English text
  gnuplot-nox         # charts from 'tierzero simulate' and 'tierzero plot'
  python3-torch python3-numpy  # the checkpoint export test reads safetensors in PyTorch (about 2 min to install)
  slurmctld slurmd slurm-client munge  # the Slurm test runs a cluster of its own (scripts/slurm.sh)
)
if [ "${TZ_WITH_TORCH:-0}" = 1 ]; then
  packages+=(python3-regex)  # only for regenerating the pre-tokenizer table and fixtures (GPT-2, Llama 3)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "install_deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # Daemons (munge, slurmd, slurmctld) are not started by their packages: scripts/slurm.sh starts its
  # own with a configuration of its own, and a container without an init system fails to start them.
  # A policy-rc.d denying every start (exit 101) does that, removed after the install if made here.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e $policy ]; then
    $SUDO sh -c "printf '#!/bin/sh\\nexit 101\\n' > $policy && chmod 755 $policy"
    trap '$SUDO rm -f $policy' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
