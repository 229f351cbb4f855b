#!/usr/bin/env bash
# End-to-end tests of the `reshard` CLI contract (DESIGN §3): the JSON field names other tools
# parse, exit codes, one-line errors, the no-argument example, and plan | run round trips.
#
#   cli_test.sh PATH/TO/reshard
set -uo pipefail

reshard=${1:?usage: cli_test.sh PATH/TO/reshard}
work=$(mktemp -d "${TMPDIR:-/tmp}/reshard-cli-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The issue's example (8x the memory under XLA's full-rematerialisation fallback). Both sides hold 2*16*4 = 8*2*8 = 256
# f32 elements per device, so the memory bound is 1024 bytes.
MESH='x=4,y=2'
FROM='f32[8{x},16,8{y}]'
TO='f32[8,16{x,y},8]'
BOUND=1024

failures=0
checks=0
pass() { checks=$((checks + 1)); echo "ok    $1"; }
fail() {
  checks=$((checks + 1)) failures=$((failures + 1))
  echo "FAIL  $1"
  shift
  for detail in "$@"; do echo "      $detail"; done
}

# run_cli STDIN_FILE ARGS...: sets rc, out, err.
run_cli() {
  local stdin=$1
  shift
  "$reshard" "$@" <"$stdin" >"$work/out" 2>"$work/err"
  rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}

# expect_bad NAME STDIN_FILE ARGS...: exit 2, nothing on stdout, exactly one stderr line
# `reshard: error: ...`.
expect_bad() {
  local name=$1
  shift
  run_cli "$@"
  local lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -eq 2 && -z $out && $lines -eq 1 && $err == "reshard: error: "* ]]; then
    pass "bad input: $name -> $err"
  else
    fail "bad input: $name" "exit $rc (want 2), stderr lines $lines (want 1)" \
      "stderr: $err" "stdout: ${out:0:200}"
  fi
}

# check_plan_json NAME STRATEGY_EXPECTED MAX_PEAK: the JSON contract on $work/out.
check_plan_json() {
  local name=$1 strategy=$2 max_peak=$3
  local verdict
  verdict=$(python3 - "$work/out" "$MESH" "$FROM" "$TO" "$strategy" "$max_peak" <<'PY'
import json, sys
path, mesh, src, dst, strategy, max_peak = sys.argv[1:]
text = open(path).read()
lines = text.splitlines()
if len(lines) != 1:
    sys.exit(f"want exactly one line on stdout, got {len(lines)}")
try:
    plan = json.loads(lines[0])
except ValueError as e:
    sys.exit(f"not JSON: {e}")
if not isinstance(plan, dict):
    sys.exit("not a JSON object")
keys = {"mesh", "from", "to", "strategy", "steps", "metrics"}
if set(plan) != keys:
    sys.exit(f"top-level keys {sorted(plan)} != {sorted(keys)}")
for key, want in (("mesh", mesh), ("from", src), ("to", dst), ("strategy", strategy)):
    if plan[key] != want:
        sys.exit(f"{key} = {plan[key]!r}, want {want!r}")
attrs = {
    "all_slice": {"slice_axis"},
    "all_gather": {"gather_axis"},
    "all_to_all": {"split_axis", "concat_axis"},
    "all_reduce": set(),
    "reduce_scatter": {"scatter_axis"},
    "collective_permute": {"source_target_pairs"},
    # reshard's extension (strategy direct): an irregular exchange of boxes.
    "all_to_all_v": {"out_shape", "transfers"},
}
if not isinstance(plan["steps"], list):
    sys.exit("steps is not a list")
for i, step in enumerate(plan["steps"]):
    op = step.get("op")
    if op not in attrs:
        sys.exit(f"step {i}: unknown op {op!r}")
    want = {"op", "mesh_axes", "type"} | attrs[op]
    if set(step) != want:
        sys.exit(f"step {i} ({op}): keys {sorted(step)} != {sorted(want)}")
    if not isinstance(step["mesh_axes"], list) or not all(
            isinstance(a, str) for a in step["mesh_axes"]):
        sys.exit(f"step {i}: mesh_axes is not a list of names")
    for a in attrs[op] - {"source_target_pairs", "out_shape", "transfers"}:
        if not isinstance(step[a], int):
            sys.exit(f"step {i}: {a} is not an integer")
if plan["steps"] and plan["steps"][-1]["type"] != dst:
    sys.exit(f"last step's type {plan['steps'][-1]['type']!r} is not the target")
metrics = {"peak_local_bytes", "bytes_received_max", "bytes_received_total",
           "lower_bound_bytes_total"}
# cost_us (DESIGN §2) is allowed once the cost model reports it.
if not metrics <= set(plan["metrics"]) <= metrics | {"cost_us"}:
    sys.exit(f"metrics keys {sorted(plan['metrics'])} != {sorted(metrics)}")
m = plan["metrics"]
if not all(isinstance(m[k], int) and m[k] >= 0 for k in metrics):
    sys.exit(f"metrics are not non-negative integers: {m}")
if m["bytes_received_total"] < m["lower_bound_bytes_total"]:
    sys.exit(f"bytes_received_total below the lower bound: {m}")
if max_peak != "-" and m["peak_local_bytes"] > int(max_peak):
    sys.exit(f"peak_local_bytes {m['peak_local_bytes']} > max(source, target) = {max_peak}")
print(f"{len(plan['steps'])} steps, peak {m['peak_local_bytes']}, "
      f"received total {m['bytes_received_total']} (bound {m['lower_bound_bytes_total']})")
PY
  )
  if [[ $? -eq 0 ]]; then pass "$name: $verdict"; else fail "$name" "$verdict" "stdout: ${out:0:300}"; fi
}

