// RapidCheck properties of every strategy (docs/synthesis.md, docs/baselines.md):
//  - every strategy's plan is correct on the reference interpreter, with measured bytes and
//    peak equal to the plan's metrics;
//  - `optimal` costs no more (modeled time) than any other strategy whose plan fits the memory
//    bound, under the default and under a random heterogeneous cost model;
//  - `direct` receives exactly the lower bound (cases without a pending reduction);
//  - the same on meshes with composite axis sizes and types that name sub-axes (generators.h
//    GenSubAxisReshardCase), where also normal and optimal respect the memory bound and
//    `optimal` with sub_axes = true is no worse than with sub_axes = false.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interp/interpreter.h"
#include "synth/search.h"
#include "synth/synthesize.h"
#include "tests/generators.h"
#include "typesys/cost_model.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

using ::reshard::testing::GenPureMoveCase;
using ::reshard::testing::GenReshardCase;
using ::reshard::testing::GenSubAxisPureMoveCase;
using ::reshard::testing::GenSubAxisReshardCase;
using ::reshard::testing::InRange;
using ::reshard::testing::NamesSubAxes;
using ::reshard::testing::ReshardCase;
using ::reshard::testing::SubAxisReshardCase;

int64_t Bound(const ReshardCase& c) {
  return std::max(LocalBytes(c.mesh, c.from), LocalBytes(c.mesh, c.to));
}

void AssertRuns(const Plan& plan) {
  absl::StatusOr<RunReport> report = RunPlan(plan);
  RC_ASSERT(report.ok());
  if (!report->ok) RC_FAIL(plan.strategy + ": interpreter: " + report->message);
  RC_ASSERT(report->bytes_received_total == plan.metrics.bytes_received_total);
  RC_ASSERT(report->bytes_received_max == plan.metrics.bytes_received_max);
  RC_ASSERT(report->peak_local_bytes == plan.metrics.peak_local_bytes);
}

// A random per-axis model: alpha in {1, 5, 20} µs, bandwidth in {10, 100, 400} GB/s.
CostModel RandomModel(const Mesh& mesh) {
  CostModel model;
  for (const MeshAxis& axis : mesh.axes()) {
    model.SetAxis(axis.name, AxisCost{*rc::gen::elementOf(std::vector<double>{1, 5, 20}),
                                      *rc::gen::elementOf(std::vector<double>{10, 100, 400})});
  }
  return model;
}

void CheckAllStrategies(const ReshardCase& c, const CostModel& model) {
  SynthesisOptions options;
  options.cost_model = model;
  options.strategy = Strategy::kOptimal;
  absl::StatusOr<Plan> optimal = Synthesize(c.mesh, c.from, c.to, options);
  if (!optimal.ok()) {
    RC_TAG("optimal_" + std::string(absl::StatusCodeToString(optimal.status().code())));
    RC_ASSERT(absl::IsNotFound(optimal.status()) || absl::IsResourceExhausted(optimal.status()));
  } else {
    AssertRuns(*optimal);
    RC_ASSERT(optimal->metrics.peak_local_bytes <= Bound(c));
  }
  std::map<Strategy, double> cost_us;
  for (Strategy strategy : AllStrategies()) {
    if (strategy == Strategy::kOptimal) continue;
    options.strategy = strategy;
    absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
    if (plan.ok()) cost_us[strategy] = plan->metrics.cost_us;
    if (!plan.ok()) {
      // Only normal may fail (NotFound), and then optimal must not have found a plan either.
      RC_ASSERT(strategy == Strategy::kNormal);
      RC_ASSERT(absl::IsNotFound(plan.status()));
      RC_ASSERT(!optimal.ok());
      continue;
    }
    AssertRuns(*plan);
    if (IsMemoryBounded(strategy)) RC_ASSERT(plan->metrics.peak_local_bytes <= Bound(c));
    if (strategy == Strategy::kDirect && plan->steps.size() == 1 &&
        plan->steps[0].op.kind == CollectiveKind::kAllToAllV) {
      RC_ASSERT(plan->metrics.bytes_received_total == plan->metrics.lower_bound_bytes_total);
    }
    if (optimal.ok() && plan->metrics.peak_local_bytes <= Bound(c) &&
        strategy != Strategy::kDirect && strategy != Strategy::kAuto) {
      if (optimal->metrics.cost_us > plan->metrics.cost_us) {
        RC_FAIL("optimal costs " + std::to_string(optimal->metrics.cost_us) + " us but " +
                plan->strategy + " costs " + std::to_string(plan->metrics.cost_us) + " us");
      }
    }
  }
  // auto is the cheaper of normal and direct (direct may refuse a large exchange).
  RC_ASSERT(cost_us.count(Strategy::kAuto) == 1);
  double cheaper = std::numeric_limits<double>::infinity();
  for (Strategy strategy : {Strategy::kNormal, Strategy::kDirect}) {
    if (cost_us.count(strategy)) cheaper = std::min(cheaper, cost_us[strategy]);
  }
  RC_ASSERT(cost_us[Strategy::kAuto] == cheaper);
}

