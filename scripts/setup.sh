#!/usr/bin/env bash
# Installs the Debian 12 packages reshard needs (DESIGN §5). Idempotent: when every package is
# already installed it makes no apt call at all. Must run as root (or via sudo) on a fresh machine.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config
  libabsl-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev googletest librapidcheck-dev libbenchmark-dev
  libz3-dev
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libopenmpi-dev openmpi-bin
  python3  # tests/cli_test.sh parses the CLI's JSON with it
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing missing Debian packages: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