echo "# reshard CLI tests ($reshard)"

# --- The issue's done-when command. ---
run_cli /dev/null plan --mesh "$MESH" --from "$FROM" --to "$TO" --json
if [[ $rc -eq 0 && -z $err ]]; then
  check_plan_json "plan --json on the example (fields, peak <= $BOUND)" normal "$BOUND"
  cp "$work/out" "$work/plan.json"
else
  fail "plan --json on the example" "exit $rc, stderr: $err"
fi

# The baseline gathers to the full array: 8x the bound. Same JSON contract.
run_cli /dev/null plan --mesh "$MESH" --from "$FROM" --to "$TO" --strategy naive --json
if [[ $rc -eq 0 ]]; then
  check_plan_json "plan --strategy naive --json" naive -
else
  fail "plan --strategy naive --json" "exit $rc, stderr: $err"
fi

# --- Readable output. ---
run_cli /dev/null plan --mesh "$MESH" --from "$FROM" --to "$TO"
if [[ $rc -eq 0 && $out == *"$FROM"* && $out == *"1. "* && $out == *peak_local_bytes* &&
      $out == *"vs naive"* ]]; then
  pass "plan (readable) lists types, steps, metrics and the naive comparison"
else
  fail "plan (readable)" "exit $rc" "stdout: ${out:0:400}" "stderr: $err"
fi

# --- No arguments: description, the example actually synthesized, usage. ---
run_cli /dev/null
if [[ $rc -eq 0 && $out == *"$FROM"* && $out == *"$TO"* && $out == *"1. "* &&
      $out == *"reshard plan --mesh"* && $out == *"reshard run"* ]]; then
  pass "no arguments: exit 0 with the example plan and usage"
else
  fail "no arguments" "exit $rc" "stdout: ${out:0:400}" "stderr: $err"
fi

# --- Help. ---
for cmd in "" plan run; do
  # shellcheck disable=SC2086
  run_cli /dev/null $cmd --help
  if [[ $rc -eq 0 && $out == *--* && -z $err ]]; then
    pass "reshard $cmd --help"
  else
    fail "reshard $cmd --help" "exit $rc" "stderr: $err"
  fi
done

# --- run. ---
run_cli /dev/null run --mesh "$MESH" --from "$FROM" --to "$TO"
if [[ $rc -eq 0 && $out == *OK* ]]; then
  pass "run on the example: exit 0, data OK"
else
  fail "run on the example" "exit $rc" "stdout: ${out:0:400}" "stderr: $err"
fi