RESHARD_PROP(StrategyProperty, EveryStrategyCorrectOptimalCheapest, 1000) {
  const ReshardCase c = *GenReshardCase();
  CheckAllStrategies(c, CostModel());
}

RESHARD_PROP(StrategyProperty, OptimalCheapestUnderHeterogeneousModel, 1000) {
  const ReshardCase c = *GenReshardCase();
  CheckAllStrategies(c, RandomModel(c.mesh));
}

RESHARD_PROP(StrategyProperty, DirectReceivesExactlyTheLowerBound, 1000) {
  const ReshardCase c = *GenReshardCase();
  SynthesisOptions options;
  options.strategy = Strategy::kDirect;
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
  RC_ASSERT(plan.ok());
  bool reduces = false;
  for (const AxisName& axis : c.from.partial) {
    if (AxisUse(c.to, axis) != kPartial && c.mesh.AxisSize(axis) > 1) reduces = true;
  }
  if (!reduces) {
    RC_ASSERT(plan->metrics.bytes_received_total == plan->metrics.lower_bound_bytes_total);
  }
  AssertRuns(*plan);
}

// The bound that guides `optimal`'s A* (SearchOptions::bytes_bound) never exceeds what a real
// plan still receives from any of its types: checked on every suffix of every strategy's plan,
// partial sources included (where it counts the merges a reduction needs).
RESHARD_PROP(SearchProperty, BytesLowerBoundHoldsOnEveryPlanSuffix, 1000) {
  const ReshardCase c = *GenReshardCase();
  for (Strategy strategy : AllStrategies()) {
    SynthesisOptions options;
    options.strategy = strategy;
    options.objective = Objective::kBytes;
    absl::StatusOr<Plan> synthesized = Synthesize(c.mesh, c.from, c.to, options);
    if (!synthesized.ok()) continue;
    // The bound is defined on whole axes: read plans with sub-axes on their refinement.
    absl::StatusOr<Plan> plan = RefinePlan(*synthesized);
    RC_ASSERT(plan.ok());
    DistType type = plan->source;
    for (size_t i = 0; i <= plan->steps.size(); ++i) {
      const std::vector<Step> rest(plan->steps.begin() + i, plan->steps.end());
      const int64_t received = ComputeMetrics(plan->mesh, type, rest).bytes_received_total;
      const int64_t bound = BytesLowerBound(plan->mesh, type, plan->target);
      if (bound > received) {
        RC_FAIL(plan->strategy + ": from step " + std::to_string(i) + " (" + ToString(type) +
                ") the plan receives " + std::to_string(received) + " B, below the bound " +
                std::to_string(bound));
      }
      if (i < plan->steps.size()) type = plan->steps[i].type;
    }
  }
}

// The heuristic of `optimal`'s time-mode A* (TimeLowerBoundUs, with its latency rounds) is
// consistent along every step of every strategy's plan, under the default model and a random
// heterogeneous one: bound(s) <= modeled time of the step + bound(s'), hence also below what
// the rest of the plan costs. (Times are rounded to whole nanoseconds: 1 ns slack per step.)
RESHARD_PROP(SearchProperty, TimeLowerBoundConsistentOnEveryPlanStep, 1000) {
  const ReshardCase c = *GenReshardCase();
  const bool random_model = *rc::gen::arbitrary<bool>();
  const CostModel model = random_model ? RandomModel(c.mesh) : CostModel{};
  RC_TAG(random_model ? "random_model" : "default_model");
  for (Strategy strategy : AllStrategies()) {
    SynthesisOptions options;
    options.strategy = strategy;
    options.cost_model = model;
    absl::StatusOr<Plan> synthesized = Synthesize(c.mesh, c.from, c.to, options);
    if (!synthesized.ok()) continue;
    absl::StatusOr<Plan> plan = RefinePlan(*synthesized);
    RC_ASSERT(plan.ok());
    DistType type = plan->source;
    double rest_us = synthesized->metrics.cost_us;
    const double slack = 1e-3 * static_cast<double>(plan->steps.size() + 1);
    for (const Step& step : plan->steps) {
      const double step_us = ComputeMetrics(plan->mesh, type, {step}, model).cost_us;
      const double here = TimeLowerBoundUs(plan->mesh, model, type, plan->target);
      const double next = TimeLowerBoundUs(plan->mesh, model, step.type, plan->target);
      if (here > step_us + next + 1e-3 || here > rest_us + slack) {
        RC_FAIL(plan->strategy + ": at " + ToString(type) + " the bound is " +
                std::to_string(here) + " us; the step " + ToString(step.op) + " costs " +
                std::to_string(step_us) + " us, the bound after it is " + std::to_string(next) +
                " us, the rest of the plan " + std::to_string(rest_us) + " us");
      }
      rest_us -= step_us;
      type = step.type;
    }
  }
}

