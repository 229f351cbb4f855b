// search.h — exhaustive, memory-bounded plan search over distributed types.
//
// SearchPlan runs Dijkstra over every valid type of a fixed element type and global shape,
// with one edge per collective instance (all_slice, all_gather, all_to_all, all_reduce,
// reduce_scatter, collective_permute), and returns a plan with the fewest total bytes
// received among plans whose every type fits in `max_local_bytes` per device. It is the
// fallback of strategy `normal` when the constructive path is blocked by divisibility, the
// middle phase of `normal` (restricted to all_to_all and permutes), and a completeness
// oracle for tests: when it reports NotFound, no memory-bounded plan exists in the
// vocabulary.
//
//   SearchOptions options;
//   options.max_local_bytes = std::max(LocalBytes(mesh, from), LocalBytes(mesh, to));
//   absl::StatusOr<std::vector<Step>> steps = SearchPlan(mesh, from, to, options);
//
// Edges from a type s (each only when the result is valid on the mesh):
//   all_slice       every ordered tuple of axes unused in s, onto every dimension;
//   all_gather      every non-empty suffix of every dimension;
//   all_to_all      every non-empty suffix of dimension i onto every dimension j != i;
//   all_reduce      every non-empty subset (in mesh order) of s's partial axes that are not
//                   partial in `to` (reducing those would be a dead end);
//   reduce_scatter  every ordered tuple of those partial axes, onto every dimension;
//   permute         every other valid type with s's partial axes and local shape (the
//                   complete set of types a single collective_permute can reach), with the
//                   minimal pairs of MinimalPermute; not from a type whose best path ends
//                   with a permute, in bytes mode or under a uniform model (one permute
//                   moves at most the devices two consecutive ones move, and costs one
//                   alpha: two in a row are never needed).
// Size-1 axes are only placed (sliced, or put into a permute's result) when `from` or `to`
// uses them: they never change a device's block, so elsewhere they only multiply states.
// Edge cost is the total bytes received over all devices (DESIGN §2 table); ties go to fewer
// steps, then to discovery order, so the result is deterministic.
//
// With SearchOptions::bytes_bound, the search is A* with the byte lower bound as heuristic
// (same optimum, fewer states settled).
//
// With SearchOptions::cost_model set, the edge cost is the modeled time instead
// (CostModel::StepCostUs; permutes priced with the pairs MinimalPermute picks under that
// model), ties broken by total bytes, then steps, and the search is A* with an admissible,
// consistent heuristic (see TimeLowerBoundUs): this is strategy `optimal`.
//
// Edges that could only lead past max_cost / max_cost_us are not built: a permute class none
// of whose members can stay within them (internal::PermuteClassOutOfBounds), and in middles a
// member whose order bound puts it out (internal::MiddleGrowthBound::Order). Such edges would
// be dropped or never queued, so results do not change; work and generated counts do.
//
// The search runs on compact types (synth/compact_search.h) whenever they can encode the
// types; internal::SearchPlanOnDistTypes is the same search on DistTypes, the fallback and the
// reference it is tested against.
#ifndef RESHARD_SYNTH_SEARCH_H_
#define RESHARD_SYNTH_SEARCH_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// Permute classes (the types one permute reaches) kept across the searches of one caller,
// e.g. the middle searches of one Synthesize call, which enumerate the same class again per
// candidate. Only for searches on the same mesh, element type and global shape.
struct PermuteClassCache {
  absl::flat_hash_map<std::string, std::shared_ptr<const std::vector<DistType>>> classes;
  // Per (class, source type): MovedDevices to each member and its work (-1: not computed).
  absl::flat_hash_map<std::string, std::vector<std::pair<int64_t, int64_t>>> moved;
};

