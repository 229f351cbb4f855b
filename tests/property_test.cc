// property_test.cc — RapidCheck properties of synthesis, the interpreter, typing rules and
// parsers (DESIGN §2, §6).
//
// Every property runs at least kCases random cases (RESHARD_PROP in generators.h makes the
// count explicit so CI does not depend on RC_PARAMS). Cases are small (see generators.h) so
// the whole suite stays fast under ASan. Distribution tags (partial sources, NotFound,
// multi-step plans, ...) are printed after each property.
//
// The interpreter is the oracle: it never consults the typing rules, so "type-checks and the
// interpreter agrees" ties the synthesizer, the typing rules and DESIGN §2 together.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "interp/interpreter.h"
#include "synth/baselines.h"
#include "synth/search.h"
#include "synth/synthesize.h"
#include "tests/generators.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard::testing {
namespace {

constexpr int kCases = 1000;

// Fails the case with the status's text (RC_ASSERT would only print "ok() == false").
#define RC_ASSERT_OK(expr)                                                 \
  do {                                                                     \
    const absl::Status rc_assert_ok_status = (expr);                       \
    if (!rc_assert_ok_status.ok()) {                                       \
      RC_FAIL(std::string(#expr) + ": " + rc_assert_ok_status.ToString()); \
    }                                                                      \
  } while (false)

std::string PlanDebugString(const Plan& plan) {
  std::string out = "plan (" + plan.strategy + ") from " + DebugString(plan.source) + "\n";
  for (const Step& step : plan.steps) {
    out += "  " + ToString(step.op) + " -> " + DebugString(step.type) + "\n";
  }
  const Metrics& m = plan.metrics;
  out += "  metrics: peak=" + std::to_string(m.peak_local_bytes) +
         " max=" + std::to_string(m.bytes_received_max) +
         " total=" + std::to_string(m.bytes_received_total) +
         " lower_bound=" + std::to_string(m.lower_bound_bytes_total);
  return out;
}

// Generator sanity: the properties below are only meaningful on valid inputs.
void AssertValidCase(const ReshardCase& c) {
  RC_ASSERT_OK(Validate(c.mesh, c.from));
  RC_ASSERT_OK(Validate(c.mesh, c.to));
}

int64_t MemoryBound(const ReshardCase& c) {
  return std::max(LocalBytes(c.mesh, c.from), LocalBytes(c.mesh, c.to));
}

void TagSource(const ReshardCase& c) {
  RC_TAG(c.from.partial.empty() ? "full_source" : "partial_source");
}

void TagPlanShape(const Plan& plan) {
  RC_TAG(plan.steps.empty() ? "steps=0" : plan.steps.size() == 1 ? "steps=1" : "multi_step");
}

// Synthesize, memoized for the whole binary. Every property draws its cases from the same
// RapidCheck seed, so the properties over GenReshardCase see the same case sequence; under
// Debug+ASan synthesis (its search phase) dominates the suite's time, and sharing plans keeps
// the suite within the CI budget. Sound because Synthesize is deterministic, which
// NormalSynthesis.PlanTypeChecksAndEndsAtTarget checks on a sample of uncached calls.
const absl::StatusOr<Plan>& CachedSynthesize(const ReshardCase& c, Strategy strategy) {
  static auto* const cache = new std::map<std::string, absl::StatusOr<Plan>>();
  std::ostringstream key;
  key << StrategyName(strategy) << " " << c;
  auto it = cache->find(key.str());
  if (it == cache->end()) {
    it = cache->emplace(key.str(), Synthesize(c.mesh, c.from, c.to, {strategy})).first;
  }
  return it->second;
}

// The normal plan for `c`, or nullopt when the synthesizer legitimately returns NotFound:
// the exhaustive search under the same memory bound must also find nothing, so NotFound
// never lets a property pass silently. Any other error fails the case.
std::optional<Plan> NormalPlanOrNotFound(const ReshardCase& c) {
  const absl::StatusOr<Plan>& plan = CachedSynthesize(c, Strategy::kNormal);
  if (plan.ok()) {
    RC_LOG() << PlanDebugString(*plan) << "\n";
    return *plan;
  }
  RC_LOG() << "normal: " << plan.status() << "\n";
  RC_ASSERT(plan.status().code() == absl::StatusCode::kNotFound);
  RC_ASSERT(!plan.status().message().empty());
  RC_TAG(kNotFoundTag);
  SearchOptions options;
  options.max_local_bytes = MemoryBound(c);
  absl::StatusOr<std::vector<Step>> found = SearchPlan(c.mesh, c.from, c.to, options);
  if (found.ok()) {
    std::string steps;
    for (const Step& step : *found)
      steps += "  " + ToString(step.op) + " -> " + DebugString(step.type) + "\n";
    RC_FAIL("normal returned NotFound (" + std::string(plan.status().message()) +
            ") but SearchPlan found a plan within the memory bound:\n" + steps);
  }
  // ResourceExhausted means the oracle could not decide; count it instead of failing.
  RC_TAG(found.status().code() == absl::StatusCode::kNotFound ? "search_agrees_not_found"
                                                              : "search_undecided");
  RC_ASSERT(found.status().code() == absl::StatusCode::kNotFound ||
            found.status().code() == absl::StatusCode::kResourceExhausted);
  return std::nullopt;
}

// Runs `plan` on the interpreter and checks data and measured metrics.
void AssertInterpreterAgrees(const Plan& plan) {
  absl::StatusOr<RunReport> report = RunPlan(plan);
  RC_ASSERT_OK(report.status());
  if (!report->ok) RC_FAIL("interpreter: wrong result: " + report->message);
  RC_ASSERT(report->peak_local_bytes == plan.metrics.peak_local_bytes);
  RC_ASSERT(report->bytes_received_max == plan.metrics.bytes_received_max);
  RC_ASSERT(report->bytes_received_total == plan.metrics.bytes_received_total);
}

// ---------------------------------------------------------------------------------------------
// (a) The normal plan type-checks, starts at `from`, ends at `to`, is deterministic and
// survives a JSON round trip.

RESHARD_PROP(NormalSynthesis, PlanTypeChecksAndEndsAtTarget, kCases) {
  const ReshardCase c = *GenReshardCase();
  AssertValidCase(c);
  TagSource(c);
  const std::optional<Plan> plan = NormalPlanOrNotFound(c);
  if (!plan) return;
  TagPlanShape(*plan);
  RC_ASSERT_OK(CheckPlan(*plan));
  RC_ASSERT(plan->mesh == c.mesh);
  RC_ASSERT(plan->source == c.from);
  RC_ASSERT(plan->target == c.to);
  RC_ASSERT(plan->result() == c.to);
  RC_ASSERT(plan->strategy == "normal");

  // Determinism (which CachedSynthesize relies on), on a tenth of the cases to save time.
  if (*InRange(0, 10) == 0) {
    absl::StatusOr<Plan> again = Synthesize(c.mesh, c.from, c.to, {Strategy::kNormal});
    RC_ASSERT_OK(again.status());
    RC_ASSERT(again->steps == plan->steps);
    RC_ASSERT(again->metrics == plan->metrics);
  }

  absl::StatusOr<Plan> parsed = PlanFromJson(PlanToJson(*plan));
  RC_ASSERT_OK(parsed.status());
  RC_ASSERT(parsed->mesh == plan->mesh);
  RC_ASSERT(parsed->source == plan->source);
  RC_ASSERT(parsed->target == plan->target);
  RC_ASSERT(parsed->strategy == plan->strategy);
  RC_ASSERT(parsed->steps == plan->steps);
  RC_ASSERT(parsed->metrics == plan->metrics);
}

// (b) The interpreter reproduces the target's buffers on every device, and its measured
// peak and bytes equal the plan's metrics.
RESHARD_PROP(NormalSynthesis, InterpreterAgrees, kCases) {
  const ReshardCase c = *GenReshardCase();
  AssertValidCase(c);
  TagSource(c);
  const std::optional<Plan> plan = NormalPlanOrNotFound(c);
  if (!plan) return;
  TagPlanShape(*plan);
  AssertInterpreterAgrees(*plan);
}

// (c) Memory bound: no step holds more than max(local bytes of from, of to).
//
// The valley shape (local size falls or stays, then rises) is only tagged, not asserted:
// when divisibility blocks the constructive path, normal falls back to SearchPlan, whose
// cheapest bounded plan may rise and fall more than once (e.g. x=4,y=2,z=3:
// f16[12{y}] -> f16[12{x}] has no valley plan at all).
RESHARD_PROP(NormalSynthesis, StaysWithinMemoryBound, kCases) {
  const ReshardCase c = *GenReshardCase();
  AssertValidCase(c);
  TagSource(c);
  const std::optional<Plan> plan = NormalPlanOrNotFound(c);
  if (!plan) return;
  TagPlanShape(*plan);
  const int64_t bound = MemoryBound(c);
  RC_ASSERT(plan->metrics.peak_local_bytes <= bound);
  int64_t previous = LocalBytes(c.mesh, c.from);
  bool rising = false;
  bool valley = true;
  for (const Step& step : plan->steps) {
    const int64_t bytes = LocalBytes(c.mesh, step.type);
    RC_ASSERT(bytes <= bound);
    if (bytes > previous) rising = true;
    if (rising && bytes < previous) valley = false;
    previous = bytes;
  }
  if (!valley) RC_TAG("not_a_valley");
}

bool IsSingle(const Plan& plan, CollectiveKind kind) {
  return plan.steps.size() == 1 && plan.steps[0].op.kind == kind;
}

// (d) Bytes received are at least the lower bound, and exactly it for a single all_to_all
// or collective_permute (both move only what a device lacks).
RESHARD_PROP(NormalSynthesis, BytesAtLeastLowerBound, kCases) {
  const ReshardCase c = *GenReshardCase();
  AssertValidCase(c);
  TagSource(c);
  const std::optional<Plan> plan = NormalPlanOrNotFound(c);
  if (!plan) return;
  TagPlanShape(*plan);
  const Metrics& m = plan->metrics;
  RC_ASSERT(m.lower_bound_bytes_total == LowerBoundBytesTotal(c.mesh, c.from, c.to));
  RC_ASSERT(m.bytes_received_total >= m.lower_bound_bytes_total);
  RC_ASSERT(m.bytes_received_max <= m.bytes_received_total);
  RC_ASSERT(m.bytes_received_total <= m.bytes_received_max * c.mesh.num_devices());
  if (IsSingle(*plan, CollectiveKind::kAllToAll) ||
      IsSingle(*plan, CollectiveKind::kCollectivePermute)) {
    RC_TAG("single_all_to_all_or_permute");
    RC_ASSERT(m.bytes_received_total == m.lower_bound_bytes_total);
  }
}

// (d') Moving a suffix of one dimension's axes to the end of another is one all_to_all, and
// under the bytes objective that is the plan: it receives exactly the lower bound. Under the
// time objective the plan is never slower than that all_to_all (it may move the pieces one
// at a time and repair their order with a permute where latency dominates).
RESHARD_PROP(NormalSynthesis, SuffixMoveIsOneOptimalAllToAll, kCases) {
  const ReshardCase c = *GenSingleAllToAllCase();
  AssertValidCase(c);
  SynthesisOptions bytes_options{Strategy::kNormal};
  bytes_options.objective = Objective::kBytes;
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, bytes_options);
  RC_ASSERT_OK(plan.status());
  RC_LOG() << PlanDebugString(*plan) << "\n";
  RC_ASSERT(plan->steps.size() == 1u);
  RC_TAG(std::string(CollectiveName(plan->steps[0].op.kind)));
  RC_ASSERT(plan->metrics.bytes_received_total == plan->metrics.lower_bound_bytes_total);
  AssertInterpreterAgrees(*plan);

  absl::StatusOr<Plan> timed = Synthesize(c.mesh, c.from, c.to, {Strategy::kNormal});
  RC_ASSERT_OK(timed.status());
  RC_LOG() << PlanDebugString(*timed) << "\n";
  RC_ASSERT(timed->metrics.cost_us <= plan->metrics.cost_us);
  if (timed->steps.size() > 1) RC_TAG("time: split");
  AssertInterpreterAgrees(*timed);
}

// (d'') Reordering the axes of one dimension is one collective_permute's worth of bytes.
RESHARD_PROP(NormalSynthesis, AxisReorderReceivesLowerBound, kCases) {
  const ReshardCase c = *GenSinglePermuteCase();
  AssertValidCase(c);
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, {Strategy::kNormal});
  RC_ASSERT_OK(plan.status());
  RC_LOG() << PlanDebugString(*plan) << "\n";
  TagPlanShape(*plan);
  RC_ASSERT(plan->metrics.bytes_received_total == plan->metrics.lower_bound_bytes_total);
  AssertInterpreterAgrees(*plan);
}

// (g) The naive baseline is never NotFound and is also correct on the interpreter.
RESHARD_PROP(NaiveSynthesis, InterpreterAgrees, kCases) {
  const ReshardCase c = *GenReshardCase();
  AssertValidCase(c);
  TagSource(c);
  const absl::StatusOr<Plan>& plan = CachedSynthesize(c, Strategy::kNaive);
  RC_ASSERT_OK(plan.status());
  RC_LOG() << PlanDebugString(*plan) << "\n";
  TagPlanShape(*plan);
  RC_ASSERT_OK(CheckPlan(*plan));
  RC_ASSERT(plan->result() == c.to);
  RC_ASSERT(plan->strategy == "naive");
  AssertInterpreterAgrees(*plan);
}

// Invalid problems are InvalidArgument (never NotFound, never a crash): a target partial
// axis the source lacks, or a different global shape.
RESHARD_PROP(Synthesis, RejectsInvalidProblems, kCases) {
  ReshardCase c = *GenReshardCase();
  const Strategy strategy = *rc::gen::element(Strategy::kNormal, Strategy::kNaive);
  const bool add_partial = *rc::gen::arbitrary<bool>();
  if (add_partial) {
    // Make one axis partial in `to` only.
    AxisList candidates;
    for (const MeshAxis& axis : c.mesh.axes()) {
      if (AxisUse(c.from, axis.name) != kPartial) candidates.push_back(axis.name);
    }
    RC_PRE(!candidates.empty());
    const AxisName axis = *rc::gen::elementOf(candidates);
    const int use = AxisUse(c.to, axis);
    if (use >= 0) {
      auto& axes = c.to.dims[use].axes;
      axes.erase(std::find(axes.begin(), axes.end(), axis));
    }
    c.to.partial.push_back(axis);
    RC_TAG("extra_partial");
  } else {
    c.to.dims.push_back(Dim{1, {}});
    RC_TAG("rank_mismatch");
  }
  RC_LOG() << c << "\n";
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, {strategy});
  RC_ASSERT(plan.status().code() == absl::StatusCode::kInvalidArgument);
  RC_ASSERT(!plan.status().message().empty());
}

