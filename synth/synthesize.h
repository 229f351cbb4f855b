// synthesize.h — redistribution plan synthesis.
//
//   reshard::SynthesisOptions options;                 // strategy normal by default
//   absl::StatusOr<reshard::Plan> plan = reshard::Synthesize(mesh, from, to, options);
//   // plan->steps: all_slice... ; all_to_all / collective_permute ... ; all_gather...
//
// Every plan returned type-checks, ends at `to`, and carries its metrics. Strategy `normal`
// never exceeds max(local bytes of from, local bytes of to) at any step.
//
// Thread safety: Synthesize keeps no state between calls and only reads its arguments, so
// threads may call it at once, on shared or separate arguments, and get what one thread would
// (tests/concurrency_test.cc, also run under ThreadSanitizer). The same holds for the rest of
// typesys/, interp/ and synth/ (CheckPlan, RunPlan, PlanToJson, ...).
#ifndef RESHARD_SYNTH_SYNTHESIZE_H_
#define RESHARD_SYNTH_SYNTHESIZE_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

enum class Strategy {
  // The paper's valley normal form: reductions and slices, then all_to_alls and permutes,
  // then gathers. Memory-bounded. When divisibility leaves no valley plan, the exhaustive
  // search's plan (still within the bound, but possibly falling and rising more than once;
  // ResourceExhausted when that search gives up).
  // Under the time objective with a cost model whose axes differ, the valley plan is then the
  // incumbent of a bounded exhaustive search (a millisecond of work), whose plan, when it
  // finds a cheaper one, need not be a valley either (docs/synthesis.md).
  kNormal,
  // Reference baseline: all_reduce the partial axes to be removed, all_gather every dimension
  // to full size, then all_slice to the target. Not memory-bounded.
  kNaive,
  // Exact A* search over distributed types (synth/search.h) minimising modeled time under
  // SynthesisOptions::cost_model, then total bytes, within the memory bound, on whole axes and
  // then on the prime-factor refinement (sub-axes; docs/sub_axes.md). ResourceExhausted when
  // the search on whole axes gives up. Plan::optimality says what was proven: kProven, or
  // kWholeAxesOnly when the search on the refinement gave up (the plan is then the cheapest
  // on whole axes, and no costlier than `normal`'s; where no whole-axis plan exists it is
  // `normal`'s, and ResourceExhausted when `normal` has none either).
  kOptimal,
  // Baseline imitating XLA's GSPMD resharding (docs/baselines.md): permute if only device
  // order differs, all_to_alls for dimension swaps, slices/gathers for refinements, otherwise
  // full rematerialisation. Not memory-bounded.
  kGspmd,
  // Baseline imitating PyTorch DTensor's default greedy redistribute (docs/baselines.md):
  // per mesh axis in mesh order, replicating first on nested/misaligned shardings. Not
  // memory-bounded.
  kGreedy,
  // One all_to_all_v in which each device receives exactly the target elements it lacks
  // (after an all_reduce when `from` has partial axes `to` drops). Bytes == lower bound for
  // non-reducing cases; peak = source + target local bytes (not memory-bounded).
  kDirect,
  // The cheaper (modeled time) of `normal` and `direct`. Memory: normal's bound, or
  // source + target local bytes when direct wins.
  kAuto,
};

// "normal", "naive", "optimal", "gspmd", "greedy", "direct", "auto".
std::string_view StrategyName(Strategy strategy);
// Every strategy, in the order above.
std::span<const Strategy> AllStrategies();
// True for strategies whose plans never exceed max(LocalBytes(from), LocalBytes(to)):
// normal and optimal.
bool IsMemoryBounded(Strategy strategy);
// InvalidArgument listing the known strategies.
absl::StatusOr<Strategy> ParseStrategy(std::string_view name);

// What `normal`, `optimal` and `auto` minimise.
enum class Objective {
  // Modeled time under SynthesisOptions::cost_model, then total bytes received.
  kModeledTime,
  // Total bytes received (the paper's objective), then fewer steps; cost_model still prices
  // the plan and picks permute pairs.
  kBytes,
};

// "time" (kModeledTime) and "bytes" (kBytes).
std::string_view ObjectiveName(Objective objective);
// InvalidArgument listing the known objectives.
absl::StatusOr<Objective> ParseObjective(std::string_view name);

struct SynthesisOptions {
  Strategy strategy = Strategy::kNormal;
  Objective objective = Objective::kModeledTime;
  // Prices steps (Metrics::cost_us), picks permute pairs, and is what `optimal` minimises.
  CostModel cost_model;
  // `optimal` gives up (ResourceExhausted) after settling this many states.
  int64_t max_states = 1000000;
  // Whether `normal`, `optimal` and `auto` may split mesh axes into sub-axes (typesys/
  // sub_axis.h): they also synthesize on the prime-factor refinement of the mesh and keep the
  // better plan under `objective`. false restricts them to the pieces `from` and `to` name
  // (whole axes when they name none), as the other strategies always are.
  bool sub_axes = true;
};

// Synthesizes a plan from `from` to `to` on `mesh`. Deterministic. `normal`, `optimal`,
// `direct` and `auto` search the mesh without its size-1 axes and lift the plan back (same
// metrics; where the size-1 axes of the last type differ from `to`'s, a permute without pairs
// renames them); the baselines plan on the axes as written.
// InvalidArgument: a type is not valid on the mesh, the element types or global shapes differ,
// `to` has a partial axis that `from` does not have (no collective creates a pending sum), the
// sub-axes the types name do not nest (typesys/sub_axis.h), or the cost model names an axis
// the mesh lacks or holds a cost out of range (CheckCostModel).
// NotFound: no plan in the collective vocabulary stays within the memory bound (the message
// says why, e.g. which axes cannot be moved).
// ResourceExhausted: a search spent its budget before it could answer: `optimal`'s (max_states
// or its work budget; see kOptimal), `normal`'s exhaustive search where no valley plan exists,
// or `direct`'s exchange would exceed its transfer limit on a very large mesh.
absl::StatusOr<Plan> Synthesize(const Mesh& mesh, const DistType& from, const DistType& to,
                                const SynthesisOptions& options = {});

}  // namespace reshard

#endif  // RESHARD_SYNTH_SYNTHESIZE_H_
