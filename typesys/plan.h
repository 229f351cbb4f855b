// plan.h — redistribution plans: a source type, steps (collective + type after it), metrics.
//
//   Plan plan;  // usually from reshard::Synthesize
//   absl::Status ok = CheckPlan(plan);                    // every step type-checks
//   absl::StatusOr<Metrics> m = ComputeMetrics(plan.mesh, plan.source, plan.steps);
//   std::string json = PlanToJson(plan);                  // DESIGN §3 contract
#ifndef RESHARD_TYPESYS_PLAN_H_
#define RESHARD_TYPESYS_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard {

struct Step {
  Collective op;
  DistType type;  // The type after `op`.

  bool operator==(const Step&) const = default;
};

struct Metrics {
  // Max local bytes over the source, every intermediate and the target. An all_to_all_v step
  // counts its transient footprint, input + output local bytes (both buffers are live while
  // the exchange runs).
  int64_t peak_local_bytes = 0;
  // Per-device bytes received summed over the steps: the maximum over devices, and the total.
  int64_t bytes_received_max = 0;
  int64_t bytes_received_total = 0;
  // Bytes no plan can avoid receiving (see LowerBoundBytesTotal).
  int64_t lower_bound_bytes_total = 0;
  // Modeled time in µs: the sum of the steps' CostModel::StepCostUs, rounded to whole ns
  // (RoundCostUs), under the plan's cost model.
  double cost_us = 0;

  bool operator==(const Metrics&) const = default;
};

// What the strategy that built a plan established about its cost under the synthesis
// objective (modeled time, then bytes; or bytes, then time).
enum class Optimality {
  // Nothing: every strategy but `optimal`, and plans read from JSON.
  kNotClaimed,
  // No plan of the collective vocabulary is cheaper: `optimal`'s exact search finished on the
  // prime-factor refinement of the mesh (every sub-axis a plan may use), or on the mesh with
  // the types' own sub-axes when sub-axes are turned off (SynthesisOptions::sub_axes); in
  // either case without the mesh's size-1 axes, which change no plan's metrics.
  kProven,
  // No plan on whole axes (and the types' own sub-axes) is cheaper, but the search on the
  // prime-factor refinement gave up (its work budget, or a permute class past its cap): a plan
  // splitting axes further may be.
  kWholeAxesOnly,
};

struct Plan {
  Mesh mesh;
  DistType source;
  DistType target;
  std::string strategy;
  std::vector<Step> steps;
  Metrics metrics;
  // The model metrics.cost_us was computed with (not part of the JSON form: PlanFromJson
  // takes it as an argument, like the CLI's --axis-cost).
  CostModel cost_model;
  // Not part of the JSON form (DESIGN §3); the CLI prints it for `optimal`.
  Optimality optimality = Optimality::kNotClaimed;

  // The type after the last step (the source when there are no steps).
  const DistType& result() const { return steps.empty() ? source : steps.back().type; }
};

// Type-checks the steps in order from `source`. InvalidArgument naming the failing step, e.g.
// "step 2 (all_gather mesh_axes=[y] gather_axis=0): dimension 0 of f32[8{x},16] does not end
// with [y]".
absl::Status CheckSteps(const Mesh& mesh, const DistType& source, const std::vector<Step>& steps);

// CheckSteps, then that the result equals plan.target and plan.metrics are the computed ones
// (under plan.cost_model).
absl::Status CheckPlan(const Plan& plan);

// Metrics of type-checked steps (call CheckSteps first); cost_us under `cost_model`.
Metrics ComputeMetrics(const Mesh& mesh, const DistType& source, const std::vector<Step>& steps,
                       const CostModel& cost_model = CostModel());
// The same with lower_bound_bytes_total as given: it depends on the endpoints only, and
// LowerBoundBytesTotal is a pass over the devices, so a caller pricing several plans between
// the same two types (or the same plan on a refinement of the mesh) computes it once.
Metrics ComputeMetrics(const Mesh& mesh, const DistType& source, const std::vector<Step>& steps,
                       const CostModel& cost_model, int64_t lower_bound_bytes_total);

// Sum over devices of the target bytes the device does not already hold in `source`:
// elements of its target block outside its source block. When a partial axis of size > 1 of
// the source is not partial in the target, every device needs at least one incoming value per
// target element, so the bound is the sum of target local bytes. Both types valid on mesh.
int64_t LowerBoundBytesTotal(const Mesh& mesh, const DistType& source, const DistType& target);

// JSON of DESIGN §3: {"mesh","from","to","strategy","steps":[{"op","mesh_axes",<attrs>,
// "type"}],"metrics":{...}} on one line.
std::string PlanToJson(const Plan& plan);
// Reads PlanToJson's format back (metrics are recomputed under `cost_model`, not trusted; the
// result's cost_model is `cost_model`). InvalidArgument naming the field that is missing or
// malformed, the step that does not type-check, or an axis of `cost_model` the mesh lacks.
absl::StatusOr<Plan> PlanFromJson(std::string_view json, const CostModel& cost_model = CostModel());

}  // namespace reshard

#endif  // RESHARD_TYPESYS_PLAN_H_