// ---------------------------------------------------------------------------------------------
// Typing rules against the interpreter: any collective ApplyRule accepts, run as a one-step
// plan, yields exactly the type ApplyRule computed, with the metrics BytesReceived predicts.
// This checks the rules the synthesizer relies on independently of any synthesizer.

rc::Gen<Collective> GenCollective(const Mesh& mesh, const DistType& type) {
  return rc::gen::exec([mesh, type] {
    const int rank = type.rank();
    const std::vector<int64_t> local = LocalShape(mesh, type);
    AxisList unused, partial, all_axes;
    for (const MeshAxis& axis : mesh.axes()) {
      const int use = AxisUse(type, axis.name);
      if (use == kUnused) unused.push_back(axis.name);
      if (use == kPartial) partial.push_back(axis.name);
      all_axes.push_back(axis.name);
    }
    // A random ordered selection of distinct names from `pool` (non-empty when possible).
    auto pick = [](const AxisList& pool) {
      AxisList rest = pool, chosen;
      const int count = *InRange<int>(pool.empty() ? 0 : 1, static_cast<int>(pool.size()) + 1);
      for (int i = 0; i < count; ++i) {
        const int k = *InRange<int>(0, static_cast<int>(rest.size()));
        chosen.push_back(rest[k]);
        rest.erase(rest.begin() + k);
      }
      return chosen;
    };
    // The longest prefix of `axes` whose group size divides `extent`.
    auto dividing_prefix = [&](AxisList axes, int64_t extent) {
      while (!axes.empty() && extent % mesh.GroupSize(axes) != 0) axes.pop_back();
      return axes;
    };
    // A non-empty suffix of dimension `dim`'s axes (empty when it has none).
    auto suffix_of = [&](int dim) {
      const auto& axes = type.dims[dim].axes;
      const int len = *InRange<int>(axes.empty() ? 0 : 1, static_cast<int>(axes.size()) + 1);
      return AxisList(axes.end() - len, axes.end());
    };
    std::vector<int> sharded_dims;
    for (int d = 0; d < rank; ++d) {
      if (!type.dims[d].axes.empty()) sharded_dims.push_back(d);
    }
    // Mostly well-typed operands; sometimes arbitrary ones, which the rules must reject (or
    // accept only when the interpreter agrees).
    if (*rc::gen::weightedElement<int>({{9, 0}, {1, 1}}) == 1) {
      const int kind = *InRange(0, 5);
      const int i = *InRange(-1, rank + 1);
      const int j = *InRange(-1, rank + 1);
      const AxisList axes = pick(all_axes);
      switch (kind) {
        case 0:
          return Collective::AllSlice(axes, i);
        case 1:
          return Collective::AllGather(axes, i);
        case 2:
          return Collective::AllToAll(axes, i, j);
        case 3:
          return Collective::AllReduce(axes);
        default:
          return Collective::ReduceScatter(axes, i);
      }
    }
    // Only kinds with a plausible operand on this type.
    std::vector<CollectiveKind> kinds;
    if (rank > 0 && !unused.empty()) kinds.push_back(CollectiveKind::kAllSlice);
    if (!sharded_dims.empty()) kinds.push_back(CollectiveKind::kAllGather);
    if (!sharded_dims.empty() && rank >= 2) kinds.push_back(CollectiveKind::kAllToAll);
    if (!partial.empty()) kinds.push_back(CollectiveKind::kAllReduce);
    if (!partial.empty() && rank > 0) kinds.push_back(CollectiveKind::kReduceScatter);
    if (kinds.empty()) return Collective::AllSlice(pick(all_axes), 0);  // Must be rejected.
    const int any_dim = rank == 0 ? 0 : *InRange(0, rank);
    switch (*rc::gen::elementOf(kinds)) {
      case CollectiveKind::kAllSlice:
        return Collective::AllSlice(dividing_prefix(pick(unused), local[any_dim]), any_dim);
      case CollectiveKind::kAllGather: {
        const int d = *rc::gen::elementOf(sharded_dims);
        return Collective::AllGather(suffix_of(d), d);
      }
      case CollectiveKind::kAllToAll: {
        const int i = *rc::gen::elementOf(sharded_dims);
        const int j_raw = *InRange(0, rank - 1);
        const int j = j_raw < i ? j_raw : j_raw + 1;
        AxisList axes = suffix_of(i);
        while (!axes.empty() && local[j] % mesh.GroupSize(axes) != 0) axes.erase(axes.begin());
        return Collective::AllToAll(axes, i, j);
      }
      case CollectiveKind::kAllReduce:
        return Collective::AllReduce(pick(partial));
      default:
        return Collective::ReduceScatter(dividing_prefix(pick(partial), local[any_dim]), any_dim);
    }
  });
}

