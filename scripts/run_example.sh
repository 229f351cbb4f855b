#!/usr/bin/env bash
# Quick start: installs the Debian packages (scripts/setup.sh, as root or through sudo), builds
# the `reshard` CLI in build/ (Release, Ninja, -j2), and plans the built-in example: XLA's
# full-rematerialisation case, readable and as the JSON other tools consume.
#
#   bash scripts/run_example.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  bash scripts/setup.sh
else
  sudo bash scripts/setup.sh
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target reshard

MESH='x=4,y=2'
FROM='f32[8{x},16,8{y}]'
TO='f32[8,16{x,y},8]'
set -x
build/tools/reshard plan --mesh "$MESH" --from "$FROM" --to "$TO"
build/tools/reshard plan --mesh "$MESH" --from "$FROM" --to "$TO" --json