run_cli /dev/null run --mesh "$MESH" --from "$FROM" --to "$TO" --strategy naive --json
if [[ $rc -eq 0 ]] && python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[0])
assert len(lines) == 1 and r["ok"] is True and r["data_ok"] is True, r
assert r["measured"]["peak_local_bytes"] == r["plan"]["metrics"]["peak_local_bytes"], r
' "$work/out"; then
  pass "run --strategy naive --json: one object, ok, measured peak = plan peak"
else
  fail "run --strategy naive --json" "exit $rc" "stdout: ${out:0:400}" "stderr: $err"
fi

# A partial source: reductions run on real data too.
run_cli /dev/null run --mesh "x=2,y=2" --from "f32[8{x},4] partial{y}" --to "f32[8,4{x}]"
if [[ $rc -eq 0 && $out == *OK* ]]; then
  pass "run with a partial source"
else
  fail "run with a partial source" "exit $rc" "stdout: ${out:0:400}" "stderr: $err"
fi

# --- Every strategy the CLI offers (read from its help) plans, runs and round-trips. ---
strategies=$("$reshard" plan --help | sed -n 's/.*Synthesis strategy: //p' | tr -d ',')
[[ -n $strategies ]] || fail "plan --help lists the strategies"
for s in $strategies; do
  run_cli /dev/null plan --mesh "$MESH" --from "$FROM" --to "$TO" --strategy "$s" --json
  if [[ $rc -ne 0 ]]; then
    fail "plan --strategy $s --json" "exit $rc, stderr: $err"
    continue
  fi
  check_plan_json "plan --strategy $s --json" "$s" -
  cp "$work/out" "$work/plan_$s.json"
  run_cli "$work/plan_$s.json" run --plan -
  if [[ $rc -eq 0 && $out == *OK* ]]; then
    pass "run --plan - on strategy $s's plan: data OK"
  else
    fail "run --plan - on strategy $s's plan" "exit $rc" "stdout: ${out:0:300}" "stderr: $err"
  fi
done

# --- plan --json | run --plan - round trip. ---
if [[ -s $work/plan.json ]]; then
  run_cli "$work/plan.json" run --plan -
  if [[ $rc -eq 0 && $out == *OK* ]]; then
    pass "plan --json | run --plan - (stdin)"
  else
    fail "plan --json | run --plan -" "exit $rc" "stdout: ${out:0:400}" "stderr: $err"
  fi
  run_cli /dev/null run --plan "$work/plan.json" --mesh "$MESH" --from "$FROM" --to "$TO"
  if [[ $rc -eq 0 ]]; then
    pass "run --plan FILE with matching --mesh/--from/--to"
  else
    fail "run --plan FILE" "exit $rc" "stderr: $err"
  fi
  # A real pipe, as users type it.
  if "$reshard" plan --mesh "$MESH" --from "$FROM" --to "$TO" --json |
      "$reshard" run --plan - >/dev/null 2>"$work/err"; then
    pass "shell pipe: reshard plan --json | reshard run --plan -"
  else
    fail "shell pipe" "stderr: $(cat "$work/err")"
  fi

  # A plan whose step claims the wrong type must be rejected as input, not run.
  python3 - "$work/plan.json" "$work/bad_type.json" "$work/bad_field.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
bad = json.loads(json.dumps(plan))
bad["steps"][0]["type"] = plan["from"].replace("f32", "f64")
json.dump(bad, open(sys.argv[2], "w"))
bad = json.loads(json.dumps(plan))
del bad["steps"][0]["mesh_axes"]
json.dump(bad, open(sys.argv[3], "w"))
PY
  expect_bad "plan file whose step does not type-check" "$work/bad_type.json" run --plan -
  expect_bad "plan file missing mesh_axes" "$work/bad_field.json" run --plan -
  expect_bad "--plan with a different --mesh" /dev/null run --plan "$work/plan.json" \
    --mesh x=8
  expect_bad "--plan together with --strategy" /dev/null run --plan "$work/plan.json" \
    --strategy naive
  expect_bad "--plan together with --objective" /dev/null run --plan "$work/plan.json" \
    --objective bytes

  # `verify --plan` takes the plan file as the problem as `run` does.
  run_cli /dev/null verify --plan "$work/plan.json" --mesh "$MESH" --from "$FROM" --to "$TO"
  if [[ $rc -eq 0 ]]; then
    pass "verify --plan FILE with matching --mesh/--from/--to"
  else
    fail "verify --plan FILE" "exit $rc" "stderr: $err"
  fi
  expect_bad "verify --plan with a different --mesh" /dev/null verify --plan "$work/plan.json" \
    --mesh x=8
  expect_bad "verify --plan with a different --to" /dev/null verify --plan "$work/plan.json" \
    --to "$FROM"
  expect_bad "verify --plan together with --strategy" /dev/null verify \
    --plan "$work/plan.json" --strategy optimal
  # A timeout past what a clock deadline holds once interrupted Z3 at once (unknown, or a
  # correct plan refuted): it means no timeout.
  run_cli /dev/null verify --plan "$work/plan.json" --timeout-ms 99999999999999999999
  if [[ $rc -eq 0 ]]; then
    pass "verify with a timeout beyond the clock's range proves"
  else
    fail "verify --timeout-ms 99999999999999999999" "exit $rc (want 0)" "stderr: $err"
  fi