RESHARD_PROP(TypingRules, AgreeWithInterpreter, kCases) {
  const MeshAndType c = *GenMeshAndType();
  RC_ASSERT_OK(Validate(c.mesh, c.type));
  const Collective op = *GenCollective(c.mesh, c.type);
  RC_LOG() << c << "\n" << ToString(op) << "\n";
  absl::StatusOr<DistType> out = ApplyRule(c.mesh, c.type, op);
  if (!out.ok()) {
    RC_TAG("rejected");
    RC_ASSERT(out.status().code() == absl::StatusCode::kInvalidArgument);
    RC_ASSERT(!out.status().message().empty());
    return;
  }
  RC_TAG(std::string(CollectiveName(op.kind)));
  RC_LOG() << "-> " << DebugString(*out) << "\n";
  RC_ASSERT_OK(Validate(c.mesh, *out));
  RC_ASSERT_OK(CheckStep(c.mesh, c.type, op, *out));
  // The synthesizers' unchecked form of the rule agrees wherever it applies (whole axes).
  if (!HasSubAxes(c.mesh, c.type) && !HasSubAxes(c.mesh, op)) {
    RC_ASSERT(ApplyAcceptedRule(c.type, op) == *out);
  }
  Plan plan;
  plan.mesh = c.mesh;
  plan.source = c.type;
  plan.target = *out;
  plan.strategy = "property";
  plan.steps = {Step{op, *out}};
  RC_ASSERT_OK(CheckSteps(plan.mesh, plan.source, plan.steps));
  plan.metrics = ComputeMetrics(plan.mesh, plan.source, plan.steps);
  RC_ASSERT_OK(CheckPlan(plan));
  int64_t total = 0, max = 0;
  for (int64_t d = 0; d < c.mesh.num_devices(); ++d) {
    const int64_t bytes = BytesReceived(c.mesh, c.type, op, d);
    total += bytes;
    max = std::max(max, bytes);
  }
  RC_ASSERT(plan.metrics.bytes_received_total == total);
  RC_ASSERT(plan.metrics.bytes_received_max == max);
  AssertInterpreterAgrees(plan);
}

