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
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "interp/interpreter.h"
#include "synth/synthesize.h"
#include "tests/generators.h"
#include "typesys/cost_model.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

using ::reshard::testing::GenReshardCase;
using ::reshard::testing::GenSubAxisReshardCase;
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
  for (Strategy strategy : AllStrategies()) {
    if (strategy == Strategy::kOptimal) continue;
    options.strategy = strategy;
    absl::StatusOr<Plan> plan = Synthesize(c.mesh, c.from, c.to, options);
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
  for (const std::string& axis : c.from.partial) {
    if (AxisUse(c.to, axis) != kPartial && c.mesh.AxisSize(axis) > 1) reduces = true;
  }
  if (!reduces) {
    RC_ASSERT(plan->metrics.bytes_received_total == plan->metrics.lower_bound_bytes_total);
  }
  AssertRuns(*plan);
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
