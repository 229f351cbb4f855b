// RapidCheck properties of every strategy (docs/synthesis.md, docs/baselines.md):
//  - every strategy's plan is correct on the reference interpreter, with measured bytes and
//    peak equal to the plan's metrics;
//  - `optimal` costs no more (modeled time) than any other strategy whose plan fits the memory
//    bound, under the default and under a random heterogeneous cost model;
//  - `direct` receives exactly the lower bound (cases without a pending reduction).
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
using ::reshard::testing::ReshardCase;

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

}  // namespace
}  // namespace reshard