// Pure moves (generators.h GenPureMoveCase, GenSubAxisPureMoveCase) under a random uniform
// model: normal's plan runs on the interpreter within the memory bound, and where every atom
// has one size (the pure-move solver's domain, synth/pure_move.h) it is exactly as fast as
// optimal's proven optimum, with sub-axes and without; elsewhere (the general path) no faster.
RESHARD_PROP(StrategyProperty, PureMovesNormalAsFastAsOptimal, 300) {
  SynthesisOptions options;
  options.cost_model = CostModel(AxisCost{*rc::gen::elementOf(std::vector<double>{0, 1, 5, 20}),
                                          *rc::gen::elementOf(std::vector<double>{10, 100, 400})});
  options.sub_axes = *rc::gen::arbitrary<bool>();
  // With sub-axes, a third of the cases name prime factors in their types.
  const bool named_atoms = options.sub_axes && *InRange(0, 3) == 0;
  const ReshardCase c = named_atoms ? *GenSubAxisPureMoveCase() : *GenPureMoveCase();
  RC_TAG(named_atoms ? "types_name_sub_axes" : "types_name_axes");
  absl::StatusOr<Plan> normal = Synthesize(c.mesh, c.from, c.to, options);
  options.strategy = Strategy::kOptimal;
  absl::StatusOr<Plan> optimal = Synthesize(c.mesh, c.from, c.to, options);
  if (!normal.ok()) {
    // No plan within the bound (e.g. x=6 cannot pass a dimension of local size 2 whole).
    RC_ASSERT(absl::IsNotFound(normal.status()));
    RC_ASSERT(!optimal.ok());
    RC_TAG("no_plan");
    return;
  }
  AssertRuns(*normal);
  RC_ASSERT(normal->metrics.peak_local_bytes <= Bound(c));
  RC_ASSERT(optimal.ok());
  if (optimal->optimality != Optimality::kProven) {
    RC_TAG("optimal_unproven");
    return;
  }
  // The solver's domain: one atom size (prime factors with sub-axes, else the axes).
  bool one_size = true;
  int64_t atom = 0;
  for (const MeshAxis& axis : c.mesh.axes()) {
    int64_t size = axis.size;
    if (options.sub_axes) {
      // The smallest divisor above 1 is prime; the axis must be a power of it.
      for (int64_t q = 2; q <= axis.size; ++q) {
        if (axis.size % q == 0) {
          size = q;
          break;
        }
      }
      for (int64_t rest = axis.size; rest > 1; rest /= size) {
        if (rest % size != 0) one_size = false;
      }
    }
    if (atom == 0) atom = size;
    one_size = one_size && size == atom;
  }
  const double slack = 1e-3;  // cost_us is rounded to whole nanoseconds.
  RC_TAG(one_size ? "one_atom_size" : "general_path");
  if (one_size) {
    RC_ASSERT(std::abs(normal->metrics.cost_us - optimal->metrics.cost_us) <= slack);
  } else {
    RC_ASSERT(normal->metrics.cost_us >= optimal->metrics.cost_us - slack);
  }
}