// ---------------------------------------------------------------------------------------------
// (e) Printing and parsing round-trip.

// Inserts random spaces/tabs between tokens (DESIGN: whitespace between tokens is ignored).
// With `keep_refs`, ':', '(' and ')' count as word characters: a sub-axis reference `x:(2)2`
// is one token (mesh.h: no spaces inside).
rc::Gen<std::string> GenSpaced(const std::string& text, bool keep_refs = false) {
  return rc::gen::exec([text, keep_refs] {
    std::string out;
    auto is_word = [keep_refs](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ||
             (keep_refs && (ch == ':' || ch == '(' || ch == ')'));
    };
    for (size_t i = 0; i <= text.size(); ++i) {
      // Only at token boundaries: never split a name or a number.
      const bool boundary =
          i == 0 || i == text.size() || !is_word(text[i - 1]) || !is_word(text[i]);
      if (boundary && *rc::gen::weightedElement<int>({{3, 0}, {1, 1}}) == 1) {
        out += *rc::gen::element<std::string>(" ", "\t", "  ", "\n");
      }
      if (i < text.size()) out += text[i];
    }
    return out;
  });
}

RESHARD_PROP(Parsing, PrintParseRoundTrip, kCases) {
  const MeshAndType c = *GenMeshAndType();
  RC_TAG(c.type.partial.empty() ? "no_partial" : "partial");
  RC_TAG("rank=" + std::to_string(c.type.rank()));

  const std::string mesh_text = c.mesh.ToString();
  RC_ASSERT(mesh_text == DebugString(c.mesh));
  absl::StatusOr<Mesh> mesh = ParseMesh(mesh_text);
  RC_ASSERT_OK(mesh.status());
  RC_ASSERT(*mesh == c.mesh);
  absl::StatusOr<Mesh> spaced_mesh = ParseMesh(*GenSpaced(mesh_text));
  RC_ASSERT_OK(spaced_mesh.status());
  RC_ASSERT(*spaced_mesh == c.mesh);

  const std::string text = ToString(c.type);
  RC_ASSERT(text == DebugString(c.type));  // Canonical form of DESIGN §2.
  absl::StatusOr<DistType> type = ParseType(text);
  RC_ASSERT_OK(type.status());
  RC_ASSERT(*type == c.type);
  RC_ASSERT(ToString(*type) == text);  // The printer keeps the partial order it was given.
  absl::StatusOr<DistType> valid = ParseValidType(c.mesh, text);
  RC_ASSERT_OK(valid.status());
  RC_ASSERT(*valid == c.type);
  absl::StatusOr<DistType> spaced = ParseType(*GenSpaced(text));
  RC_ASSERT_OK(spaced.status());
  RC_ASSERT(*spaced == c.type);
}

