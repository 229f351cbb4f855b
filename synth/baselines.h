// baselines.h — step builders of the baseline and point-to-point strategies (internal).
//
// Used by Synthesize (synth/synthesize.h), which validates inputs, prices and checks the
// plans; docs/baselines.md says what each baseline imitates and why.
//
//   std::vector<Step> steps = internal::GspmdSteps(mesh, from, to);
//
// Every function requires CheckReshardable(mesh, from, to) to hold and returns steps that
// type-check and end at `to` (a violation aborts: it is a bug here).
#ifndef RESHARD_SYNTH_BASELINES_H_
#define RESHARD_SYNTH_BASELINES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// The all_to_all_v that takes `in` to `out` (same element type, global shape and partial
// axes; both valid) receiving exactly the elements each device lacks: for every device t
// and every block of `in` that meets t's block of `out`, one box — a local copy from t's own
// buffer when the block is t's own, otherwise a transfer from the holder of that block that
// agrees with t on every mesh axis `in` does not shard (so it has t's summand and, with
// `cost_model`, the cheapest link among such holders is not needed: those axes are equal).
// Types with sub-axes are exchanged on the refinement they need (OnWholeAxes).
Collective DirectExchange(const Mesh& mesh, const DistType& in, const DistType& out);

namespace internal {

// XLA GSPMD's resharding patterns (docs/baselines.md).
std::vector<Step> GspmdSteps(const Mesh& mesh, const DistType& from, const DistType& to);
// PyTorch DTensor's greedy per-mesh-axis redistribute (docs/baselines.md).
std::vector<Step> GreedySteps(const Mesh& mesh, const DistType& from, const DistType& to);
// Number of boxes (transfers, local copies included) DirectExchange(mesh, in, out) builds,
// computed per dimension without building them: for each device, the product over dimensions
// of the number of `in` blocks its `out` block meets. Saturates at INT64_MAX.
int64_t DirectTransferCount(const Mesh& mesh, const DistType& in, const DistType& out);
// all_reduce of the partial axes `to` drops (if any), then DirectExchange.
std::vector<Step> DirectSteps(const Mesh& mesh, const DistType& from, const DistType& to);

// An imitation of OpenXLA Shardy's reshard-to-collectives pass with sub-axes
// (docs/baselines.md): partial sums `to` drops are reduced first (reduce_scatter where the
// reduced axes are the next axes of a target dimension, else one all_reduce); then, on the
// prime-factor refinement of `mesh` (every axis split into prime-sized sub-axes), at most two
// rounds of all_slice -> collective_permute -> all_to_all (in-order targets, then any) ->
// all_gather, each placing whole sub-axes per Shardy's capacity rules. When the rounds leave
// the target unreached (divisibility: Shardy would pad), the remaining dimensions are
// gathered and sliced, and `*fell_back` (if given) is set to true. Not a Strategy (the
// strategy list is a CLI contract); used by reshard-bench and tests. The steps are canonical
// on `mesh` (sub-axes where a collective acts on part of an axis) and end at
// Canonicalize(mesh, to). Requires CheckReshardable(mesh, from, to); InvalidArgument when the
// sub-axes `from` and `to` name do not nest (AxisRefinement::Create). `paired_permutes` false
// leaves the permutes without source_target_pairs (for a caller that prices steps from their
// types and pairs the plan it keeps).
absl::StatusOr<std::vector<Step>> ShardySteps(const Mesh& mesh, const DistType& from,
                                              const DistType& to, bool* fell_back = nullptr,
                                              bool paired_permutes = true);

}  // namespace internal
}  // namespace reshard

#endif  // RESHARD_SYNTH_BASELINES_H_