fi

# Input echoed in an error cannot drive the terminal, and an error is cut to a readable size
# (a permute naming 4 096 wrong pairs made a 94 KB line).
run_cli /dev/null plan --mesh "$(printf 'x=4,\033[31my=2')" --from 'f32[8]' --to 'f32[8]'
if [[ $rc -eq 2 && $err == *'\x1b[31my'* && $err != *$'\033'* ]]; then
  pass "control bytes in an error are escaped"
else
  fail "control bytes in an error" "exit $rc" "stderr: $(printf '%q' "$err")"
fi
python3 -c 'import json; n = 4096; print(json.dumps({"mesh": "x=4096", "from": "f32[4096{x}]",
  "to": "f32[4096{x}]", "steps": [{"op": "collective_permute", "mesh_axes": [],
  "source_target_pairs": [[i, (i + 1) % n] for i in range(n)], "type": "f32[4096{x}]"}]}))' \
  >"$work/long_error.json"
expect_bad "a permute with 4 096 wrong pairs" /dev/null run --plan "$work/long_error.json"
if [[ ${#err} -le 4200 && $err == *"more bytes)" ]]; then
  pass "a long error is cut (${#err} bytes)"
else
  fail "a long error is cut" "stderr is ${#err} bytes"
fi

# A suite case that cannot be read is bad input (exit 2) named on stderr, not "refuted".
printf 'x=2 | f32[4{x}] | f32[4]\nx=0 | f32[4{x}] | f32[4]\n' >"$work/suite.txt"
run_cli /dev/null verify --suite "$work/suite.txt" --report "$work/suite-report"
if [[ $rc -eq 2 && $err == *"line 2: mesh axis 'x' has size 0"* && -s $work/suite-report/report.md ]]; then
  pass "verify --suite with a bad case -> exit 2 naming it"
else
  fail "verify --suite with a bad case" "exit $rc (want 2)" "stderr: $err"
fi

# --- Sub-axes (issue 7): x=2,y=4 swap moves 512 B with y split, 960+ B without. ---
sub_bytes() {
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["metrics"]["bytes_received_total"], ",".join(a for s in p["steps"] for a in s["mesh_axes"]))' "$work/out"
}
run_cli /dev/null plan --mesh x=2,y=4 --from 'f32[8{x},16{y}]' --to 'f32[8{y},16{x}]' \
  --strategy optimal --json
got=$(sub_bytes)
if [[ $rc -eq 0 && $got == "512 y:(2)2" ]]; then
  pass "optimal splits y on the issue's example: $got"
  cp "$work/out" "$work/sub_plan.json"
  run_cli "$work/sub_plan.json" run --plan -
  if [[ $rc -eq 0 ]]; then pass "run --plan of the sub-axis plan"; else fail "run --plan of the sub-axis plan" "exit $rc" "$out" "$err"; fi
else
  fail "optimal splits y on the issue's example" "exit $rc, got '$got'" "stderr: $err"
fi
run_cli /dev/null plan --mesh x=2,y=4 --from 'f32[8{x},16{y}]' --to 'f32[8{y},16{x}]' \
  --strategy optimal --json --no-sub-axes
got=$(sub_bytes)
if [[ $rc -eq 0 && $got != *":"* ]]; then pass "--no-sub-axes keeps whole axes: $got"; else fail "--no-sub-axes keeps whole axes" "exit $rc, got '$got'"; fi
# What optimal proved: said in the listing; with --json (whose keys are fixed) only when the
# search over sub-axes gave up, on stderr (bench case 60: a permute class past the cap).
run_cli /dev/null plan --mesh x=2,y=4 --from 'f32[8{x},16{y}]' --to 'f32[8{y},16{x}]' \
  --strategy optimal
if [[ $rc -eq 0 && $out == *"(proven optimal: "* ]]; then pass "optimal's listing says it is proven"; else fail "optimal's listing says it is proven" "exit $rc" "$out"; fi
run_cli /dev/null plan --mesh a=4,b=4,c=4,d=4 --from 'f32[4096{a,b,c,d},4096]' \
  --to 'f32[4096{d},4096{a,b,c}]' --strategy optimal --json
if [[ $rc -eq 0 && $err == "reshard: note: optimal among plans on whole axes only"* ]] &&
  python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out"; then
  pass "an unproven optimal plan is said on stderr, the JSON unchanged"
else
  fail "an unproven optimal plan is said on stderr" "exit $rc" "stderr: $err"
fi
run_cli /dev/null run --mesh 'x=6,y=4' --from 'f32[12{x},2]' --to 'f32[12{y},2]'
if [[ $rc -eq 0 ]]; then pass "sub-axes find a bounded plan where whole axes cannot"; else fail "sub-axes find a bounded plan where whole axes cannot" "exit $rc" "$err"; fi

# --- Objectives: x=4,y=4, a 4 MiB array's split moved from dimension 0 to 1. Under the time
# objective normal pays bytes for fewer latency terms; under --objective bytes it receives
# fewer bytes and is modeled slower. ---
objective_metrics() {
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["metrics"]; print(m["bytes_received_total"], m["cost_us"])' "$work/out"
}
OBJ=(plan --json --mesh x=4,y=4 --from 'f32[1024{x,y},1024]' --to 'f32[1024,1024{x,y}]')
run_cli /dev/null "${OBJ[@]}"
read -r time_bytes time_us <<<"$(objective_metrics)"
run_cli /dev/null "${OBJ[@]}" --objective bytes
read -r bytes_bytes bytes_us <<<"$(objective_metrics)"
if [[ $rc -eq 0 ]] && python3 -c 'import sys; tb,tu,bb,bu=map(float,sys.argv[1:]); sys.exit(not (bb < tb and tu < bu))' \
  "$time_bytes" "$time_us" "$bytes_bytes" "$bytes_us"; then
  pass "--objective bytes receives fewer bytes ($bytes_bytes < $time_bytes), time is faster ($time_us < $bytes_us us)"
else
  fail "--objective bytes vs time" "exit $rc; time: $time_bytes B $time_us us; bytes: $bytes_bytes B $bytes_us us" "stderr: $err"
fi
run_cli /dev/null "${OBJ[@]}" --objective time
read -r again_bytes again_us <<<"$(objective_metrics)"
if [[ $rc -eq 0 && $again_bytes == "$time_bytes" && $again_us == "$time_us" ]]; then
  pass "--objective time is the default"
else
  fail "--objective time is the default" "exit $rc; $again_bytes B $again_us us"
fi

# --- Bad input: exit 2, exactly one stderr line. ---
P=(plan --json)
printf '{' >"$work/truncated.json"
expect_bad "unknown objective" /dev/null "${P[@]}" --mesh "$MESH" --from "$FROM" --to "$TO" \
  --objective fastest
expect_bad "malformed mesh" /dev/null "${P[@]}" --mesh 'x=4,y' --from "$FROM" --to "$TO"
expect_bad "mesh axis of size 0" /dev/null "${P[@]}" --mesh 'x=0' --from 'f32[8]' --to 'f32[8]'
expect_bad "mesh beyond the device limit" /dev/null "${P[@]}" --mesh 'x=2048,y=1024' \
  --from 'f32[8]' --to 'f32[8]'
expect_bad "repeated mesh axis" /dev/null "${P[@]}" --mesh 'x=2,x=2' --from 'f32[8]' \
  --to 'f32[8]'
expect_bad "malformed type" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8{x},16' --to "$TO"
expect_bad "unknown element type" /dev/null "${P[@]}" --mesh "$MESH" --from 'f33[8{x},16,8]' \
  --to "$TO"
expect_bad "unknown axis" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8{z},16,8]' --to "$TO"
expect_bad "axis used twice" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8{x},16{x},8]' \
  --to "$TO"