// ---------------------------------------------------------------------------------------------
// (f) Parsers never crash on arbitrary or corrupted text, and every error has a message.

const std::vector<std::string>& InterestingNumbers() {
  static const std::vector<std::string> kNumbers = {"0",
                                                    "-1",
                                                    "1",
                                                    "2",
                                                    "3",
                                                    "7",
                                                    "1024",
                                                    "4294967296",
                                                    "9223372036854775807",
                                                    "9223372036854775808",
                                                    "-9223372036854775808",
                                                    "18446744073709551616",
                                                    "99999999999999999999",
                                                    "1e3",
                                                    "0x10",
                                                    "+3",
                                                    "3.0",
                                                    "-0",
                                                    "00000000000000000000001"};
  return kNumbers;
}

const std::vector<std::string>& InterestingTokens() {
  static const std::vector<std::string> kTokens = {"[",
                                                   "]",
                                                   "{",
                                                   "}",
                                                   ",",
                                                   "=",
                                                   " ",
                                                   "partial",
                                                   "partial{",
                                                   "f32",
                                                   "bf16",
                                                   "i64",
                                                   "x",
                                                   "y",
                                                   "z",
                                                   "w",
                                                   "\xff",
                                                   "\xc3\xa9",
                                                   "\xe2\x82\xac",
                                                   std::string(1, '\0'),
                                                   "\"",
                                                   ":",
                                                   "null",
                                                   "[]",
                                                   "{}",
                                                   "\\u0000",
                                                   "\\",
                                                   "\n",
                                                   "all_gather",
                                                   "collective_permute",
                                                   "true"};
  return kTokens;
}

// Replaces one random maximal run of characters matching `in_run` with `replacement`.
std::string ReplaceRun(const std::string& s, bool (*in_run)(char), const std::string& replacement,
                       size_t nth) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < s.size();) {
    if (!in_run(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && in_run(s[j])) ++j;
    runs.emplace_back(i, j);
    i = j;
  }
  if (runs.empty()) return s;
  const auto [begin, end] = runs[nth % runs.size()];
  return s.substr(0, begin) + replacement + s.substr(end);
}

bool IsDigit(char ch) { return ch >= '0' && ch <= '9'; }
bool IsWordChar(char ch) { return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_'; }

// 1-4 random edits of `text`: byte and token insertions, deletions, replacements, number and
// identifier swaps, duplications.
rc::Gen<std::string> GenMutated(const std::string& text) {
  return rc::gen::exec([text] {
    std::string s = text;
    const int edits = *InRange(1, 5);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = *InRange<size_t>(0, s.size() + 1);
      switch (*InRange(0, 7)) {
        case 0:
          s.insert(pos, 1, *rc::gen::arbitrary<char>());
          break;
        case 1:
          s.insert(pos, *rc::gen::elementOf(InterestingTokens()));
          break;
        case 2:
          s.erase(pos, *InRange<size_t>(1, 6));
          break;
        case 3:
          if (pos < s.size()) s[pos] = *rc::gen::arbitrary<char>();
          break;
        case 4:
          s = ReplaceRun(s, IsDigit, *rc::gen::elementOf(InterestingNumbers()), pos);
          break;
        case 5:
          s = ReplaceRun(s, IsWordChar, *rc::gen::elementOf(InterestingTokens()), pos);
          break;
        default: {
          const size_t len = *InRange<size_t>(0, s.size() - pos + 1);
          s.insert(pos, s.substr(pos, len));
          break;
        }
      }
    }
    return s;
  });
}

// Arbitrary bytes, or a soup of the parsers' own tokens and interesting numbers.
rc::Gen<std::string> GenGarbage() {
  return rc::gen::oneOf(rc::gen::string<std::string>(), rc::gen::exec([] {
                          const int count = *InRange(0, 16);
                          std::string s;
                          for (int i = 0; i < count; ++i) {
                            s += *rc::gen::weightedElement<int>({{3, 0}, {1, 1}}) == 0
                                     ? *rc::gen::elementOf(InterestingTokens())
                                     : *rc::gen::elementOf(InterestingNumbers());
                          }
                          return s;
                        }));
}

void AssertError(const absl::Status& status) {
  RC_ASSERT(status.code() == absl::StatusCode::kInvalidArgument);
  RC_ASSERT(!status.message().empty());
}

// Exercises every query a validated type allows, so UBSan sees any overflow Validate lets
// through.
void ExerciseValidType(const Mesh& mesh, const DistType& type) {
  const int64_t global = GlobalElements(type);
  const int64_t local = LocalElements(mesh, type);
  RC_ASSERT(local >= 1);
  RC_ASSERT(local <= global);
  RC_ASSERT(LocalBytes(mesh, type) == local * ElementBytes(type.element_type));
  RC_ASSERT(static_cast<int>(LocalShape(mesh, type).size()) == type.rank());
  for (int64_t device : {int64_t{0}, mesh.num_devices() - 1}) {
    RC_ASSERT(static_cast<int>(BlockIndex(mesh, type, device).size()) == type.rank());
    RC_ASSERT(static_cast<int>(BlockOffset(mesh, type, device).size()) == type.rank());
    RC_ASSERT(SummandIndex(mesh, type, device) < NumSummands(mesh, type));
  }
}

