#!/usr/bin/env bash
# Installs the Debian 12 packages reshard needs (DESIGN §5). Idempotent: when every package is
# already installed it makes no apt call at all. Must run as root (or via sudo) on a fresh machine.
#
#   bash scripts/setup.sh            # what building and running reshard needs
#   bash scripts/setup.sh --clang    # and clang, for scripts/test.sh's clang pass
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

# `--clang`: also what scripts/test.sh's clang pass needs (Debian 12's clang, version 14, and its
# libFuzzer runtime for tests/fuzz/parse_fuzz). Not needed to build or use reshard.
if [ "${1:-}" = "--clang" ]; then
  PACKAGES+=(clang libclang-rt-14-dev)
fi

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