expect_bad "non-divisible size" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[6{x},16,8]' \
  --to "$TO"
expect_bad "size beyond 63 bits" /dev/null "${P[@]}" --mesh "$MESH" \
  --from 'f32[99999999999999999999999]' --to 'f32[99999999999999999999999]'
expect_bad "byte count overflow" /dev/null "${P[@]}" --mesh "$MESH" \
  --from 'f64[4611686018427387904{x},4]' --to 'f64[4611686018427387904,4{x}]'
expect_bad "global shapes differ" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8{x}]' \
  --to 'f32[16{x}]'
expect_bad "element types differ" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8{x}]' \
  --to 'f64[8{x}]'
expect_bad "target partial not in source" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8]' \
  --to 'f32[8] partial{x}'
# x=6 and y=4 divide 12 but no chain of whole-axis collectives stays within 24 bytes (with
# sub-axes there is one: the sub-axis checks below).
expect_bad "no plan within the memory bound (NotFound)" /dev/null "${P[@]}" --mesh 'x=6,y=4' \
  --from 'f32[12{x},2]' --to 'f32[12{y},2]' --no-sub-axes
expect_bad "malformed sub-axis" /dev/null "${P[@]}" --mesh "$MESH" --from 'f32[8{x:(1)},16,8]' \
  --to "$TO"
