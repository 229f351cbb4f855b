#!/usr/bin/env bash
# Writes the plans of a fixed set of cases into OUT_DIR, one file per set (gap-survey --dump 1:
# each case, then its plan as JSON or its error), so that two builds' plans can be compared
# with `diff -r`: a change meant to make synthesis faster must leave every file identical.
#
#   bash bench/plan_dumps.sh BUILD_DIR OUT_DIR
#   bash bench/plan_dumps.sh build /tmp/before   # ... change, rebuild ...
#   bash bench/plan_dumps.sh build /tmp/after && diff -r /tmp/before /tmp/after
#
# The sets: the quality suite under the default model, a skewed model, the bytes objective and
# with `optimal`;
# seeded random draws of gap-survey (its default draw, 3 and 4 axes, a skewed 3-axis model,
# `optimal` on 3 axes, sums over two or more axes, the bytes objective): about
# 25 000 calls, seconds on this 2-core VM.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ]; then
  echo "usage: bash bench/plan_dumps.sh BUILD_DIR OUT_DIR" >&2
  exit 2
fi
survey=$1/bench/gap-survey
out=$2
if [ ! -x "$survey" ]; then
  echo "plan_dumps.sh: $survey not found (cmake --build $1 --target gap-survey)" >&2
  exit 2
fi
mkdir -p "$out"
skewed='x=1:300,y=5:100,z=20:25'
"$survey" --dump 1 --suite bench/cases.txt >"$out/suite.txt"
"$survey" --dump 1 --suite bench/cases.txt --axis-cost "$skewed" >"$out/suite-skewed.txt"
"$survey" --dump 1 --suite bench/cases.txt --objective bytes >"$out/suite-bytes.txt"
"$survey" --dump 1 --suite bench/cases.txt --strategy optimal >"$out/suite-optimal.txt"
"$survey" --dump 1 --cases 5000 >"$out/draws.txt"
"$survey" --dump 1 --cases 5000 --axes 3 >"$out/draws-3.txt"
"$survey" --dump 1 --cases 2000 --axes 4 >"$out/draws-4.txt"
"$survey" --dump 1 --cases 3000 --axes 3 --axis-cost "$skewed" >"$out/draws-3-skewed.txt"
"$survey" --dump 1 --cases 3000 --axes 3 --objective bytes >"$out/draws-3-bytes.txt"
"$survey" --dump 1 --cases 2000 --axes 3 --sums 2 >"$out/draws-3-sums.txt"
"$survey" --dump 1 --cases 500 --axes 3 --strategy optimal >"$out/draws-3-optimal.txt"
wc -l "$out"/*.txt | tail -1