struct SearchOptions {
  // States whose local bytes exceed this are pruned (never entered).
  int64_t max_local_bytes = 0;
  // The search gives up after settling this many states.
  int64_t max_states = 200000;
  // Paths whose total bytes received would exceed this are pruned (a known plan's cost
  // makes the search a branch-and-bound; NotFound then means "nothing cheaper or equal").
  int64_t max_cost = std::numeric_limits<int64_t>::max();
  // Which collective kinds may be used. `normal` runs its middle phase with only
  // all_to_all and collective_permute enabled.
  bool allow_all_slice = true;
  bool allow_all_gather = true;
  bool allow_all_to_all = true;
  bool allow_all_reduce = true;
  bool allow_reduce_scatter = true;
  bool allow_permute = true;
  // When set (not owned; must outlive the call), minimise modeled time under this model, then
  // total bytes; max_cost then still bounds total bytes and max_cost_us bounds time.
  const CostModel* cost_model = nullptr;
  double max_cost_us = std::numeric_limits<double>::infinity();
  // Time mode only: guide the search with TimeLowerBoundUs (A*). Off = plain Dijkstra; the
  // result's cost is the same, only the number of settled states differs.
  bool use_heuristic = true;
  // Time mode with use_heuristic, under a model whose axes differ in bandwidth: add the slice
  // bound (synth/search_bounds.h) to the heuristic. It makes each new state's heuristic
  // costlier (a count per dimension and slice) for a tighter bound; all of Synthesize's
  // searches use it (normal's middle searches since 2026-11-27: on random 4-axis cases under a
  // skewed model their branch and bound prunes sooner, docs/synthesis.md).
  bool slice_bound = true;
  // Bytes mode only: bound the rest of every path by its total bytes received
  // (BytesLowerBound from each state to the target, consistent like the time bound): A* on
  // bytes, and branch and bound against max_cost. It costs a pass over the devices per new
  // state; `optimal` and normal's fallback search turn it on, normal's middle searches (which
  // synth/compact_search.cc mirrors) leave it off. In time mode it does not order the queue (it
  // would only reorder equally fast paths) but prunes: against max_cost, and against the incumbent
  // among paths as fast as it (SearchOptions::incumbent).
  bool bytes_bound = false;
  // The cost of a plan the caller already holds (e.g. normal's, within the same bound). The
  // search stops with NotFound as soon as the cheapest open path cannot end strictly below it
  // ((modeled µs, bytes) lexicographically in time mode, with a relative tolerance of 1e-9
  // on µs; bytes in bytes mode): with the consistent bounds this proves the held plan optimal
  // without settling the plateau of equally cheap types (e.g. every order of free slices).
  struct Incumbent {
    double us = 0;
    int64_t bytes = 0;
  };
  std::optional<Incumbent> incumbent;
  // The search gives up (ResourceExhausted) once its work exceeds this, or when a permute
  // class (the types one permute reaches) has more than MaxPermuteClassSize (below) members.
  // Units are meant as about a nanosecond (measured 0.8-5 ns; docs/synthesis.md): a device
  // visited by a per-device computation (the heuristic and exact permute pricing visit every
  // device) is 1, a type built (an edge, a permute class member) 256, a step of counting a
  // permute's moved devices 16. Together with max_states this bounds the search's time and
  // memory on any mesh up to kMaxDevices devices and on any number of axes. SearchPlan gives
  // the search on DistTypes, where it stands in for the compact one, an eighth of it.
  int64_t max_work = int64_t{1} << 30;
  // Units per visit of the heuristic's walk over device coordinates (internal::Lacking::
  // visits), charged where they exceed the nominal one unit per device. 0 keeps the nominal
  // charge, on which the budgets of `normal`'s searches were tuned; `optimal` sets it so that
  // its budget stays about the time it stands for on meshes refined into many atoms, whose
  // walks cost several times the devices (docs/synthesis.md, "Time of `optimal` on large
  // meshes"). The compact search only.
  int64_t walk_visit_work = 0;
  // Whether permute steps of the result carry their pairs (MinimalPermute under cost_model).
  // Callers that re-pair permutes anyway (Synthesize does) turn it off: building pairs visits
  // every device.
  bool fill_permute_pairs = true;
  // Whether NotFound and ResourceExhausted messages name the two types. Callers that only read
  // the status code (`normal`'s middle searches, most of which end NotFound) turn it off:
  // printing the types was ~4 % of the slowest 3-axis suite call. The messages then say "the
  // source" and "the target".
  bool describe_failures = true;
  // When set (not owned), permute classes are looked up here first and stored here. The
  // work charged is the same as enumerating them, so results do not depend on the cache.
  PermuteClassCache* class_cache = nullptr;
};

// What a search did, for callers that budget several searches.
struct SearchStats {
  int64_t states_settled = 0;
  int64_t states_generated = 0;  // Distinct types entered into the queue.
  int64_t work = 0;              // Units of SearchOptions::max_work spent.
};

// Finds a cheapest plan (total bytes received) from `from` to `to` within the bound.
// Returns the steps (empty when from == to). The last step's type is `to` exactly.
// InvalidArgument: a type is invalid on mesh, element types or global shapes differ, or `to`
// has a partial axis `from` lacks. NotFound: the search space was exhausted without
// reaching `to` (no plan exists with the enabled collectives under the bound; `from` itself
// above the bound also gives NotFound). ResourceExhausted: max_states were settled, or
// max_work spent, first (the message says which).
// When `stats` is not null it receives the search's statistics. Types with sub-axes are
// searched on the coarsest refinement they need (InvalidArgument when their references do not
// nest) and the steps returned canonical on `mesh`.
absl::StatusOr<std::vector<Step>> SearchPlan(const Mesh& mesh, const DistType& from,
                                             const DistType& to, const SearchOptions& options,
                                             SearchStats* stats = nullptr);