// Feeds `text` to the mesh and type parsers; `mesh` is the mesh types are validated against.
void ExerciseParsers(const std::string& text, const Mesh& mesh) {
  absl::StatusOr<Mesh> parsed_mesh = ParseMesh(text);
  if (!parsed_mesh.ok()) {
    AssertError(parsed_mesh.status());
  } else {
    RC_TAG("mesh_accepted");
    RC_ASSERT(parsed_mesh->num_devices() >= 1);
    absl::StatusOr<Mesh> again = ParseMesh(parsed_mesh->ToString());
    RC_ASSERT_OK(again.status());
    RC_ASSERT(*again == *parsed_mesh);
  }

  absl::StatusOr<DistType> type = ParseType(text);
  absl::StatusOr<DistType> valid = ParseValidType(mesh, text);
  if (!type.ok()) {
    AssertError(type.status());
    AssertError(valid.status());
    return;
  }
  RC_TAG("type_parsed");
  absl::StatusOr<DistType> again = ParseType(ToString(*type));
  RC_ASSERT_OK(again.status());
  RC_ASSERT(*again == *type);
  const absl::Status status = Validate(mesh, *type);
  RC_ASSERT(status.ok() == valid.ok());
  if (!status.ok()) {
    AssertError(status);
    AssertError(valid.status());
  } else {
    RC_TAG("type_valid");
    RC_ASSERT(*valid == *type);
    ExerciseValidType(mesh, *type);
  }
  if (parsed_mesh.ok()) {
    const absl::Status on_own_mesh = Validate(*parsed_mesh, *type);
    if (!on_own_mesh.ok()) {
      AssertError(on_own_mesh);
    } else {
      ExerciseValidType(*parsed_mesh, *type);
    }
  }
}

RESHARD_PROP(Parsing, GarbageNeverCrashes, kCases) {
  const std::string text = *GenGarbage();
  const Mesh mesh = *GenMesh();
  ExerciseParsers(text, mesh);
  absl::StatusOr<Plan> plan = PlanFromJson(text);
  if (!plan.ok()) AssertError(plan.status());
}

RESHARD_PROP(Parsing, MutatedTextNeverCrashes, kCases) {
  const MeshAndType c = *GenMeshAndType();
  const bool mutate_mesh = *rc::gen::arbitrary<bool>();
  const std::string original = mutate_mesh ? c.mesh.ToString() : ToString(c.type);
  const std::string text = *GenMutated(original);
  RC_TAG(mutate_mesh ? "mutated_mesh" : "mutated_type");
  ExerciseParsers(text, c.mesh);
}

// Mutated plan JSON: PlanFromJson either rejects it with a message, or returns a plan whose
// steps type-check, whose metrics are recomputed, and which (when it ends at its target and
// is small) the interpreter executes correctly: a mutated permute or axis list that still
// type-checks must still move the right data.
RESHARD_PROP(PlanJson, MutatedJsonNeverCrashes, kCases) {
  const ReshardCase c = *GenReshardCase();
  const Strategy strategy = *rc::gen::element(Strategy::kNormal, Strategy::kNaive);
  RC_LOG() << "strategy " << StrategyName(strategy) << "\n";
  const absl::StatusOr<Plan>& plan = CachedSynthesize(c, strategy);
  RC_PRE(plan.ok());
  const std::string text = *GenMutated(PlanToJson(*plan));
  RC_LOG() << text << "\n";
  absl::StatusOr<Plan> parsed = PlanFromJson(text);
  if (!parsed.ok()) {
    RC_TAG("rejected");
    AssertError(parsed.status());
    return;
  }
  RC_TAG("accepted");
  RC_ASSERT_OK(Validate(parsed->mesh, parsed->source));
  RC_ASSERT_OK(Validate(parsed->mesh, parsed->target));
  RC_ASSERT_OK(CheckSteps(parsed->mesh, parsed->source, parsed->steps));
  RC_ASSERT(parsed->metrics == ComputeMetrics(parsed->mesh, parsed->source, parsed->steps));
  // Overflow-safe: a mutated plan may name huge (but valid) sizes.
  int64_t with_summands = 0, on_devices = 0;
  const bool small =
      parsed->mesh.num_devices() <= 256 &&
      !__builtin_mul_overflow(GlobalElements(parsed->source),
                              NumSummands(parsed->mesh, parsed->source), &with_summands) &&
      !__builtin_mul_overflow(GlobalElements(parsed->source), parsed->mesh.num_devices(),
                              &on_devices) &&
      with_summands <= kMaxGlobalElements && on_devices <= kMaxDeviceElements;
  if (small && parsed->result() == parsed->target) {
    RC_TAG("executed");
    AssertInterpreterAgrees(*parsed);
  }
}

// ---------------------------------------------------------------------------------------------
// Sub-axes (typesys/sub_axis.h) on meshes with composite axis sizes. Types come from
// GenSubAxisType: pieces of one random divisor chain per axis, adjacent runs merged at random
// (generators.h), so about half are not canonical.

void TagSubAxes(const DistType& type) { RC_TAG(NamesSubAxes(type) ? "sub_axes" : "whole_axes"); }

// Printing, parsing, validation and canonical form: ToString prints what it is given (the
// independent DebugString), ParseType reads it back, ParseValidType and Canonicalize give the
// canonical form computed from the chains, which is a fixed point and re-parses to itself; any
// two spellings of one atom-level type have the same canonical form.
RESHARD_PROP(SubAxes, PrintParseCanonicalRoundTrip, kCases) {
  const SubAxisTypeCase c = *GenSubAxisType(/*spell_whole_axes=*/true);
  const Mesh& mesh = c.axes.mesh;
  TagSubAxes(c.type);
  RC_ASSERT_OK(Validate(mesh, c.type));

  const std::string text = ToString(c.type);
  RC_ASSERT(text == DebugString(c.type));
  absl::StatusOr<DistType> parsed = ParseType(text);
  RC_ASSERT_OK(parsed.status());
  RC_ASSERT(*parsed == c.type);
  RC_ASSERT(ToString(*parsed) == text);
  absl::StatusOr<DistType> spaced = ParseType(*GenSpaced(text, /*keep_refs=*/true));
  RC_ASSERT_OK(spaced.status());
  RC_ASSERT(*spaced == c.type);

  const DistType canonical = Canonicalize(mesh, c.type);
  const DistType expected = SubAxisCanonical(c.axes, c.type);
  RC_LOG() << "canonical " << DebugString(canonical) << " expected " << DebugString(expected)
           << "\n";
  RC_TAG(canonical == c.type ? "given_canonical" : "given_not_canonical");
  RC_ASSERT(canonical == expected);
  RC_ASSERT(Canonicalize(mesh, canonical) == canonical);
  RC_ASSERT_OK(Validate(mesh, canonical));
  absl::StatusOr<DistType> reparsed = ParseType(ToString(canonical));
  RC_ASSERT_OK(reparsed.status());
  RC_ASSERT(*reparsed == canonical);
  RC_ASSERT(ToString(*reparsed) == ToString(canonical));
  absl::StatusOr<DistType> valid = ParseValidType(mesh, text);
  RC_ASSERT_OK(valid.status());
  RC_ASSERT(*valid == canonical);

  // Another spelling of the same atoms, and the atoms themselves: same canonical form.
  const DistType other = MergeRandomly(c.axes, c.atom_type);
  RC_ASSERT(Canonicalize(mesh, other) == canonical);
  RC_ASSERT(Canonicalize(mesh, c.atom_type) == canonical);
  RC_ASSERT(HasSubAxes(mesh, canonical) == NamesSubAxes(canonical));
}

