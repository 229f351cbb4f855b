#!/usr/bin/env bash
# Runs the RapidCheck property binaries from random seeds, to look for counterexamples the
# fixed seeds of ctest do not reach (tests/generators.h, "Seeds"). Each counterexample is
# printed with the command that reproduces it; add it to tests/regression_test.cc once fixed.
#
#   bash scripts/explore_properties.sh [ROUNDS] [BUILD_DIR]     # defaults: 3 rounds, build/
#
# Exit status: 0 when every round passed, 1 when a property failed, 2 on bad arguments or a
# missing binary (build first: cmake --build build).
set -uo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-3}
build=${2:-build}
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "explore_properties.sh: ROUNDS must be a positive integer, not '$rounds'" >&2
  exit 2
fi
binaries=(property_test strategy_property_test shardy_baseline_test)
# Built only when Z3 was found (tests/CMakeLists.txt).
[ -x "$build/tests/proofs_property_test" ] && binaries+=(proofs_property_test)
for binary in "${binaries[@]}"; do
  if [ ! -x "$build/tests/$binary" ]; then
    echo "explore_properties.sh: $build/tests/$binary not found (build first)" >&2
    exit 2
  fi
done

found=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  for binary in "${binaries[@]}"; do
    if RESHARD_PROPERTY_SEED=random "$build/tests/$binary" --gtest_brief=1 >"$log" 2>&1; then
      echo "round $round: $binary passed"
      continue
    fi
    found=1
    echo "round $round: $binary FAILED; its failures:"
    # The harness prints "[ property ] Suite/Name (seed=S)" and RapidCheck's reproduce string.
    grep -E '^\[ property \] .*\(seed=|RC_PARAMS=|Falsifiable|^\[  FAILED  \]' "$log" | sed 's/^/  /'
    echo "  reproduce: RC_PARAMS=\"seed=S\" $build/tests/$binary --gtest_filter=Suite.Name" \
      "(S and Suite/Name from the lines above)"
  done
done
exit "$found"
