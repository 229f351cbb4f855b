#!/usr/bin/env bash
# Counts the instructions `reshard::Synthesize` executes (callgrind, inclusive of everything it
# calls) on the cases gap-survey takes, by default the quality suite's 3-axis cases with
# `normal`: the machine-independent figure docs/benchmarks.md compares builds by (wall clock on
# this VM moves by more than most changes do).
#
#   bash bench/count_instructions.sh [BUILD_DIR] [-- GAP_SURVEY_FLAGS...]
#   bash bench/count_instructions.sh build -- --suite bench/cases.txt --axes 0 --dump 1
#   bash bench/count_instructions.sh build -- --cases 400 --axes 3 --dump 1
#
# Prints "Synthesize instructions: N (C calls)". Flags must include --dump 1 (every case
# synthesized once, with its plan printed outside the counted function). Needs valgrind
# (Debian package `valgrind`; not part of scripts/setup.sh, this is a developer's tool).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  build=$1
  shift
fi
[ "${1:-}" = "--" ] && shift
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(--suite bench/cases.txt --axes 3 --dump 1)

if ! command -v valgrind >/dev/null; then
  echo "count_instructions.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
fi
survey=$build/bench/gap-survey
if [ ! -x "$survey" ]; then
  echo "count_instructions.sh: $survey not found (cmake --build $build --target gap-survey)" >&2
  exit 2
fi

out=$(mktemp)
dump=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$dump" "$log"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" --log-file="$log" \
  --toggle-collect='reshard::Synthesize(*' "$survey" "${flags[@]}" >"$dump"
calls=$(grep -c '^{"mesh"' "$dump" || true)
total=$(grep -E '^summary:' "$out" | awk '{print $2}')
echo "Synthesize instructions: ${total:-0} ($calls calls)"