// A type and its refinement hold the same data on every device: equal local shapes, block
// offsets and summand indices, device by device, on the user's mesh and on the refined mesh
// (AxisRefinement::Refine), for the coarsest refinement the type needs, one refined further by
// extra atoms of the chains, and the prime-factor refinement. The block offsets are also
// checked against PieceDigit (row-major numbering and mesh.h's digit rule computed here).
RESHARD_PROP(SubAxes, RefinementPreservesDeviceNumbering, kCases) {
  const SubAxisTypeCase c = *GenSubAxisType();
  const Mesh& mesh = c.axes.mesh;
  TagSubAxes(c.type);
  RC_ASSERT_OK(Validate(mesh, c.type));
  AxisList refs = SubAxisRefs(mesh, c.type);
  const int kind = *InRange(0, 3);
  if (kind == 1) {
    for (const MeshAxis& atom : c.axes.atoms.axes()) {
      if (IsSubAxisRef(atom.name) && *rc::gen::arbitrary<bool>()) refs.push_back(atom.name);
    }
  }
  RC_TAG(kind == 0 ? "coarsest" : kind == 1 ? "extra_atoms" : "prime_factors");
  absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, refs, kind == 2);
  RC_ASSERT_OK(r.status());
  const Mesh& refined = r->refined();
  const DistType fine = r->Refine(c.type);
  RC_LOG() << "refined mesh " << DebugString(refined) << " type " << DebugString(fine) << "\n";
  RC_ASSERT(r->mesh() == mesh);
  RC_ASSERT(refined.num_devices() == mesh.num_devices());
  RC_ASSERT_OK(Validate(refined, fine));
  RC_ASSERT(!HasSubAxes(refined, fine));
  RC_ASSERT(Canonicalize(mesh, fine) == Canonicalize(mesh, c.type));
  RC_ASSERT(LocalShape(refined, fine) == LocalShape(mesh, c.type));
  RC_ASSERT(NumSummands(refined, fine) == NumSummands(mesh, c.type));
  const std::vector<int64_t> local = LocalShape(mesh, c.type);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    const std::vector<int64_t> offset = BlockOffset(mesh, c.type, d);
    RC_ASSERT(BlockOffset(refined, fine, d) == offset);
    RC_ASSERT(BlockIndex(refined, fine, d) == BlockIndex(mesh, c.type, d));
    RC_ASSERT(SummandIndex(refined, fine, d) == SummandIndex(mesh, c.type, d));
    for (int i = 0; i < c.type.rank(); ++i) {
      int64_t block = 0;
      for (const AxisName& ref : c.type.dims[i].axes) {
        const Piece p = PieceOf(c.axes, ref);
        block = block * (p.end / p.begin) + PieceDigit(mesh, p, d);
      }
      RC_ASSERT(offset[i] == block * local[i]);
    }
    // Every reference's coordinate is the mixed radix of its atoms' coordinates.
    for (const AxisName& ref : refs) {
      RC_ASSERT(refined.IndexOver(d, r->Atoms(ref)) == mesh.IndexOver(d, {ref}));
      RC_ASSERT(mesh.IndexOver(d, {ref}) == PieceDigit(mesh, PieceOf(c.axes, ref), d));
    }
  }
}

// The normal plan between sub-axis types: type-checks, ends at `to`, is correct on the
// interpreter, stays within the memory bound and receives at least the lower bound.
RESHARD_PROP(SubAxes, NormalPlanCorrectAndBounded, kCases) {
  const SubAxisReshardCase s = *GenSubAxisReshardCase();
  const ReshardCase& c = s.c;
  AssertValidCase(c);
  TagSubAxes(c.from);
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, {Strategy::kNormal});
  if (!plan.ok()) {
    RC_ASSERT(plan.status().code() == absl::StatusCode::kNotFound);
    RC_TAG(kNotFoundTag);
    return;
  }
  RC_LOG() << PlanDebugString(*plan) << "\n";
  TagPlanShape(*plan);
  RC_ASSERT_OK(CheckPlan(*plan));
  // Plans carry the canonical spelling of their endpoints.
  RC_ASSERT(plan->source == Canonicalize(c.mesh, c.from));
  RC_ASSERT(plan->target == Canonicalize(c.mesh, c.to));
  RC_ASSERT(plan->metrics.peak_local_bytes <= MemoryBound(c));
  RC_ASSERT(plan->metrics.lower_bound_bytes_total == LowerBoundBytesTotal(c.mesh, c.from, c.to));
  RC_ASSERT(plan->metrics.bytes_received_total >= plan->metrics.lower_bound_bytes_total);
  AssertInterpreterAgrees(*plan);
  // JSON round trip for canonical endpoints (SubAxes.PlanJsonNonCanonicalTarget covers the
  // other spellings).
  if (Canonicalize(c.mesh, c.from) == c.from && Canonicalize(c.mesh, c.to) == c.to) {
    RC_TAG("json_round_trip");
    absl::StatusOr<Plan> parsed = PlanFromJson(PlanToJson(*plan));
    RC_ASSERT_OK(parsed.status());
    RC_ASSERT(parsed->steps == plan->steps);
    RC_ASSERT(parsed->metrics == plan->metrics);
  }
}

