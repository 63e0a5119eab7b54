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
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