// A* with the bytes bound finds plans exactly as cheap as plain Dijkstra (bytes mode).
RESHARD_PROP(SearchProperty, BytesBoundKeepsTheOptimum, 1000) {
  const ReshardCase c = *GenReshardCase();
  SearchOptions options;
  options.max_local_bytes = Bound(c);
  options.max_states = 20000;
  SearchStats plain_stats, guided_stats;
  absl::StatusOr<std::vector<Step>> plain = SearchPlan(c.mesh, c.from, c.to, options, &plain_stats);
  options.bytes_bound = true;
  absl::StatusOr<std::vector<Step>> guided =
      SearchPlan(c.mesh, c.from, c.to, options, &guided_stats);
  if (!plain.ok() || !guided.ok()) {
    // Both exhaustive searches agree that no plan exists; budgets may cut either short.
    RC_ASSERT(!(absl::IsNotFound(plain.status()) && guided.ok()));
    RC_ASSERT(!(absl::IsNotFound(guided.status()) && plain.ok()));
    RC_TAG("undecided_or_none");
    return;
  }
  RC_ASSERT(ComputeMetrics(c.mesh, c.from, *plain).bytes_received_total ==
            ComputeMetrics(c.mesh, c.from, *guided).bytes_received_total);
  RC_TAG(guided_stats.states_settled < plain_stats.states_settled ? "guided_settles_fewer"
                                                                  : "guided_settles_as_many");
}

// ---------------------------------------------------------------------------------------------
// Sub-axes: cases on meshes with composite axis sizes (4, 6, 8) whose types name pieces of one
// random divisor chain per axis (generators.h).

void TagSubAxes(const ReshardCase& c) {
  RC_TAG(NamesSubAxes(c.from) || NamesSubAxes(c.to) ? "sub_axes" : "whole_axes");
}

// `optimal` with sub_axes = true (the default: it also searches the prime-factor refinement)
// is no worse under the objective than with sub_axes = false (only the pieces `from` and `to`
// name).
void CheckSubAxesNoWorse(const ReshardCase& c, const CostModel& model) {
  SynthesisOptions options;
  options.cost_model = model;
  options.strategy = Strategy::kOptimal;
  absl::StatusOr<Plan> with = Synthesize(c.mesh, c.from, c.to, options);
  options.sub_axes = false;
  absl::StatusOr<Plan> without = Synthesize(c.mesh, c.from, c.to, options);
  if (!without.ok()) {
    RC_ASSERT(absl::IsNotFound(without.status()) || absl::IsResourceExhausted(without.status()));
    return;
  }
  // A plan without sub-axes is also a plan with them: `with` must exist unless its search
  // ran out of states.
  if (!with.ok()) {
    RC_ASSERT(absl::IsResourceExhausted(with.status()));
    return;
  }
  AssertRuns(*without);
  const Metrics& a = with->metrics;
  const Metrics& b = without->metrics;
  // Costs are sums of doubles: allow rounding, not a worse plan.
  const double slack = 1e-9 * std::max(1.0, b.cost_us);
  if (a.cost_us > b.cost_us + slack ||
      (a.cost_us >= b.cost_us - slack && a.bytes_received_total > b.bytes_received_total)) {
    RC_FAIL("optimal with sub-axes costs " + std::to_string(a.cost_us) + " us / " +
            std::to_string(a.bytes_received_total) + " B, without " + std::to_string(b.cost_us) +
            " us / " + std::to_string(b.bytes_received_total) + " B");
  }
  RC_TAG(a.cost_us < b.cost_us - slack ? "sub_axes_cheaper" : "sub_axes_equal");
}

RESHARD_PROP(SubAxisStrategyProperty, EveryStrategyCorrectOptimalCheapest, 1000) {
  const SubAxisReshardCase s = *GenSubAxisReshardCase();
  TagSubAxes(s.c);
  CheckAllStrategies(s.c, CostModel());
  CheckSubAxesNoWorse(s.c, CostModel());
}

RESHARD_PROP(SubAxisStrategyProperty, OptimalCheapestUnderHeterogeneousModel, 1000) {
  const SubAxisReshardCase s = *GenSubAxisReshardCase();
  TagSubAxes(s.c);
  const CostModel model = RandomModel(s.c.mesh);
  CheckAllStrategies(s.c, model);
  CheckSubAxesNoWorse(s.c, model);
}

RESHARD_PROP(SubAxisStrategyProperty, DirectReceivesExactlyTheLowerBound, 1000) {
  const ReshardCase c = (*GenSubAxisReshardCase()).c;
  TagSubAxes(c);
  SynthesisOptions options;
  options.strategy = Strategy::kDirect;
  absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
  RC_ASSERT(plan.ok());
  // to.partial is a subset of from.partial (as pieces), so a reduction is pending exactly
  // when from has more summands; comparing names would miss `partial{x}` vs
  // `partial{x:(1)2,x:(2)2}`.
  if (NumSummands(c.mesh, c.from) == NumSummands(c.mesh, c.to)) {
    RC_ASSERT(plan->metrics.bytes_received_total == plan->metrics.lower_bound_bytes_total);
  } else {
    RC_TAG("reduces");
  }
  AssertRuns(*plan);
}

}  // namespace
}  // namespace reshard
