// synthesize.h — redistribution plan synthesis.
//
//   reshard::SynthesisOptions options;                 // strategy normal by default
//   absl::StatusOr<reshard::Plan> plan = reshard::Synthesize(mesh, from, to, options);
//   // plan->steps: all_slice... ; all_to_all / collective_permute ... ; all_gather...
//
// Every plan returned type-checks, ends at `to`, and carries its metrics. Strategy `normal`
// never exceeds max(local bytes of from, local bytes of to) at any step.
#ifndef RESHARD_SYNTH_SYNTHESIZE_H_
#define RESHARD_SYNTH_SYNTHESIZE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

enum class Strategy {
  // The paper's valley normal form: reductions and slices, then all_to_alls and permutes,
  // then gathers. Memory-bounded. When divisibility leaves no valley plan, the exhaustive
  // search's plan (still within the bound, but possibly falling and rising more than once).
  kNormal,
  // Reference baseline: all_reduce the partial axes to be removed, all_gather every dimension
  // to full size, then all_slice to the target. Not memory-bounded.
  kNaive,
};

// "normal", "naive".
std::string_view StrategyName(Strategy strategy);
// InvalidArgument listing the known strategies.
absl::StatusOr<Strategy> ParseStrategy(std::string_view name);

struct SynthesisOptions {
  Strategy strategy = Strategy::kNormal;
};

// Synthesizes a plan from `from` to `to` on `mesh`. Deterministic.
// InvalidArgument: a type is not valid on the mesh, the element types or global shapes differ,
// or `to` has a partial axis that `from` does not have (no collective creates a pending sum).
// NotFound: no plan in the collective vocabulary stays within the memory bound (the message
// says why, e.g. which axes cannot be moved).
absl::StatusOr<Plan> Synthesize(const Mesh& mesh, const DistType& from, const DistType& to,
                                const SynthesisOptions& options = {});

}  // namespace reshard

#endif  // RESHARD_SYNTH_SYNTHESIZE_H_
