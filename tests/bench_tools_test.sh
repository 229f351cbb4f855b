#!/usr/bin/env bash
# The measuring tools' contract (docs/benchmarks.md, "Counting instructions, checking that plans
# did not change"): gap-survey --dump 1 prints each case then its plan, deterministically, for
# random draws and for a case file (--suite); bad flags and files exit 2 with one message;
# bench/plan_dumps.sh writes the same files twice; docs/benchmarks.md holds the tables
# reshard-bench prints.
#
#   bash tests/bench_tools_test.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
build=$1
survey=$build/bench/gap-survey
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() {  # check NAME CONDITION...: runs the condition, counts the verdict.
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $name"
  fi
}

# The suite: one case line and one plan line per case, the plan naming the case's mesh.
"$survey" --dump 1 --suite bench/cases.txt >"$tmp/suite.txt"
listed=$(grep -v '^ *#' bench/cases.txt | grep -c ';')
check "suite: a case line per case" [ "$(grep -c ' ; ' "$tmp/suite.txt")" -eq "$listed" ]
check "suite: a plan per case" [ "$(grep -c '^{"mesh":' "$tmp/suite.txt")" -eq "$listed" ]
check "suite: nothing skipped" grep -qx 'skipped: 0' "$tmp/suite.txt"
first_mesh=$(head -1 "$tmp/suite.txt" | cut -d' ' -f1)
check "suite: the plan follows its case" \
  grep -q "^{\"mesh\":\"$first_mesh\"" <(sed -n 2p "$tmp/suite.txt")

# --axes filters the suite's meshes; the 3-axis cases are a strict subset.
"$survey" --dump 1 --suite bench/cases.txt --axes 3 >"$tmp/suite3.txt"
three=$(grep -c '^{"mesh":' "$tmp/suite3.txt")
check "suite --axes 3: some cases" [ "$three" -gt 0 ]
check "suite --axes 3: fewer than all" [ "$three" -lt "$listed" ]
check "suite --axes 3: 3-axis meshes only" \
  bash -c "grep ' ; ' '$tmp/suite3.txt' | cut -d' ' -f1 | awk -F, 'NF != 3 {exit 1}'"

# Random draws: deterministic, errors printed in the plan's place.
"$survey" --dump 1 --cases 200 --axes 3 >"$tmp/a.txt"
"$survey" --dump 1 --cases 200 --axes 3 >"$tmp/b.txt"
check "draws: deterministic" cmp -s "$tmp/a.txt" "$tmp/b.txt"
check "draws: plans printed" [ "$(grep -c '^{"mesh":' "$tmp/a.txt")" -gt 100 ]
"$survey" --dump 1 --cases 50 --axes 3 --strategy optimal --objective bytes >"$tmp/o.txt"
check "draws: --strategy and --objective apply" grep -q '"strategy":"optimal"' "$tmp/o.txt"

# Bad input: exit 2, one line on stderr.
bad() {  # bad NAME ARGS...: gap-survey ARGS must exit 2 with a one-line message.
  local name=$1
  shift
  "$survey" "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  check "$name: exit 2" [ "$rc" -eq 2 ]
  check "$name: one line" [ "$(wc -l <"$tmp/err")" -eq 1 ]
}
bad "missing suite file" --suite "$tmp/none.txt" --dump 1
printf 'x=2 ; f32[4{x}]\n' >"$tmp/short.txt"
bad "malformed suite line" --suite "$tmp/short.txt" --dump 1
check "malformed suite line: names the line" grep -q 'short.txt:1:' "$tmp/err"
bad "latency and dump" --latency 1 --dump 1
bad "unknown objective" --objective fastest --dump 1
bad "suite with sums" --suite bench/cases.txt --sums 2 --dump 1

# docs/benchmarks.md's quality tables are what reshard-bench prints now: every table line of
# its output stands verbatim in the docs (regenerate them when a plan of the suite changes).
"$build/bench/reshard-bench" --cases bench/cases.txt >"$tmp/quality.md"
stale=$(grep '^|' "$tmp/quality.md" | grep -vxF -f docs/benchmarks.md | head -3)
check "docs/benchmarks.md holds reshard-bench's tables" [ -z "$stale" ]
[ -z "$stale" ] || echo "  not in docs/benchmarks.md: $stale"

# plan_dumps.sh: the same files from the same build.
bash bench/plan_dumps.sh "$build" "$tmp/d1" >/dev/null
bash bench/plan_dumps.sh "$build" "$tmp/d2" >/dev/null
check "plan_dumps.sh: files written" [ "$(ls "$tmp/d1" | wc -l)" -ge 8 ]
check "plan_dumps.sh: identical runs" diff -rq "$tmp/d1" "$tmp/d2"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