namespace internal {
// SearchPlan on types stored as DistTypes: what SearchPlan runs when the types cannot be
// encoded compactly (synth/compact_search.h) or options.class_cache is set, and the reference
// the compact search is tested against. Same contract as SearchPlan.
absl::StatusOr<std::vector<Step>> SearchPlanOnDistTypes(const Mesh& mesh, const DistType& from,
                                                        const DistType& to,
                                                        const SearchOptions& options,
                                                        SearchStats* stats = nullptr);
}  // namespace internal

// The collective_permute from `in` to `out` (same element type, global shape, partial axes
// and local shape; both valid) that moves the fewest bytes: every device that already holds
// the block and summand `out` assigns it keeps it (no pair), the others are matched to
// holders of what they need in increasing id order. Pairs are sorted by source. Aborts when
// the types are not permute-compatible (internal invariant: callers check the local shape).
// With `cost_model`, each device that must change takes, among the remaining holders of
// what it needs, the one behind the cheapest link (CostModel::Between), so pairs stay on fast
// axes where the types allow; the byte count is the same. Placements held by more than 64
// devices are paired in id order even with a model (the greedy is quadratic per placement).
// O(devices) time, no per-device allocation (synth/placement.cc). Types with sub-axes are
// paired on the refinement they need (OnWholeAxes, typesys/sub_axis.h).
Collective MinimalPermute(const Mesh& mesh, const DistType& in, const DistType& out,
                          const CostModel* cost_model = nullptr);

// A lower bound on the modeled time of any plan from `from` to `to` (non-negative; 0 when
// from == to): every device must receive the target elements it lacks (all of its target
// block when a reduction of a partial axis of size > 1 is pending), and some device at least
// the average of BytesLowerBound over the devices (larger while a reduction over >= 3
// summands is pending); each step charges at least its largest per-device receive over the
// fastest bandwidth, and a plan that receives anything pays at least the smallest alpha once.
// Admissible and consistent, so A* with it finds the optimum. Sub-axes: as BytesLowerBound.
double TimeLowerBoundUs(const Mesh& mesh, const CostModel& model, const DistType& from,
                        const DistType& to);

// A lower bound on the total bytes received (DESIGN §2 table) by any plan from `from` to
// `to`: LowerBoundBytesTotal, sharpened when a reduction over K >= 3 summands is pending to
// also count the K - 1 merges every reduced value needs (N (element, target summand) classes,
// each needing K - 2 more receives than one per target holder). Consistent: no step lowers it
// by more than the bytes it receives, so SearchOptions::bytes_bound's A* stays exact. Like
// TimeLowerBoundUs, for valid types of one shape; sub-axis references are refined internally
// and must nest (OnWholeAxes, typesys/sub_axis.h).
int64_t BytesLowerBound(const Mesh& mesh, const DistType& from, const DistType& to);

// The preconditions shared by Synthesize and SearchPlan (see their InvalidArgument cases),
// for types whose axes are whole axes of `mesh` (it compares partial axes by name).
absl::Status CheckReshardable(const Mesh& mesh, const DistType& from, const DistType& to);

// Validate on both types, InvalidArgument prefixed "source type: " or "target type: ".
absl::Status ValidateEnds(const Mesh& mesh, const DistType& from, const DistType& to);

// The largest permute class (types one permute reaches) a search enumerates; beyond it the
// search gives up as if its work budget were spent (which also bounds its memory). Bytes mode
// admits the 8! orders of 8 size-2 atoms: its byte bound prunes most members of such a class.
// In time mode that bound is too weak, and expanding states of classes that large only burns
// the budget (seconds on 256 devices), so it stops earlier.
inline size_t MaxPermuteClassSize(bool time_mode) {
  return time_mode ? size_t{1} << 14 : size_t{1} << 16;
}

// Work units (SearchOptions::max_work) charged for pricing one permute edge exactly under a
// non-uniform cost model: MinimalPermute walks the devices, and pairs the holders of each
// placement held by at most 64 devices by a greedy that compares every needer with every
// remaining holder (placement.cc's kGreedyPairingLimit), each comparison a walk over the mesh
// axes; then the step is priced over its pairs. `holders`: the devices that hold each
// placement of the permute's input (the product of the sizes of the axes it leaves
// replicated). Measured at 0.12-0.69 ns per unit (docs/synthesis.md, "Bounded work on large
// meshes").
inline int64_t PermutePricingWork(const Mesh& mesh, int64_t holders) {
  return mesh.num_devices() * (std::min<int64_t>(holders, 64) + 8) * mesh.num_axes();
}

}  // namespace reshard

#endif  // RESHARD_SYNTH_SEARCH_H_