// The public functions written for whole axes take sub-axis types too (they refine
// internally; they used to index arrays with AxisIndex's -1 for an atom name and corrupt the
// heap): the bounds equal their values on the prime-factor refinement, a finer mesh than the
// one they refine to, under a model with distinct per-axis costs; DirectExchange and
// MinimalPermute build steps the interpreter runs to the right data, the exchange receiving
// exactly the lower bound; SearchPlan's steps (on the refinement, brought back) are correct.
RESHARD_PROP(SubAxes, WholeAxisFunctionsTakeSubAxes, kCases) {
  const SubAxisReshardCase s = *GenSubAxisReshardCase();
  const ReshardCase& c = s.c;
  AssertValidCase(c);
  TagSubAxes(c.from);
  absl::StatusOr<AxisRefinement> fine = AxisRefinement::Create(
      c.mesh, SubAxisRefs(c.mesh, c.from, c.to), /*prime_factors=*/true);
  RC_ASSERT_OK(fine.status());
  const Mesh& atoms = fine->refined();
  const DistType from = fine->Refine(c.from), to = fine->Refine(c.to);
  RC_ASSERT(BytesLowerBound(c.mesh, c.from, c.to) == BytesLowerBound(atoms, from, to));
  CostModel model;
  for (int a = 0; a < c.mesh.num_axes(); ++a) {
    model.SetAxis(c.mesh.axes()[a].name, AxisCost{1.0 + a, 100.0 / (1 + a)});
  }
  RC_ASSERT(TimeLowerBoundUs(c.mesh, model, c.from, c.to) ==
            TimeLowerBoundUs(atoms, model, from, to));

  auto run = [&](const DistType& out, std::vector<Step> steps) {
    Plan plan;
    plan.mesh = c.mesh;
    plan.source = c.from;
    plan.target = out;
    plan.steps = std::move(steps);
    plan.cost_model = model;
    plan.metrics = ComputeMetrics(c.mesh, c.from, plan.steps, model);
    RC_LOG() << PlanDebugString(plan) << "\n";
    RC_ASSERT_OK(CheckPlan(plan));
    AssertInterpreterAgrees(plan);
    return plan.metrics;
  };
  if (PartialInMeshOrder(atoms, from) == PartialInMeshOrder(atoms, to)) {
    RC_TAG("direct");
    const Metrics m = run(c.to, {Step{DirectExchange(c.mesh, c.from, c.to), c.to}});
    RC_ASSERT(m.bytes_received_total == m.lower_bound_bytes_total);
  }
  // Each dimension's list reversed: the same local shape and partial axes, a permute apart.
  DistType reversed = c.from;
  for (Dim& dim : reversed.dims) std::reverse(dim.axes.begin(), dim.axes.end());
  if (Validate(c.mesh, reversed).ok()) {
    RC_TAG("permute");
    run(reversed, {Step{MinimalPermute(c.mesh, c.from, reversed, &model), reversed}});
  }
  SearchOptions search;
  search.max_local_bytes = MemoryBound(c);
  search.max_states = 2000;
  absl::StatusOr<std::vector<Step>> steps = SearchPlan(c.mesh, c.from, c.to, search);
  if (steps.ok()) {
    RC_TAG("search");
    // Not inside RC_ASSERT: its expression capture does not short-circuit `||`.
    const bool ends_at_target = steps->empty() || steps->back().type == c.to;
    RC_ASSERT(ends_at_target);
    run(c.to, *std::move(steps));
  } else {
    RC_LOG() << steps.status() << "\n";
    RC_ASSERT(absl::IsNotFound(steps.status()) || absl::IsResourceExhausted(steps.status()));
  }
}

// Regression tests for four bugs the sub-axis properties found (all fixed): the lower bound
// compared partial pieces by spelling; a whole axis spelled as a piece (`y:(1)4` on y = 4)
// was not refined to the axis (Synthesize crashed on it); PlanFromJson rejected its own
// output for a non-canonical `to`.
TEST(SubAxes, RefineSpelledWholeAxis) {
  const Mesh mesh = *ParseMesh("x=3,y=4");
  const DistType type = *ParseType("f32[4{y:(1)4}]");
  ASSERT_TRUE(Validate(mesh, type).ok());
  absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, SubAxisRefs(mesh, type));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(HasSubAxes(r->refined(), r->Refine(type))) << ToString(r->Refine(type));
}

TEST(SubAxes, SynthesizeSpelledWholeAxis) {
  const Mesh mesh = *ParseMesh("x=4,y=2");
  const DistType from = *ParseType("f32[8{x:(1)4}]");
  const DistType to = *ParseType("f32[8{y}]");
  ASSERT_TRUE(Validate(mesh, from).ok());
  for (Strategy strategy : {Strategy::kNormal, Strategy::kOptimal, Strategy::kNaive}) {
    absl::StatusOr<Plan> plan = Synthesize(mesh, from, to, {strategy});
    ASSERT_TRUE(plan.ok()) << StrategyName(strategy) << ": " << plan.status();
    absl::StatusOr<RunReport> report = RunPlan(*plan);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->ok) << report->message;
  }
}

TEST(SubAxes, PlanJsonNonCanonicalTarget) {
  const Mesh mesh = *ParseMesh("x=6");
  const DistType from = *ParseType("f16[6]");
  const DistType to = *ParseType("f16[6{x:(1)2,x:(2)3}]");
  absl::StatusOr<Plan> plan = Synthesize(mesh, from, to, SynthesisOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<Plan> parsed = PlanFromJson(PlanToJson(*plan));
  EXPECT_TRUE(parsed.ok()) << parsed.status();
}

TEST(SubAxes, LowerBoundIgnoresPartialSpelling) {
  const Mesh mesh = *ParseMesh("x=8,z=1");
  const DistType from = *ParseType("bf16[8] partial{z,x:(1)4,x:(4)2}");
  const DistType to = *ParseType("bf16[8] partial{x}");
  EXPECT_EQ(LowerBoundBytesTotal(mesh, from, to),
            LowerBoundBytesTotal(mesh, Canonicalize(mesh, from), Canonicalize(mesh, to)));
  EXPECT_EQ(LowerBoundBytesTotal(mesh, Canonicalize(mesh, from), Canonicalize(mesh, to)), 0);
}

}  // namespace
}  // namespace reshard::testing