expect_bad "sub-axis not dividing its axis" /dev/null "${P[@]}" --mesh 'x=4' \
  --from 'f32[8{x:(1)3}]' --to 'f32[8]'
expect_bad "overlapping sub-axes" /dev/null "${P[@]}" --mesh 'x=4' \
  --from 'f32[8{x:(1)2},8{x}]' --to 'f32[8,8]'
expect_bad "sub-axes that do not nest" /dev/null "${P[@]}" --mesh 'x=6' \
  --from 'f32[12{x:(1)2}]' --to 'f32[12{x:(1)3}]'
expect_bad "unknown strategy" /dev/null "${P[@]}" --mesh "$MESH" --from "$FROM" --to "$TO" \
  --strategy bogus
expect_bad "malformed --axis-cost" /dev/null "${P[@]}" --mesh "$MESH" --from "$FROM" --to "$TO" \
  --axis-cost 'x=1'
expect_bad "--axis-cost whose costs could overflow" /dev/null "${P[@]}" --mesh "$MESH" \
  --from "$FROM" --to "$TO" --axis-cost 'x=1e308:1e-308'
expect_bad "--axis-cost not in decimal" /dev/null "${P[@]}" --mesh "$MESH" --from "$FROM" \
  --to "$TO" --axis-cost 'x=inf:100'
expect_bad "--axis-cost naming an unknown axis" /dev/null "${P[@]}" --mesh "$MESH" --from "$FROM" \
  --to "$TO" --axis-cost 'z=1:100'
expect_bad "missing --to" /dev/null "${P[@]}" --mesh "$MESH" --from "$FROM"
expect_bad "option without its value" /dev/null plan --mesh
expect_bad "unknown option" /dev/null plan --mesh "$MESH" --from "$FROM" --to "$TO" --bogus
expect_bad "unknown command" /dev/null frobnicate
expect_bad "run without a problem or plan" /dev/null run --mesh "$MESH"
expect_bad "malformed plan JSON on stdin" "$work/truncated.json" run --plan -
expect_bad "empty plan on stdin" /dev/null run --plan -
expect_bad "missing plan file" /dev/null run --plan "$work/does-not-exist.json"
expect_bad "array too large for the interpreter" /dev/null run --mesh x=2 \
  --from 'f32[1073741824{x}]' --to 'f32[1073741824]'

echo "# $((checks - failures))/$checks checks passed"
[[ $failures -eq 0 ]]
