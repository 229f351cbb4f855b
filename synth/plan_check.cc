// plan_check.cc — CheckSynthesizedPlan (see plan_check.h).

#include "synth/plan_check.h"

#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "synth/placement.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/sub_axis.h"

namespace reshard::internal {
namespace {

// Every device's placement key for `type` (KeyWeights), in id order. Two types with the same
// local shape and partial axes have the same radices, so their keys agree exactly where block
// and summand agree.
std::vector<int64_t> Keys(const Mesh& mesh, const DistType& type) {
  const int k = mesh.num_axes();
  absl::InlinedVector<int64_t, 8> weight(k), size(k);
  KeyWeights(mesh, type, weight.data());
  for (int i = 0; i < k; ++i) size[i] = mesh.axes()[i].size;
  std::vector<int64_t> keys(mesh.num_devices());
  RowMajorKeys(size, weight.data(), keys.data());
  return keys;
}

// CheckPermute's verdict (same conditions) with placement keys.
bool PermuteRealises(const Mesh& mesh, const DistType& in, const Collective& op,
                     const DistType& out) {
  if (op.kind != CollectiveKind::kCollectivePermute) return false;
  if (!CheckCollectiveShape(mesh, op).ok()) return false;  // `out` is validated by the caller.
  if (in.element_type != out.element_type || in.rank() != out.rank()) return false;
  for (int i = 0; i < in.rank(); ++i) {
    if (in.dims[i].size != out.dims[i].size) return false;
  }
  if (PartialInMeshOrder(mesh, in) != PartialInMeshOrder(mesh, out)) return false;
  if (!SameLocalShape(mesh, in, out)) return false;
  const std::vector<int64_t> key_in = Keys(mesh, in);
  const std::vector<int64_t> key_out = Keys(mesh, out);
  const int64_t n = mesh.num_devices();
  std::vector<int64_t> source_of(n);
  for (int64_t d = 0; d < n; ++d) source_of[d] = d;
  for (const auto& [s, t] : op.source_target_pairs) source_of[t] = s;
  for (int64_t t = 0; t < n; ++t) {
    if (key_in[source_of[t]] != key_out[t]) return false;
  }
  return true;
}

// CheckSynthesizedPlan on a mesh without sub-axis references: `mesh` is plan.mesh, or
// `refinement`'s refined mesh, onto which every type and op is then refined as the walk
// reaches it (rather than building a refined Plan: its mesh, cost model and permute pairs
// would be copied only to be read once).
absl::Status CheckOn(const Mesh& mesh, const Plan& plan, const AxisRefinement* refinement) {
  // Without a refinement the plan's own types are read in place; with one, `held[k]` holds
  // refined copies (the current type and the step's).
  DistType held[2];
  auto on_mesh = [&](const DistType& type, DistType& storage) -> const DistType& {
    if (refinement == nullptr) return type;
    storage = refinement->Refine(type);
    return storage;
  };
  const DistType* current = &on_mesh(plan.source, held[0]);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const DistType& type = on_mesh(step.type, held[(i + 1) % 2]);
    // A permute names no axes: its pairs are read where they are.
    const bool renamed = refinement != nullptr && !step.op.mesh_axes.empty();
    const Collective refined_op = renamed ? refinement->Refine(step.op) : Collective();
    const Collective& op = renamed ? refined_op : step.op;
    absl::Status s = Validate(mesh, type);
    if (s.ok()) {
      if (op.kind == CollectiveKind::kCollectivePermute) {
        // The precise message, only when the fast check fails.
        if (!PermuteRealises(mesh, *current, op, type)) {
          s = CheckPermute(mesh, *current, op, type);
          if (s.ok()) s = absl::InternalError("fast permute check disagrees with CheckPermute");
        }
      } else {
        s = CheckStepOnMeshAxes(mesh, *current, op, type);
      }
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("step ", i + 1, " (", ToString(op), "): ", s.message()));
    }
    current = &type;
  }
  // Refinement is a function: ends equal as written are equal refined.
  if (plan.result() == plan.target) return absl::OkStatus();
  DistType target_storage;
  const DistType& target = on_mesh(plan.target, target_storage);
  if (!(*current == target)) {
    return absl::InvalidArgumentError(absl::StrCat("plan ends at ", ToString(*current),
                                                   ", not at the target ", ToString(target)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSynthesizedPlan(const Plan& plan, const AxisRefinement* finest) {
  if (!HasSubAxes(plan.mesh, plan.source, plan.steps) && !HasSubAxes(plan.mesh, plan.target)) {
    return CheckOn(plan.mesh, plan, nullptr);
  }
  // Placement keys are per mesh axis: check on a refinement (same devices and buffers).
  if (finest != nullptr && finest->mesh() == plan.mesh) {
    return CheckOn(finest->refined(), plan, finest);
  }
  absl::StatusOr<AxisRefinement> refinement = AxisRefinement::Create(plan.mesh, SubAxisRefs(plan));
  if (!refinement.ok()) return refinement.status();
  return CheckOn(refinement->refined(), plan, &*refinement);
}

}  // namespace reshard::internal
