// synthesize.cc — strategies `normal` (valley normal form) and `naive` (gather, then slice).
//
// `normal` builds a valley: a descent (all_slice / reduce_scatter, then all_reduce) from the
// source to a type X, a constant-size middle (all_to_all / collective_permute) from X to a
// pre-gather type Y, and an ascent (all_gather) from Y to the target. X and Y have the same
// mesh axes in their dimensions and the same partial axes, hence the same local size, and
// LocalBytes(X) <= LocalBytes(from), LocalBytes(Y) <= LocalBytes(to): every step stays within
// max(LocalBytes(from), LocalBytes(to)). A few placements of X and Y are tried and the plan
// with the fewest bytes wins. When divisibility blocks every placement, an exhaustive
// memory-bounded search (synth/search.h) decides. Under a model whose axes differ in cost, a
// bounded branch and bound from the valley plan ends the strategy (kNormalSearchWork).
// docs/synthesis.md has the full story.

#include "synth/synthesize.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "synth/baselines.h"
#include "synth/compact_search.h"
#include "synth/placement.h"
#include "synth/plan_check.h"
#include "synth/pure_move.h"
#include "synth/search.h"
#include "synth/search_bounds.h"
#include "synth/step_builder.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

// States the middle search may settle per candidate; beyond it the candidate is dropped.
constexpr int64_t kMiddleStates = 4000;
// States all middle searches of one Synthesize call may settle together: candidates are
// tried most promising first, and once this is spent the rest are skipped, which bounds
// latency on meshes with many axes.
constexpr int64_t kMiddleBudget = 12000;
// States the fallback search may settle before `normal` gives up.
constexpr int64_t kFallbackStates = 200000;
// Work units (SearchOptions::max_work: edges, enumerated types, devices visited) all middle
// searches of one call may spend together, and the fallback search's and `optimal`'s own
// budgets. They bound the time of a call on any mesh: on small meshes the state caps bind
// first; on meshes with ~10^6 devices, where one pass over the devices costs milliseconds,
// these do.
constexpr int64_t kMiddleWork = int64_t{1} << 26;
// The same for normal's pass on the prime-factor refinement, which only has to beat the plan in
// hand: a quarter, of which one middle search may spend at most kRefinedSearchWork (about a
// millisecond). Searches on many atoms that run longer rarely pay: on random 3- and 4-axis
// cases (docs/benchmarks.md, "Latency cliffs") the cap took the slowest calls from ~18 and
// ~20 ms to ~3.6 and ~3.0 ms at 0.9996x and 1.0013x the modeled cost in geometric mean (a
// search cut short leaves work to later candidates, so some plans get cheaper), and bench
// suite case 26 keeps its whole-axis plan (88.3 instead of 76.9 µs: its refined middle
// search needs ~11 M units).
constexpr int64_t kRefinedMiddleWork = int64_t{1} << 24;
constexpr int64_t kRefinedSearchWork = int64_t{1} << 20;
// On meshes of more devices than this each middle search of the whole-axis pass gets the same
// cap, kRefinedSearchWork. Every state's heuristic walks the devices (one unit each), so from
// here on the cap binds before kMiddleStates does, and one search that runs to the shared
// kMiddleWork leaves nothing to the candidates after it. On random meshes of 4-8 axes
// (docs/benchmarks.md, "Latency cliffs"): beyond 4 096 devices the cap made 17 of 320 plans
// cheaper (one 8.2x) and 2 costlier (worst 1.63x), and took the p90 from 116-157 ms to
// 29-42 ms; on 257-4 096 devices 9 of 480 cheaper and 2 costlier (worst 1.14x), p99 37 ->
// 12 ms. On 256 devices and fewer it is left off: there it changed plans both ways (suite
// case 60, a=4,b=4,c=4,d=4, 1.66x costlier under a skewed model).
constexpr int64_t kCappedSearchDevices = 256;
// Work units charged to the middle budget per device for each unpaired permute priced exactly
// under a model whose axes differ: ShapedMiddle's in any pass, and a valley's single permute in
// a pass that searches no middle (where every valley's middle is one of the two).
// MinimalPermute and its price cost ~0.2 µs per device (~3 M instructions on 4 096 devices),
// 256 units ~0.1 µs at the searches' ~0.4 ns per unit. On 4 096 devices the refined pass's
// kRefinedMiddleWork then pays for 16 of them, which keeps the plans this pass improves among
// the production-shaped cases of docs/benchmarks.md (at 512 one of them costs 164.57 instead
// of 159.82 µs).
constexpr int64_t kPermutePricingWork = 256;
// Under a model whose axes differ in cost, `normal` ends with `optimal`'s branch and bound on
// whole axes, its plan as the incumbent, within this work (about a millisecond); when the
// search gives up, normal's plan stands. Valleys cannot express what such models reward
// (e.g. gathering over a fast axis rather than permuting over a slow one), and most of
// what they miss is found early: on the skewed survey 2^18 closes most of the gap, 2^20 all
// that 2^22 does.
constexpr int64_t kNormalSearchWork = int64_t{1} << 20;
constexpr int64_t kFallbackWork = int64_t{1} << 28;
constexpr int64_t kOptimalWork = int64_t{1} << 30;
// The exhaustive searches' charge per visit of their heuristic's walk
// (SearchOptions::walk_visit_work), `optimal`'s and `normal`'s fallback: a visit took ~10 ns
// on x=8,y=32,z=2,w=8 refined into atoms, where the nominal unit per device undercharged the
// walks ~6x and `optimal` ran ~7 s on its budget. The fallback, charged nominally, ran ~1.1 s
// on 8-axis meshes of ~10^4 devices (~1 100 visits of ~130 instructions per walk on 4 608
// devices) and then usually gave up (docs/benchmarks.md, "The fallback search on many axes").
constexpr int64_t kExactWalkVisitWork = 8;
// `direct` refuses plans with more all_to_all_v boxes than this: every box is a heap-allocated
// Transfer (~150 bytes), and checking and pricing the step visit each one.
constexpr int64_t kMaxDirectTransfers = int64_t{1} << 18;

// ShapedMiddle's bridged form: the suffix moves it makes from each end of a middle, the types
// each side may reach, and the joins it prices. One move a side joins the middles of the
// many-axis cases whose searches gave up (docs/synthesis.md, "Moves from both ends, joined
// by one permute"); a second is made where the first joins nothing, and on a 768-device
// rank-4 case reaches ~400 types a side.
constexpr int kBridgeDepth = 2;
constexpr size_t kBridgeStates = 512;
constexpr size_t kBridgeJoins = 64;

int64_t LocalDimSize(const Mesh& mesh, const Dim& dim) {
  return dim.size / mesh.GroupSize(dim.axes);
}

// The dimension a group of `size` devices should be appended to: `preferred` dims first (in
// order), then the others by decreasing local size, never `except`. nullopt when no
// dimension's local size is divisible.
std::optional<int> PickDim(const Mesh& mesh, const DistType& type, int64_t size,
                           const std::vector<int>& preferred, int except = -1) {
  for (int dim : preferred) {
    if (dim != except && LocalDimSize(mesh, type.dims[dim]) % size == 0) return dim;
  }
  std::optional<int> best;
  for (int dim = 0; dim < type.rank(); ++dim) {
    int64_t local = LocalDimSize(mesh, type.dims[dim]);
    if (dim == except || local % size != 0) continue;
    if (!best || local > LocalDimSize(mesh, type.dims[*best])) best = dim;
  }
  return best;
}

// The memory bound of `normal` and `optimal`: max(source, target) local bytes.
int64_t MemoryBoundBytes(const Mesh& mesh, const DistType& from, const DistType& to) {
  return std::max(LocalBytes(mesh, from), LocalBytes(mesh, to));
}

// The dimension whose last axis is `axis`, or -1.
int DimEndingWith(const DistType& type, const AxisName& axis) {
  for (int dim = 0; dim < type.rank(); ++dim) {
    if (!type.dims[dim].axes.empty() && type.dims[dim].axes.back() == axis) return dim;
  }
  return -1;
}

// One axis the descent adds to a dimension.
struct Append {
  AxisName axis;
  int dim = 0;
  bool scatter = false;  // reduce_scatter (axis was partial) rather than all_slice.
};

// How the descent chooses a dimension for each axis it adds.
enum class Placement {
  // Right behind the axis's predecessor in `to` when that predecessor ends a dimension (the
  // two can then travel as one all_to_all group), else the axis's dimension in `to`.
  kFollow,
  // The axis's dimension in `to`.
  kDirect,
  // A dimension whose local size must still shrink by the axis size to reach the pre-gather
  // type's local shape (the axis's dimension in `to` first), so that the middle can often be
  // a single permute, e.g. [4,4{x}] -> [4{x},4{y}] slices y onto dimension 0 and permutes.
  kShape,
};

// Where the descent puts the axes `to` uses but `from` has not split yet: new axes (sliced)
// and partial axes to be reduced (scattered), visited in `to`'s order, except those in
// `skip`. `y` is the pre-gather type (used by kShape). nullopt when divisibility leaves no
// place.
std::optional<std::vector<Append>> PlaceDescent(const Mesh& mesh, const DistType& from,
                                                const DistType& to, Placement placement,
                                                const DistType& y, const AxisList& skip) {
  DistType current = from;
  std::vector<Append> appends;
  for (int j = 0; j < to.rank(); ++j) {
    const AxisList& axes = to.dims[j].axes;
    for (size_t k = 0; k < axes.size(); ++k) {
      int use = AxisUse(from, axes[k]);
      if ((use != kUnused && use != kPartial) || ContainsAxis(skip, axes[k])) continue;
      std::vector<int> preferred;
      if (placement == Placement::kFollow && k > 0) {
        int after = DimEndingWith(current, axes[k - 1]);
        if (after >= 0) preferred.push_back(after);
      }
      if (placement == Placement::kShape) {
        int64_t size = mesh.AxisSize(axes[k]);
        auto shrinks = [&](int d) {
          int64_t have = LocalDimSize(mesh, current.dims[d]);
          int64_t want = LocalDimSize(mesh, y.dims[d]);
          return have % want == 0 && (have / want) % size == 0 && have > want;
        };
        if (shrinks(j)) preferred.push_back(j);
        for (int d = 0; d < current.rank(); ++d) {
          if (d != j && shrinks(d)) preferred.push_back(d);
        }
      }
      preferred.push_back(j);
      std::optional<int> dim = PickDim(mesh, current, mesh.AxisSize(axes[k]), preferred);
      if (!dim) return std::nullopt;
      current.dims[*dim].axes.push_back(axes[k]);
      appends.push_back(Append{axes[k], *dim, use == kPartial});
    }
  }
  return appends;
}

// The pre-gather type Y: `to` with the axes only `from` splits (G) appended, visited in
// `from`'s order, except those in `skip`. kFollow: right behind the axis's predecessor in
// `from` when that predecessor ends a dimension of Y, else the axis's dimension in `from`.
// kDirect: the axis's dimension in `from`. kShape: a dimension of Y still larger than in
// `from` by a multiple of the axis size (so the middle can be a permute, e.g.
// [4{x},4{y}] -> [4,4{x}] permutes to [4{y},4{x}] and gathers y).
std::optional<DistType> PlacePreGather(const Mesh& mesh, const DistType& from, const DistType& to,
                                       Placement placement, const AxisList& skip) {
  DistType y = to;
  for (int i = 0; i < from.rank(); ++i) {
    const AxisList& axes = from.dims[i].axes;
    for (size_t k = 0; k < axes.size(); ++k) {
      if (AxisUse(to, axes[k]) != kUnused || ContainsAxis(skip, axes[k])) continue;
      std::vector<int> preferred;
      if (placement == Placement::kFollow && k > 0) {
        int after = DimEndingWith(y, axes[k - 1]);
        if (after >= 0) preferred.push_back(after);
      }
      if (placement == Placement::kShape) {
        int64_t size = mesh.AxisSize(axes[k]);
        for (int d = 0; d < y.rank(); ++d) {
          int64_t have = LocalDimSize(mesh, y.dims[d]);
          int64_t want = LocalDimSize(mesh, from.dims[d]);
          if (have > want && have % want == 0 && (have / want) % size == 0) {
            preferred.push_back(d);
          }
        }
      }
      preferred.push_back(i);
      std::optional<int> dim = PickDim(mesh, y, mesh.AxisSize(axes[k]), preferred);
      if (!dim) return std::nullopt;
      y.dims[*dim].axes.push_back(axes[k]);
    }
  }
  return y;
}

// Axes to exchange rather than slice and gather: each new axis of `to` (one `from` neither
// splits nor sums over) is paired with the first unpaired axis of the same size that only
// `from` splits. The valley then skips both: its middle permutes let the new axis take the
// old one's place, which saves the gather of a full-size buffer, e.g. [8{x},8] -> [8{y},8].
AxisList Substitutions(const Mesh& mesh, const DistType& from, const DistType& to) {
  AxisList gathered;
  for (const Dim& dim : from.dims) {
    for (const AxisName& axis : dim.axes) {
      if (AxisUse(to, axis) == kUnused) gathered.push_back(axis);
    }
  }
  AxisList skip;
  for (const Dim& dim : to.dims) {
    for (const AxisName& axis : dim.axes) {
      if (AxisUse(from, axis) != kUnused) continue;
      for (AxisName& g : gathered) {
        if (!g.empty() && mesh.AxisSize(g) == mesh.AxisSize(axis)) {
          skip.push_back(axis);
          skip.push_back(g);
          g = AxisName();
          break;
        }
      }
    }
  }
  return skip;
}

// The skip sets the descents are placed with, in order: none, then `substitutions` (for
// Substitutions) where there are any, as the second would otherwise be the first again.
absl::InlinedVector<const AxisList*, 2> SkipSets(const AxisList& substitutions) {
  static const AxisList* const kNone = new AxisList();
  if (substitutions.empty()) return {kNone};
  return {kNone, &substitutions};
}

// `to` with each new axis n (one `from` neither splits nor sums over) replaced by the first
// unpaired partial axis p of `from` of the same size that `to` drops (neither keeps partial
// nor splits), in `to`'s order; nullopt when there is no such pair. A descent placed on it
// reduce_scatters p where n goes instead of slicing n (and all_reducing p), and the middle's
// permute lets n take p's place: x=4,y=3,z=3 [768{x},96] partial{y} -> [768{z,x},96] is a
// reduce_scatter over y onto dimension 0 and one permute, 15.7 instead of 25.4 µs.
std::optional<DistType> WithPartialSubstitutions(const Mesh& mesh, const DistType& from,
                                                 const DistType& to) {
  AxisList dropped = ToReduce(mesh, from, to);
  EraseAxesIf(dropped, [&](const AxisName& p) { return AxisUse(to, p) != kUnused; });
  DistType substituted = to;
  bool any = false;
  for (Dim& dim : substituted.dims) {
    for (AxisName& axis : dim.axes) {
      if (AxisUse(from, axis) != kUnused) continue;
      for (AxisName& p : dropped) {
        if (!p.empty() && mesh.AxisSize(p) == mesh.AxisSize(axis)) {
          axis = std::exchange(p, std::string());
          any = true;
          break;
        }
      }
    }
  }
  if (!any) return std::nullopt;
  return substituted;
}

// The same appends with every all_slice before every reduce_scatter, so reductions act on
// smaller buffers. This may change a dimension's axis order (the middle then repairs it), so
// it is one more candidate rather than a rule.
std::vector<Append> SlicesFirst(const std::vector<Append>& appends) {
  std::vector<Append> order;
  for (const Append& a : appends) {
    if (!a.scatter) order.push_back(a);
  }
  for (const Append& a : appends) {
    if (a.scatter) order.push_back(a);
  }
  return order;
}

// Emits the appends as collectives, merging runs that go to the same dimension by the same
// kind into one multi-axis op.
void EmitDescent(const std::vector<Append>& appends, StepBuilder& builder) {
  for (size_t start = 0; start < appends.size();) {
    size_t end = start;
    AxisList axes;
    while (end < appends.size() && appends[end].dim == appends[start].dim &&
           appends[end].scatter == appends[start].scatter) {
      axes.push_back(appends[end].axis);
      ++end;
    }
    int dim = appends[start].dim;
    builder.Apply(appends[start].scatter ? Collective::ReduceScatter(axes, dim)
                                         : Collective::AllSlice(axes, dim));
    start = end;
  }
}

// The gathers from the pre-gather type `y` to `to`: one multi-axis all_gather per dimension.
void EmitAscent(const DistType& to, const DistType& y, StepBuilder& builder) {
  for (int i = 0; i < to.rank(); ++i) {
    const AxisList& axes = y.dims[i].axes;
    size_t keep = to.dims[i].axes.size();
    if (axes.size() > keep) {
      builder.Apply(Collective::AllGather(AxisList(axes.begin() + keep, axes.end()), i));
    }
  }
}

// Total bytes received by `op` applied to `in` (result `out`), without visiting devices: a
// permute delivers LocalBytes(in) to each device whose placement changes, which is what its
// minimal pairs do, so permutes are priced from their types (their pairs are built once, when
// the plan is final: PairPermutes).
// `in_bytes`: LocalBytes(mesh, in).
int64_t StepBytes(const Mesh& mesh, const DistType& in, const Collective& op, const DistType& out,
                  int64_t in_bytes) {
  switch (op.kind) {
    case CollectiveKind::kCollectivePermute:
      return internal::MovedDevices(mesh, in, out) * in_bytes;
    case CollectiveKind::kAllToAllV: {
      int64_t total = 0;
      for (int64_t d = 0; d < mesh.num_devices(); ++d) total += BytesReceived(mesh, in, op, d);
      return total;
    }
    default:
      return mesh.num_devices() * BytesReceived(mesh, in, op, 0, in_bytes);
  }
}

// LocalBytes(mesh, out) for a step `op` that takes a type of `in_bytes` local bytes to `out`,
// from the typing rules where they fix it (a gather multiplies a dimension's local size by
// the group size, a slice or reduce_scatter divides it, the rest keep it): the pricing loops
// below walk a plan's types in order, and LocalBytes of each was a measurable share of a
// valley's price.
int64_t ResultBytes(const Mesh& mesh, const Collective& op, const DistType& out,
                    int64_t in_bytes) {
  int64_t bytes = in_bytes;
  switch (op.kind) {
    case CollectiveKind::kAllGather:
      bytes = in_bytes * mesh.GroupSize(op.mesh_axes);
      break;
    case CollectiveKind::kAllSlice:
    case CollectiveKind::kReduceScatter:
      bytes = in_bytes / mesh.GroupSize(op.mesh_axes);
      break;
    case CollectiveKind::kAllToAllV:
      return LocalBytes(mesh, out);
    default:
      break;
  }
#ifndef NDEBUG
  RESHARD_CHECK(bytes == LocalBytes(mesh, out)) << ToString(op) << " to " << ToString(out);
#endif
  return bytes;
}

int64_t TotalBytes(const Mesh& mesh, const DistType& from, const std::vector<Step>& steps) {
  int64_t total = 0;
  const DistType* current = &from;
  int64_t bytes = LocalBytes(mesh, from);
  for (const Step& step : steps) {
    total += StepBytes(mesh, *current, step.op, step.type, bytes);
    bytes = ResultBytes(mesh, step.op, step.type, bytes);
    current = &step.type;
  }
  return total;
}

bool HasSizeOneAxis(const Mesh& mesh) {
  return std::any_of(mesh.axes().begin(), mesh.axes().end(),
                     [](const MeshAxis& axis) { return axis.size == 1; });
}

// Modeled µs of `op` on `in` (result `out`; `in_bytes`: LocalBytes(mesh, in)). A permute
// without pairs is priced as the pairs MinimalPermute picks under `model` would be; under a
// uniform model that is alpha + B/bw whenever any device moves, with no pass over the devices.
double StepUs(const Mesh& mesh, const DistType& in, const Collective& op, const DistType& out,
              const CostModel& model, int64_t in_bytes) {
  if (op.kind != CollectiveKind::kCollectivePermute || !op.source_target_pairs.empty()) {
    return model.StepCostUs(mesh, in, op, in_bytes);
  }
  const bool uniform = model.UniformOn(mesh);
  // Under a uniform model only whether a device moves matters. On a mesh without axes of size
  // 1 it does exactly when the types differ: a device's block index in a dimension is its
  // coordinates over that dimension's axes in mixed radix, so equal placements for every
  // device mean equal axes in equal order.
  const bool moves =
      uniform && !HasSizeOneAxis(mesh) ? !(in == out) : internal::MovedDevices(mesh, in, out) > 0;
  if (!moves) return 0;
  if (uniform) {
    const AxisCost cost = model.Axis(mesh.axes()[0].name);
    return cost.alpha_us + cost.TransferUs(static_cast<double>(in_bytes));
  }
  // Where the types decide the price, no pairing is needed (MinimalPermute walks the devices:
  // ~30 M instructions on 24 576).
  if (std::optional<AxisCost> link = internal::ForcedPermuteLink(mesh, model, in, out)) {
    return link->alpha_us + link->TransferUs(static_cast<double>(in_bytes));
  }
  return model.StepCostUs(mesh, in, MinimalPermute(mesh, in, out, &model), in_bytes);
}

double StepUs(const Mesh& mesh, const DistType& in, const Collective& op, const DistType& out,
              const CostModel& model) {
  return StepUs(mesh, in, op, out, model, LocalBytes(mesh, in));
}

double CostUs(const Mesh& mesh, const DistType& from, const std::vector<Step>& steps,
              const CostModel& model) {
  double us = 0;
  const DistType* current = &from;
  int64_t bytes = LocalBytes(mesh, from);
  for (const Step& step : steps) {
    us += StepUs(mesh, *current, step.op, step.type, model, bytes);
    bytes = ResultBytes(mesh, step.op, step.type, bytes);
    current = &step.type;
  }
  return us;
}

// CostUs's terms: StepUs of each step of `steps` from `from`, in plan order.
std::vector<double> StepsUs(const Mesh& mesh, const DistType& from, const std::vector<Step>& steps,
                            const CostModel& model) {
  std::vector<double> us;
  us.reserve(steps.size());
  const DistType* current = &from;
  int64_t bytes = LocalBytes(mesh, from);
  for (const Step& step : steps) {
    us.push_back(StepUs(mesh, *current, step.op, step.type, model, bytes));
    bytes = ResultBytes(mesh, step.op, step.type, bytes);
    current = &step.type;
  }
  return us;
}

// CostUs's sum, from per-step values in plan order (the same additions in the same order).
void AddUs(double& us, const std::vector<double>& steps) {
  for (double v : steps) us += v;
}

// What the middle searches of one call may still spend (kMiddleBudget, kMiddleWork), and what
// one of them may spend at most. Without `search`, no middle is searched: a valley's middle is
// the single permute or ShapedMiddle's, as where a search gives up.
struct MiddleBudget {
  int64_t states = kMiddleBudget;
  int64_t work = kMiddleWork;
  int64_t search_work = std::numeric_limits<int64_t>::max();
  bool search = true;
};

// The time of one message of `bytes` over the cheapest link: no step that delivers them costs
// less.
double OneMessageUs(const Mesh& mesh, const CostModel& model, int64_t bytes) {
  const AxisCost fastest = model.Fastest(mesh);
  return fastest.alpha_us + fastest.TransferUs(static_cast<double>(bytes));
}

// What an unpaired permute from `in` to a type that differs costs at least under `model`: one
// cheapest message of its local bytes. On a mesh without size-1 axes such a permute moves some
// device, which receives its whole buffer (StepUs); else 0.
double PermuteFloorUs(const Mesh& mesh, const CostModel& model, const DistType& in) {
  return HasSizeOneAxis(mesh) ? 0.0 : OneMessageUs(mesh, model, LocalBytes(mesh, in));
}

// The work units charged for pricing one unpaired permute exactly (kPermutePricingWork per
// device under a model whose axes differ, where StepUs pairs the devices; else nothing).
int64_t PermutePricingWork(const Mesh& mesh, const CostModel* model) {
  return model == nullptr || model->UniformOn(mesh) ? 0 : kPermutePricingWork * mesh.num_devices();
}

// The price of one permute from `in` to `out` (pairs built when the plan is final): its total
// bytes and (with `model`) its modeled µs. Priced without its step (PermuteSteps), which most
// callers never take: a middle search usually finds something cheaper.
struct PricedPermute {
  int64_t bytes = 0;
  double us = 0;
};

// The steps of that permute.
std::vector<Step> PermuteSteps(const DistType& out) {
  return {Step{Collective::Permute({}), out}};
}

// The permute from `in` to `out` where their local shapes and partial axes agree (then one
// always exists); nullopt otherwise.
std::optional<PricedPermute> OnePermute(const Mesh& mesh, const DistType& in, const DistType& out,
                                        const CostModel* model) {
  if (!SameLocalShape(mesh, in, out) ||
      PartialInMeshOrder(mesh, in) != PartialInMeshOrder(mesh, out)) {
    return std::nullopt;
  }
  // TotalBytes and CostUs of PermuteSteps(out).
  const int64_t in_bytes = LocalBytes(mesh, in);
  const Collective op = Collective::Permute({});
  PricedPermute permute;
  permute.bytes = StepBytes(mesh, in, op, out, in_bytes);
  if (model != nullptr) permute.us = StepUs(mesh, in, op, out, *model, in_bytes);
  return permute;
}

// All_to_alls from `start` (local shape `have`) to a type of local shape `want` (the same
// local size): while some dimension's local size must grow and another's must shrink, one
// all_to_all moves the longest suffix of the first whose group divides what both still need
// (their factors' gcd) to the end of the second. These moves only trade factors between
// dimensions, so every local size stays whole. nullopt when they cannot reach `want`.
std::optional<std::vector<Step>> ShapeMoves(const Mesh& mesh, const DistType& start,
                                            std::vector<int64_t> have,
                                            const std::vector<int64_t>& want) {
  const int rank = start.rank();
  std::vector<Step> steps;
  DistType current = start;
  while (have != want) {
    bool moved = false;
    for (int from = 0; from < rank && !moved; ++from) {
      if (have[from] >= want[from]) continue;
      if (want[from] % have[from] != 0) return std::nullopt;
      for (int onto = 0; onto < rank && !moved; ++onto) {
        if (have[onto] <= want[onto] || have[onto] % want[onto] != 0) continue;
        const int64_t room = std::gcd(want[from] / have[from], have[onto] / want[onto]);
        AxisList& axes = current.dims[from].axes;
        size_t count = 0;
        int64_t group = 1;
        while (count < axes.size() &&
               room % (group * mesh.AxisSize(axes[axes.size() - 1 - count])) == 0) {
          group *= mesh.AxisSize(axes[axes.size() - 1 - count]);
          ++count;
        }
        if (group == 1) continue;
        AxisList moving(axes.end() - count, axes.end());
        axes.resize(axes.size() - count);
        AxisList& into = current.dims[onto].axes;
        into.insert(into.end(), moving.begin(), moving.end());
        have[from] *= group;
        have[onto] /= group;
        steps.push_back(Step{Collective::AllToAll(std::move(moving), from, onto), current});
        moved = true;
      }
    }
    // Each move divides what some dimension still needs by at least 2: this ends.
    if (!moved) return std::nullopt;
  }
  return steps;
}

// Appends to `steps` the all_to_alls `moves` (made from `end`) undone, last first: the axes
// travel back, and the last undone step ends at `end`.
void AppendUndone(const std::vector<Step>& moves, const DistType& end, std::vector<Step>& steps) {
  for (size_t i = moves.size(); i-- > 0;) {
    const Collective& op = moves[i].op;
    steps.push_back(Step{Collective::AllToAll(op.mesh_axes, op.split_dim, op.dim),
                         i > 0 ? moves[i - 1].type : end});
  }
}

// The types a middle's end reaches by all_to_alls that each move a suffix of one dimension's
// axes to the end of another dimension's, within `max_us` (with a model), breadth first:
// `Deepen` adds those one more move away. A move whose group divides the receiving
// dimension's local size is valid and keeps the local size and the partial axes, so every
// type reached could sit in a middle that starts or ends at the end. Types are kept as the
// end's axes by index per dimension (the moves only carry them between dimensions); Path
// builds the DistTypes of the few that ShapedMiddle joins.
class SuffixMoves {
 public:
  static constexpr int kMaxRank = 8;
  static constexpr int kMaxAxes = 32;  // Axes in the dimensions: a bit each in a group mask.
  using Shape = std::array<int64_t, kMaxRank>;

  SuffixMoves(const Mesh& mesh, const DistType& end, const CostModel* model, double max_us)
      : mesh_(mesh), end_(end), model_(model), max_us_(max_us), rank_(end.rank()) {
    for (const Dim& dim : end.dims) num_axes_ += static_cast<int>(dim.axes.size());
    fits_ = rank_ <= kMaxRank && num_axes_ <= kMaxAxes;
    if (!fits_) return;
    Node node;
    int n = 0;
    for (int d = 0; d < rank_; ++d) {
      for (const AxisName& axis : end.dims[d].axes) {
        names_.push_back(&axis);
        sizes_[n] = mesh.AxisSize(axis);
        node.ax[n] = static_cast<uint8_t>(n);
        ++n;
      }
      node.end[d] = static_cast<uint8_t>(n);
      node.shape[d] = LocalDimSize(mesh, end.dims[d]);
    }
    local_bytes_ = LocalBytes(mesh, end);
    seen_.insert(Hash(node));
    nodes_.push_back(node);
  }
  // False where the end has more than kMaxRank dimensions or kMaxAxes axes in them: nothing
  // is reached.
  bool fits() const { return fits_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const Shape& shape(int i) const { return nodes_[i].shape; }
  double us(int i) const { return nodes_[i].us; }
  int64_t bytes(int i) const { return nodes_[i].bytes; }
  // False once kBridgeStates types are reached (the last level then stops part way).
  bool Deepen() {
    const size_t level_end = nodes_.size();
    for (; next_ < level_end; ++next_) {
      for (int from = 0; from < rank_; ++from) {
        const int begin = Begin(nodes_[next_], from), stop = nodes_[next_].end[from];
        int64_t group = 1;
        uint32_t mask = 0;
        for (int k = 1; k <= stop - begin; ++k) {
          const int id = nodes_[next_].ax[stop - k];
          group *= sizes_[id];
          mask |= 1u << id;
          for (int onto = 0; onto < rank_; ++onto) {
            if (onto == from || nodes_[next_].shape[onto] % group != 0) continue;
            if (!Add(next_, from, k, onto, group, mask)) return false;
          }
        }
      }
    }
    return true;
  }
  // Whether reached type i here and reached type j of `other` are the same type.
  bool Same(int i, const SuffixMoves& other, int j) const {
    const Node& a = nodes_[i];
    const Node& b = other.nodes_[j];
    if (!std::equal(a.end.begin(), a.end.begin() + rank_, b.end.begin())) return false;
    for (int n = 0; n < (rank_ > 0 ? a.end[rank_ - 1] : 0); ++n) {
      if (*names_[a.ax[n]] != *other.names_[b.ax[n]]) return false;
    }
    return true;
  }
  // The moves from the end to reached type i, in order, with their types.
  std::vector<Step> Path(int i) const {
    std::vector<int> chain;
    for (; nodes_[i].parent >= 0; i = nodes_[i].parent) chain.push_back(i);
    StepBuilder builder(mesh_, end_);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node& node = nodes_[*it];
      const AxisList& axes = builder.current().dims[node.from].axes;
      builder.Apply(Collective::AllToAll({axes.end() - node.k, axes.end()}, node.from, node.onto));
    }
    return std::move(builder.steps());
  }

 private:
  struct Node {
    std::array<uint8_t, kMaxAxes> ax{};   // Axis indices, dimension after dimension.
    std::array<uint8_t, kMaxRank> end{};  // Where each dimension's indices end in `ax`.
    Shape shape{};
    int parent = -1;
    uint8_t from = 0, k = 0, onto = 0;  // The move from the parent.
    double us = 0;
    int64_t bytes = 0;
  };
  int Begin(const Node& node, int dim) const { return dim == 0 ? 0 : node.end[dim - 1]; }
  uint64_t Hash(const Node& node) const {
    uint64_t h = 0xcbf29ce484222325u;  // FNV-1a over the indices and the dimension ends.
    for (int n = 0; n < num_axes_; ++n) h = (h ^ node.ax[n]) * 0x100000001b3u;
    for (int d = 0; d < rank_; ++d) h = (h ^ (0x100u | node.end[d])) * 0x100000001b3u;
    return h;
  }

  bool Add(size_t parent, int from, int k, int onto, int64_t group, uint32_t mask) {
    Node node = nodes_[parent];
    node.parent = static_cast<int>(parent);
    node.from = static_cast<uint8_t>(from);
    node.k = static_cast<uint8_t>(k);
    node.onto = static_cast<uint8_t>(onto);
    if (model_ != nullptr) {  // CostModel::StepCostUs of the all_to_all.
      node.us += GroupCollectiveUs(CollectiveKind::kAllToAll, static_cast<double>(group),
                                   GroupCost(mask), static_cast<double>(local_bytes_));
      if (node.us > max_us_) return true;
    }
    node.bytes += mesh_.num_devices() * (group - 1) * (local_bytes_ / group);  // StepBytes.
    // Move the suffix [stop - k, stop) of `from` to the end of `onto`: rotate the indices
    // between them, and shift the dimension ends in between.
    const int stop = node.end[from];
    if (from < onto) {
      std::rotate(node.ax.begin() + (stop - k), node.ax.begin() + stop,
                  node.ax.begin() + node.end[onto]);
      for (int d = from; d < onto; ++d) node.end[d] -= k;
    } else {
      const int at = node.end[onto];
      std::rotate(node.ax.begin() + at, node.ax.begin() + (stop - k), node.ax.begin() + stop);
      for (int d = onto; d < from; ++d) node.end[d] += k;
    }
    node.shape[from] *= group;
    node.shape[onto] /= group;
    // Two layouts with one 64-bit hash would only cost the bridge a type to try.
    if (!seen_.insert(Hash(node)).second) return true;
    nodes_.push_back(node);
    return nodes_.size() < kBridgeStates;
  }
  // The group cost (CostModel::Group) of the axes in `mask`, remembered.
  AxisCost GroupCost(uint32_t mask) {
    if (auto it = group_cost_.find(mask); it != group_cost_.end()) return it->second;
    AxisList axes;
    for (int n = 0; n < num_axes_; ++n) {
      if (mask & (1u << n)) axes.push_back(*names_[n]);
    }
    return group_cost_[mask] = model_->Group(mesh_, axes);
  }

  const Mesh& mesh_;
  const DistType& end_;
  const CostModel* model_;
  double max_us_;
  int rank_;
  bool fits_ = false;
  int num_axes_ = 0;
  std::vector<const AxisName*> names_;
  std::array<int64_t, kMaxAxes> sizes_{};
  int64_t local_bytes_ = 0;
  std::vector<Node> nodes_;
  absl::flat_hash_set<uint64_t> seen_;
  absl::flat_hash_map<uint32_t, AxisCost> group_cost_;
  size_t next_ = 0;
};

// A middle without search where `in`'s and `out`'s local shapes differ (same partial axes):
// ShapeMoves from `in` to `out`'s local shape, then one permute (unpaired) where the types
// still differ; or its mirror, one permute from `in` to where ShapeMoves from `out` to `in`'s
// local shape end, then those moves undone. The cheaper (time, then bytes; bytes alone
// without `model`). The middle search finds such middles too, but its first expansion
// enumerates every type one permute reaches, which on a refinement's atoms can take its
// whole work cap: x=4,y=4,z=2,w=4 [768{w,y},48,4096,3072{x}] partial{z} ->
// [768{x},48,4096{y},3072{w}] reduce_scatters z, moves y:(2)2 by an all_to_all and permutes
// (507.4 ms, optimal's plan), where the search gave up and the plan moved all of y (543.6
// ms). nullopt when the shapes agree already, neither form exists, or (with `model`) each
// costs more than `max_us`. `*path` gets the chosen middle's bytes and (with `model`) each
// step's µs. Adds to `*work` what pricing the forms' permutes exactly cost
// (kPermutePricingWork per device each).
std::optional<std::vector<Step>> ShapedMiddle(const Mesh& mesh, const DistType& in,
                                              const DistType& out, const CostModel* model,
                                              double max_us, internal::MiddlePath* path,
                                              int64_t* work) {
  if (PartialInMeshOrder(mesh, in) != PartialInMeshOrder(mesh, out)) return std::nullopt;
  const std::vector<int64_t> in_shape = LocalShape(mesh, in);
  const std::vector<int64_t> out_shape = LocalShape(mesh, out);
  if (in_shape == out_shape) return std::nullopt;
  std::optional<std::vector<Step>> best;
  std::tuple<double, int64_t> best_cost{max_us, std::numeric_limits<int64_t>::max()};
  // Under a model whose axes differ, pricing the permute exactly pairs the devices (a pass
  // over them, milliseconds on thousands of devices), and a pass that searches no middle
  // (MiddleBudget::search) asks for this middle in every valley. So a form is first bounded
  // with its permute at PermuteFloorUs, and dropped when that cannot beat the best.
  const int64_t pricing_work = PermutePricingWork(mesh, model);
  auto cannot_beat = [&](const std::vector<Step>& steps) {
    if (pricing_work == 0) return false;
    double us = 0;
    const DistType* current = &in;
    for (const Step& step : steps) {
      us += step.op.kind == CollectiveKind::kCollectivePermute
                ? PermuteFloorUs(mesh, *model, *current)
                : StepUs(mesh, *current, step.op, step.type, *model);
      current = &step.type;
    }
    return us > std::get<0>(best_cost);
  };
  auto consider = [&](std::vector<Step> steps) {
    if (cannot_beat(steps)) return;
    *work += pricing_work;
    std::vector<double> step_us;
    double us = 0;
    if (model != nullptr) {
      step_us = StepsUs(mesh, in, steps, *model);
      AddUs(us, step_us);
    }
    const std::tuple<double, int64_t> cost{us, TotalBytes(mesh, in, steps)};
    if (cost < best_cost) {
      best_cost = cost;
      best = std::move(steps);
      path->known = true;
      path->bytes = std::get<1>(cost);
      path->step_us = std::move(step_us);
    }
  };
  bool formed = false;  // Whether either form exists (within max_us or not).
  if (std::optional<std::vector<Step>> moves = ShapeMoves(mesh, in, in_shape, out_shape)) {
    formed = true;
    if (!(moves->back().type == out)) moves->push_back(Step{Collective::Permute({}), out});
    consider(*std::move(moves));
  }
  if (std::optional<std::vector<Step>> moves = ShapeMoves(mesh, out, out_shape, in_shape)) {
    formed = true;
    std::vector<Step> steps;
    if (!(moves->back().type == in)) {
      steps.push_back(Step{Collective::Permute({}), moves->back().type});
    }
    AppendUndone(*moves, out, steps);
    consider(std::move(steps));
  }
  if (formed) return best;
  // Neither form exists (a dimension's local size must grow by one factor and shrink by
  // another: x=2,y=4,z=2,w=2,u=8,v=3 [768,192{u,w,y},48{x,z},3072{v}] ->
  // [768,192{v,z},48{w,x},3072{u,y}] moves v forward, permutes and moves [u,y]): meet in the
  // middle. Types reached from `in` by suffix moves are joined by one permute (or nothing) to
  // types from which such moves reach `out`, where their local shapes agree; the joins are
  // tried cheapest first by their moves' price and the permute's floor. One move a side
  // first, two where that joins nothing.
  SuffixMoves ahead(mesh, in, model, max_us), behind(mesh, out, model, max_us);
  if (!ahead.fits() || !behind.fits()) return best;
  const double permute_floor_us = model != nullptr ? PermuteFloorUs(mesh, *model, in) : 0;
  struct Join {
    std::tuple<double, int64_t> floor;
    int ahead, behind;
    bool permute;
  };
  std::vector<Join> joins;
  bool room = true;  // Neither side stopped at kBridgeStates.
  for (int depth = 1; depth <= kBridgeDepth && joins.empty() && room; ++depth) {
    room = ahead.Deepen();
    room = behind.Deepen() && room;
    absl::flat_hash_map<SuffixMoves::Shape, std::vector<int>> behind_by_shape;
    for (int r = 0; r < behind.size(); ++r) behind_by_shape[behind.shape(r)].push_back(r);
    for (int a = 0; a < ahead.size(); ++a) {
      const auto it = behind_by_shape.find(ahead.shape(a));
      if (it == behind_by_shape.end()) continue;
      for (int r : it->second) {
        const bool permute = !ahead.Same(a, behind, r);
        joins.push_back(Join{{ahead.us(a) + behind.us(r) + (permute ? permute_floor_us : 0),
                              ahead.bytes(a) + behind.bytes(r)},
                             a,
                             r,
                             permute});
      }
    }
  }
  std::sort(joins.begin(), joins.end(),
            [](const Join& a, const Join& b) { return a.floor < b.floor; });
  if (joins.size() > kBridgeJoins) joins.resize(kBridgeJoins);
  for (const Join& join : joins) {
    // The reversed moves cost what the forward ones do (same groups, same local bytes).
    if (model != nullptr ? std::get<0>(join.floor) > std::get<0>(best_cost)
                         : std::get<1>(join.floor) > std::get<1>(best_cost)) {
      break;
    }
    std::vector<Step> steps = ahead.Path(join.ahead);
    const std::vector<Step> back = behind.Path(join.behind);
    if (join.permute) {
      steps.push_back(Step{Collective::Permute({}), back.empty() ? out : back.back().type});
    }
    AppendUndone(back, out, steps);
    consider(std::move(steps));
  }
  return best;
}

// One half of a valley as Prepare builds it: the descent (from the source: gathers first, the
// descent's slices and scatters, the all_reduce of what is not scattered late), ending at the
// valley's bottom x, or the ascent (late slices and scatters, then the gathers to the target).
struct ValleyHalf {
  DistType end;  // Where the steps end (x, for a descent).
  std::vector<Step> steps;
  int64_t bytes = 0;       // TotalBytes of the steps.
  std::vector<double> us;  // StepUs per step of AsChains(steps); filled under the time objective.
};

// One candidate valley: the descent's appends and the pre-gather type y, and what Valley needs
// of it, built by Prepare: the descent's steps (with the all_reduce) ending at x, the ascent's
// steps, their total bytes and (time mode) each step's modeled µs.
struct Candidate {
  // Gathers before the descent (a gather-first candidate: GatherFirst).
  std::vector<Collective> first;
  std::vector<Append> descent;
  DistType y;
  // Slices and scatters after the middle, before the gathers (a middle-first candidate:
  // MiddleFirst).
  std::vector<Append> late;
  // Set by Prepare, in its ValleyHalves, shared with the candidates of the same pass that
  // have the same half. The ascent starts at y, or at x when x == y (then no middle runs and
  // the gathers apply to x, whose partial axes may be listed in another order).
  const ValleyHalf* down = nullptr;
  const ValleyHalf* up = nullptr;
  const DistType& x() const { return down->end; }
  // The middle is GreedyMiddle's all_to_alls (loose), not searched (FastScattersElsewhere).
  bool built_middle = false;
};

// Whether `late` (Candidate::late) reduce_scatters `axis`.
bool ScatteredLate(const std::vector<Append>& late, const AxisName& axis) {
  return std::any_of(late.begin(), late.end(),
                     [&](const Append& a) { return a.scatter && a.axis == axis; });
}

// Whether `list` ends with the axes of `appends`, in their order.
bool EndsWithAxes(const AxisList& list, const std::vector<Append>& appends) {
  return appends.size() <= list.size() &&
         std::equal(appends.begin(), appends.end(),
                    list.end() - static_cast<std::ptrdiff_t>(appends.size()),
                    [](const Append& a, const AxisName& axis) { return a.axis == axis; });
}

// `from` after `descent`'s appends (a candidate's x, without its all_reduce); not validated.
DistType Bottom(const DistType& from, const std::vector<Append>& descent) {
  DistType x = from;
  for (const Append& a : descent) {
    x.dims[a.dim].axes.push_back(a.axis);
    if (a.scatter) EraseAxis(x.partial, a.axis);
  }
  return x;
}

// The kinds SplitGroups turns into chains when they act on several axes of its mesh (an
// all_slice over several costs nothing either way).
bool ChainsWhenGrouped(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllToAll;
}

std::vector<Step> SplitGroups(const Mesh& mesh, const DistType& from,
                              const std::vector<Step>& steps, const CostModel& model,
                              bool pair_permutes = true, bool light = false);
bool GreedyMiddle(const Mesh& mesh, const DistType& y, StepBuilder& builder, bool loose = false);
bool SameDescent(const std::vector<Append>& a, const std::vector<Append>& b);

// `steps` (from `from`) as Synthesize's last rewrite, SplitGroups, would leave them on `mesh`,
// for ranking plans by what they will cost, without permute pairs. Ranked unsplit, plans that
// split well lost to plans that split less well: on suite case 60 the Shardy-style plan (325.2
// µs unsplit, 45.5 as chains) lost to the whole-axis plan (58.5, 54.2 as chains). nullopt when
// it would change nothing (no step acts on several axes). Under a model whose axes differ
// only the gathers, scatters and reductions become chains (SplitGroups' light form): pricing
// all_to_all chains and gather helpers there takes exact permute pricing, which cost ~25 % of
// the skewed 3-axis p99 (and +11 % of its instructions for the form below: 1.0059x instead
// of 1.0062x on gap-survey's skewed draws; docs/synthesis.md, "Cost-aware choice").
std::optional<std::vector<Step>> AsChains(const Mesh& mesh, const DistType& from,
                                          const std::vector<Step>& steps, const CostModel& model) {
  const bool groups = std::any_of(steps.begin(), steps.end(), [](const Step& step) {
    return ChainsWhenGrouped(step.op.kind) && step.op.mesh_axes.size() > 1;
  });
  if (!groups) return std::nullopt;
  return SplitGroups(mesh, from, steps, model, /*pair_permutes=*/false,
                     /*light=*/!model.UniformOn(mesh));
}

// The bandwidth an append moves its data at, as the descent's order ranks it: a slice moves
// nothing (infinite), a reduce_scatter its axis's.
double AppendGbps(const CostModel& model, const Append& a) {
  return a.scatter ? model.Axis(a.axis).gbps : std::numeric_limits<double>::infinity();
}

// The descent's appends in the order that leaves slow axes the least to move, for a model
// whose axes differ: each dimension keeps the order of its own appends (so the descent still
// ends at the same type), and of the dimensions' next appends a slice goes first (it moves
// nothing and shrinks what follows), else the reduce_scatter over the axis of highest
// bandwidth (ties: the earlier). A reduce_scatter over k devices on B local bytes costs
// (k - 1) alphas plus (k - 1)/k B over its bandwidth and leaves B/k, so swapping two
// neighbours in a chain of them changes only their transfer terms, and the faster goes first
// exactly when that is cheaper. E.g. x fast, y medium, z and w slow: x=4,y=2,z=8,w=4
// [192,1024] partial{x,w,y} -> [192{w},1024{z}] scatters x and y before w (54.83 µs,
// optimal's plan) where `to`'s order scattered w first (57.13); on gap-survey's 4-axis skewed
// draws up to 2.6x cheaper (docs/benchmarks.md).
std::vector<Append> FastScattersFirst(const CostModel& model, const std::vector<Append>& appends) {
  std::vector<double> gbps;
  for (const Append& a : appends) gbps.push_back(AppendGbps(model, a));
  std::vector<Append> order;
  std::vector<bool> taken(appends.size(), false);
  std::vector<int> heads;  // The dimensions whose next append has been seen, in one round.
  while (order.size() < appends.size()) {
    std::optional<size_t> best;
    heads.clear();
    for (size_t i = 0; i < appends.size(); ++i) {
      if (taken[i] || std::find(heads.begin(), heads.end(), appends[i].dim) != heads.end()) {
        continue;
      }
      heads.push_back(appends[i].dim);
      if (!best || gbps[i] > gbps[*best]) best = i;
    }
    taken[*best] = true;
    order.push_back(appends[*best]);
  }
  return order;
}

// Whether two candidates' late appends reduce_scatter the same axes in the same order (what
// the all_reduce of the descent leaves out).
bool SameScatteredLate(const std::vector<Append>& a, const std::vector<Append>& b) {
  auto next = [](const std::vector<Append>& late, size_t i) {
    while (i < late.size() && !late[i].scatter) ++i;
    return i;
  };
  size_t i = next(a, 0), j = next(b, 0);
  for (; i < a.size() && j < b.size(); i = next(a, i + 1), j = next(b, j + 1)) {
    if (a[i].axis != b[j].axis) return false;
  }
  return i == a.size() && j == b.size();
}

// The valley halves Prepare built in one pass, by what determines them: a descent by the
// gathers first, the descent's appends and the axes scattered late (which the all_reduce
// leaves out); an ascent by its start and the late appends. Candidates of one pass share many
// (on suite case x=2,y=4,z=4 [4096{y},4096] partial{x} -> [4096{z},4096{y}], the 27
// candidates of its two passes have 19 distinct descents and 8 distinct ascents). The
// candidates prepared from it must outlive its use (its keys point into them) and it outlives
// their use of their halves.
struct ValleyHalves {
  struct Down {
    const Candidate* owner;  // Whose first, descent and late appends are the key.
    ValleyHalf half;
  };
  struct Up {
    const DistType* start;
    const std::vector<Append>* late;
    ValleyHalf half;
  };
  std::deque<Down> downs;  // (Deques: candidates point at the halves.)
  std::deque<Up> ups;
};

// The half `builder` built from `start` (taken from the builder), priced: under the time
// objective as chains (the gathers, scatters and reductions over several axes cost what they
// will once split), as the plans in hand are ranked (NormalValleys).
ValleyHalf Half(const Mesh& mesh, const DistType& start, StepBuilder& builder,
                const CostModel* model) {
  ValleyHalf half;
  half.end = builder.TakeCurrent();
  half.steps = std::move(builder.steps());
  half.bytes = TotalBytes(mesh, start, half.steps);
  if (model != nullptr) {
    const std::optional<std::vector<Step>> chains = AsChains(mesh, start, half.steps, *model);
    half.us = StepsUs(mesh, start, chains ? *chains : half.steps, *model);
  }
  return half;
}

// Sets c.down and c.up, from `halves` where a candidate of the pass had the same half.
void Prepare(const Mesh& mesh, const DistType& from, const DistType& to, const CostModel* model,
             ValleyHalves& halves, Candidate& c) {
  c.down = c.up = nullptr;
  for (const ValleyHalves::Down& d : halves.downs) {
    if (d.owner->first == c.first && SameDescent(d.owner->descent, c.descent) &&
        SameScatteredLate(d.owner->late, c.late)) {
      c.down = &d.half;
      break;
    }
  }
  if (c.down == nullptr) {
    StepBuilder builder(mesh, from);
    for (const Collective& gather : c.first) builder.Apply(gather);
    EmitDescent(model != nullptr && !model->UniformOn(mesh) ? FastScattersFirst(*model, c.descent)
                                                            : c.descent,
                builder);
    AxisList reduce = ToReduce(mesh, builder.current(), to);
    EraseAxesIf(reduce, [&](const AxisName& axis) { return ScatteredLate(c.late, axis); });
    if (!reduce.empty()) builder.Apply(Collective::AllReduce(reduce));
    c.down =
        &halves.downs.emplace_back(ValleyHalves::Down{&c, Half(mesh, from, builder, model)}).half;
  }
#ifndef NDEBUG
  // (Debug builds only: the candidates are built so, the final check would reject a plan
  // through ends that differ, and two LocalBytes per candidate were 2 % of the suite's
  // slowest 3-axis call.)
  RESHARD_CHECK(LocalBytes(mesh, c.x()) == LocalBytes(mesh, c.y))
      << "valley ends differ in size: " << ToString(c.x()) << " vs " << ToString(c.y);
#endif
  const DistType& start = c.x() == c.y ? c.x() : c.y;
  for (const ValleyHalves::Up& u : halves.ups) {
    // Listed alike, partial axes in the same order (DistType's == takes them as a set): the
    // ascent's types list them as its start does.
    if (u.start->element_type == start.element_type && u.start->dims == start.dims &&
        u.start->partial == start.partial && SameDescent(*u.late, c.late)) {
      c.up = &u.half;
      return;
    }
  }
  StepBuilder ascent(mesh, start);
  EmitDescent(c.late, ascent);
  EmitAscent(to, ascent.current(), ascent);
  c.up =
      &halves.ups.emplace_back(ValleyHalves::Up{&start, &c.late, Half(mesh, start, ascent, model)})
           .half;
}

// What Valley returns for a candidate it drops (no middle within the budget, none found):
// NotFound without a message, which absl::Status holds inline, where a message would cost an
// allocation per dropped candidate (dozens per call).
absl::Status DroppedCandidate() { return absl::Status(absl::StatusCode::kNotFound, ""); }

// The middle of one valley through a candidate (prepared from `halves`), or its status, with
// the valley's total bytes and (with `model`) its modeled µs before rounding, equal to
// TotalBytes and CostUs of the joined steps (JoinValley). `budget` is the total bytes of the
// best plan so far (bytes mode) or its modeled time `budget_us` (with `model`): the middle
// search is pruned at what remains of it, so a valley that cannot match the best fails early.
// With `model` the middle minimises modeled time.
absl::StatusOr<std::vector<Step>> Valley(const Mesh& mesh, const DistType& from, const DistType& to,
                                         Candidate& c, int64_t budget, MiddleBudget& left,
                                         internal::MiddleCache& classes, ValleyHalves& halves,
                                         const CostModel* model, double budget_us, int64_t& bytes,
                                         double& us) {
  Prepare(mesh, from, to, model, halves, c);
  const DistType& x = c.x();
  std::vector<Step> middle_steps;
  bytes = c.down->bytes;
  us = 0;
  if (model != nullptr) AddUs(us, c.down->us);
  if (c.built_middle && !(x == c.y)) {
    StepBuilder middle(mesh, x);
    if (!GreedyMiddle(mesh, c.y, middle, /*loose=*/true)) {
      return DroppedCandidate();
    }
    bytes += TotalBytes(mesh, x, middle.steps());
    if (model != nullptr) AddUs(us, StepsUs(mesh, x, middle.steps(), *model));
    middle_steps = std::move(middle.steps());
  } else if (!(x == c.y)) {
    SearchOptions options;
    options.max_local_bytes = LocalBytes(mesh, x);
    // Without any plan yet a candidate may exceed the shared budget.
    options.max_states = left.states > 0 ? std::min(kMiddleStates, left.states) : kMiddleStates;
    // The work budget is never exceeded, plan or not: it is what bounds a call's time on
    // huge meshes.
    options.max_work = std::clamp<int64_t>(left.work, 0, left.search_work);
    options.fill_permute_pairs = false;
    options.describe_failures = false;  // A failed middle only drops its candidate.
    options.allow_all_slice = options.allow_all_gather = false;
    options.allow_all_reduce = options.allow_reduce_scatter = false;
    if (model == nullptr) {
      options.max_cost = budget - c.down->bytes - c.up->bytes;
      if (options.max_cost < 0) return DroppedCandidate();
    } else {
      options.cost_model = model;
      double down_us = 0, up_us = 0;
      AddUs(down_us, c.down->us);
      AddUs(up_us, c.up->us);
      options.max_cost_us = budget_us - down_us - up_us + 1e-9;
      if (options.max_cost_us < 0) return DroppedCandidate();
    }
    // When x and y hold blocks of one shape and sum over the same axes, one permute is a
    // middle, priced here: blocks of one shape on one grid are equal or disjoint, so every
    // device the permute feeds lacks its whole block, and no middle receives fewer bytes.
    // When its time is also the bound of one cheapest message, nothing beats it and the
    // search (whose first expansion enumerates every type one permute reaches: milliseconds
    // where many atoms share a dimension) is skipped. Otherwise it is the search's incumbent,
    // so the search only runs while something strictly cheaper may exist, and it stands when
    // the search finds nothing cheaper or gives up.
    // In a pass that searches no middle, a permute whose floor is over what is left is not
    // priced (exactly, under a model whose axes differ: a pass pairing the devices).
    std::optional<PricedPermute> permute;
    if (left.search || model == nullptr || PermuteFloorUs(mesh, *model, x) <= options.max_cost_us) {
      permute = OnePermute(mesh, x, c.y, model);
      if (permute && !left.search) left.work -= PermutePricingWork(mesh, model);
    }
    bool search = true;
    if (permute) {
      const bool optimal =
          model == nullptr ||
          permute->us <= OneMessageUs(mesh, *model, options.max_local_bytes) * (1 + 1e-9);
      const bool within = model == nullptr ? permute->bytes <= options.max_cost
                                           : permute->us <= options.max_cost_us;
      if (!within && optimal) return DroppedCandidate();
      if (within) {
        options.incumbent = SearchOptions::Incumbent{permute->us, permute->bytes};
        search = !optimal;
      } else {
        permute.reset();  // A cheaper middle may still be within what is left: search.
      }
    }
    SearchStats stats;
    internal::MiddlePath path;
    absl::StatusOr<std::vector<Step>> middle = DroppedCandidate();  // Not searched.
    if (search && !left.search) {
      middle = absl::Status(absl::StatusCode::kResourceExhausted, "");  // No search here.
    } else if (search) {
      // SearchPlan(mesh, x, y, options) on compact types: same result, stats and work.
      middle = internal::MiddleSearch(mesh, x, c.y, options, classes, &stats, &path);
    }
    left.states -= stats.states_settled;
    left.work -= stats.work;
    if (!middle.ok() && permute) {
      middle = PermuteSteps(c.y);
      path.known = true;
      path.bytes = permute->bytes;
      path.step_us.assign(model != nullptr ? 1 : 0, permute->us);
    }
    // Where the search gives up (its work or state cap) or may not run, the all_to_alls and
    // permute of ShapedMiddle. Not where it ends with NotFound: it then went through every middle
    // within what is left, this one included. (Nor after a find: on the suite, the draws and the
    // production cases it never beat one. As the search's incumbent it changed ties and cost
    // +5.7 % instructions on the 3-axis suite.)
    if (absl::IsResourceExhausted(middle.status())) {
      int64_t work = 0;
      std::optional<std::vector<Step>> shaped =
          ShapedMiddle(mesh, x, c.y, model, options.max_cost_us, &path, &work);
      left.work -= work;
      if (shaped) middle = *std::move(shaped);
    }
    if (!middle.ok()) return middle.status();
    if (!path.known) {  // SearchPlan: price the steps here.
      path.bytes = TotalBytes(mesh, x, *middle);
      path.step_us = model != nullptr ? StepsUs(mesh, x, *middle, *model) : std::vector<double>{};
    }
    bytes += path.bytes;
    if (model != nullptr) AddUs(us, path.step_us);
    middle_steps = *std::move(middle);
  }
  bytes += c.up->bytes;
  if (model != nullptr) AddUs(us, c.up->us);
  return middle_steps;
}

// The steps of a prepared candidate's valley with `middle`.
std::vector<Step> JoinValley(const Candidate& c, std::vector<Step> middle) {
  std::vector<Step> steps;
  steps.reserve(c.down->steps.size() + middle.size() + c.up->steps.size());
  steps.insert(steps.end(), c.down->steps.begin(), c.down->steps.end());
  steps.insert(steps.end(), std::make_move_iterator(middle.begin()),
               std::make_move_iterator(middle.end()));
  steps.insert(steps.end(), c.up->steps.begin(), c.up->steps.end());
  return steps;
}

// Axes that can carry a reduction's or a middle's work for free: of size above 1, neither
// split nor summed over by `from` or `to` (every device of such an axis holds the same data at
// both ends), in mesh order. Slicing them first and gathering them last turns the reductions
// and the middle into smaller ones plus a gather, e.g. x=2,y=3,z=4: [96,3072,48]
// partial{y,x} -> [96,3072,48{x}] slices z, reduces a quarter of the data and gathers z back:
// 412 instead of 686 µs and 864 instead of 1512 MiB received; y=8,z=4,w=2:
// [768,3072,192{y}] -> [768{y},3072,192{w}] slices z, runs its two all_to_alls on a quarter of
// the data and gathers z back: 1346 instead of 1708 µs.
AxisList HelperAxes(const Mesh& mesh, const DistType& from, const DistType& to) {
  AxisList helpers;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const AxisName& name = mesh.axis_name(a);
    if (mesh.axes()[a].size > 1 && AxisUse(from, name) == kUnused && AxisUse(to, name) == kUnused) {
      helpers.push_back(name);
    }
  }
  return helpers;
}

// `c` with `helpers` sliced onto one dimension before everything else and gathered back by
// the ascent (appended to y's dimension), so the descent's reductions and the middle act on
// smaller buffers. The dimension is one the descent leaves alone, whose local size in `from`
// and in y the helpers' group divides (the largest in `from`); nullopt when there is none.
// With `others`, every other pair of dimensions to slice onto and gather from, the slice
// also onto dimensions the descent slices or scatters onto (the helpers first, the middle
// moving them): x=2,y=2,z=2,w=4 [192{w},384,96] partial{z} -> [192{y},384,96{z,w}] slices x
// and y onto dimension 2, scatters z there, permutes and gathers x from dimension 0 (41.5
// instead of 51.0 µs). `only`: of those, just this (slice, gather) pair.
std::vector<Candidate> WithHelpers(const Mesh& mesh, const DistType& from, const Candidate& c,
                                   const AxisList& helpers, bool others,
                                   std::optional<std::pair<int, int>> only = std::nullopt) {
  if (!c.late.empty()) return {};  // Its late slices would follow the helpers.
  const int64_t group = mesh.GroupSize(helpers);
  auto sliceable = [&](int d) {
    const bool touched = std::any_of(c.descent.begin(), c.descent.end(),
                                     [&](const Append& a) { return a.dim == d; });
    return !touched && LocalDimSize(mesh, from.dims[d]) % group == 0;
  };
  auto gatherable = [&](int d) { return LocalDimSize(mesh, c.y.dims[d]) % group == 0; };
  std::optional<int> dim;
  for (int d = 0; d < from.rank(); ++d) {
    if (!sliceable(d) || !gatherable(d)) continue;
    if (!dim || LocalDimSize(mesh, from.dims[d]) > LocalDimSize(mesh, from.dims[*dim])) dim = d;
  }
  auto helped = [&](int slice, int gather) {
    Candidate out;
    for (const AxisName& axis : helpers) out.descent.push_back(Append{axis, slice, false});
    out.descent.insert(out.descent.end(), c.descent.begin(), c.descent.end());
    out.y = c.y;
    AxisList& axes = out.y.dims[gather].axes;
    axes.insert(axes.end(), helpers.begin(), helpers.end());
    return out;
  };
  if (!others) {
    if (!dim) return {};
    return {helped(*dim, *dim)};
  }
  // Dimension d's local size divides into the helpers and then the descent's appends to d.
  auto sliceable_first = [&](int d) {
    int64_t descent = 1;
    for (const Append& a : c.descent) {
      if (a.dim == d) descent *= mesh.AxisSize(a.axis);
    }
    return LocalDimSize(mesh, from.dims[d]) % (group * descent) == 0;
  };
  std::vector<Candidate> out;
  for (int slice = 0; slice < from.rank(); ++slice) {
    if (!sliceable_first(slice)) continue;
    for (int gather = 0; gather < c.y.rank(); ++gather) {
      if (!gatherable(gather) || (dim && slice == *dim && gather == *dim)) continue;
      if (only && *only != std::make_pair(slice, gather)) continue;
      out.push_back(helped(slice, gather));
    }
  }
  return out;
}

// The middle first, at `from`'s local size, then slices and scatters: when `to` uses every
// axis `from` splits, every partial axis of `from` stays partial in `to` or is split by it,
// and the axes `from` does not split but `to` does (N: new axes, and partial axes to scatter)
// end their dimensions of `to`, the middle can go from `from` to `to` without N (summing over
// `from`'s partial axes), and slicing and scattering N then reaches `to`. Valleys slice
// first and may need a permute to put N in place, e.g. x=2,y=2: [192,192{x}] ->
// [192{x,y},192] is all_to_all x then slice y (one exchange), where the valley slices y,
// permutes and all_to_alls; x=4,y=3,z=2: [3072{y},48] partial{z} -> [3072{x},48{y,z}] is
// all_to_all y, slice x, reduce_scatter z (16.6 instead of 25.9 µs). nullopt when the shape
// does not fit or nothing is left for the middle to do.
// The axes of N that do not end their dimensions are sliced and scattered before the middle
// instead (onto the dimension `to` puts them in, when divisible), and the partial axes `to`
// drops are all_reduced there (Prepare): with x fast and z slow, x=2,y=1,z=2: [96,768{x}]
// partial{y} -> [96{y,x},768{z}] is reduce_scatter y, all_to_all x, slice z (1.2 µs) where
// every valley permutes across z (22.9 µs); under the default model x=2,y=3,z=2:
// [3072{y},48] -> [3072{z},48{x,y}] is slice x, all_to_all y, slice z (10.7 instead of
// 15.8 µs).
std::optional<Candidate> MiddleFirst(const Mesh& mesh, const DistType& from,
                                     const DistType& to) {
  for (const Dim& dim : from.dims) {
    for (const AxisName& axis : dim.axes) {
      if (AxisUse(to, axis) < 0) return std::nullopt;
    }
  }
  auto added = [&](const AxisName& axis) {
    const int use = AxisUse(from, axis);
    return use == kUnused || use == kPartial;
  };
  Candidate c;
  c.y = to;
  std::optional<DistType> x;  // After the early slices and scatters.
  for (int j = 0; j < to.rank(); ++j) {
    AxisList& axes = c.y.dims[j].axes;
    size_t first_late = axes.size();
    while (first_late > 0 && added(axes[first_late - 1])) --first_late;
    for (size_t k = 0; k < first_late; ++k) {
      if (!added(axes[k])) continue;
      if (!x) x = from;
      const std::optional<int> dim = PickDim(mesh, *x, mesh.AxisSize(axes[k]), {j});
      if (!dim) return std::nullopt;
      const bool scatter = AxisUse(from, axes[k]) == kPartial;
      x->dims[*dim].axes.push_back(axes[k]);
      if (scatter) EraseAxis(x->partial, axes[k]);
      c.descent.push_back(Append{axes[k], *dim, scatter});
    }
    for (size_t k = first_late; k < axes.size(); ++k) {
      c.late.push_back(Append{axes[k], j, AxisUse(from, axes[k]) == kPartial});
    }
    axes.resize(first_late);
  }
  if (c.late.empty() || c.y == from) return std::nullopt;
  // The middle still sums over what `to` keeps partial and what N scatters late, in `from`'s
  // order.
  c.y.partial.clear();
  for (const AxisName& axis : from.partial) {
    if (ScatteredLate(c.late, axis) || ContainsAxis(to.partial, axis)) c.y.partial.push_back(axis);
  }
  return c;
}

// The middle-first candidate `c` (MiddleFirst) with the slices it makes after the middle on a
// dimension the middle leaves alone (x's and y's axes there agree) made before it instead, as
// far as they come first among that dimension's late appends: the middle then moves less.
// E.g. x fast, z and w slow, x=4,y=4,z=4,w=4: [256{w},4,16,256{x}] ->
// [256{w,x},4,16{y},256{z}] slices y, moves x by all_to_all and slices z (3.655 µs,
// optimal's plan), where `c` moved x before slicing y and the plan was to gather x and slice
// it onto dimension 0 (4.62). nullopt when no slice moves.
std::optional<Candidate> LateSlicesFirst(const DistType& from, const Candidate& c) {
  Candidate out = c;
  std::vector<bool> early(c.late.size(), false);
  for (int j = 0; j < from.rank(); ++j) {
    AxisList x = from.dims[j].axes;  // x's axes there.
    for (const Append& a : c.descent) {
      if (a.dim == j) x.push_back(a.axis);
    }
    bool prefix = x == c.y.dims[j].axes;  // Still within the slices that come first.
    for (size_t k = 0; k < c.late.size(); ++k) {
      const Append& a = c.late[k];
      if (a.dim != j) continue;
      prefix = prefix && !a.scatter;
      if (!prefix) continue;
      out.descent.push_back(a);
      out.y.dims[j].axes.push_back(a.axis);
      early[k] = true;
    }
  }
  if (std::none_of(early.begin(), early.end(), [](bool e) { return e; })) return std::nullopt;
  out.late.clear();
  for (size_t k = 0; k < c.late.size(); ++k) {
    if (!early[k]) out.late.push_back(c.late[k]);
  }
  return out;
}

// `c` with the axes its descent slices (with `scatters`, those it reduce_scatters instead)
// added to dimension `dim` of x instead, for every dimension where that is valid, and the
// middle moving them to where Y has them: x=3,z=4 [3072,96,192] partial{z} -> [3072{z,x},96,192]
// slices x onto dimension 1 and scatters z onto 0, and one all_to_all puts x behind z (712 µs,
// optimal's plan), where slicing x onto dimension 0 first left x before z and needed a permute
// (770).
std::vector<Candidate> SlicesElsewhere(const Mesh& mesh, const DistType& from, const Candidate& c,
                                       bool scatters = false) {
  if (!c.late.empty()) return {};
  if (std::none_of(c.descent.begin(), c.descent.end(),
                   [&](const Append& a) { return a.scatter == scatters; })) {
    return {};
  }
  std::vector<Candidate> out;
  for (int dim = 0; dim < from.rank(); ++dim) {
    Candidate moved = c;
    absl::InlinedVector<bool, 16> was_moved(moved.descent.size(), false);
    bool changed = false;
    bool joins = false;  // A moved axis lands before one the descent already puts there.
    for (size_t i = 0; i < moved.descent.size(); ++i) {
      Append& a = moved.descent[i];
      if (a.scatter == scatters && a.dim != dim) {
        a.dim = dim;
        was_moved[i] = changed = true;
      } else if (a.dim == dim && changed) {
        joins = true;
      }
    }
    if (!changed || !Validate(mesh, Bottom(from, moved.descent)).ok()) continue;
    // Scatters only (the winner's retry): the moved reductions also after the axes already
    // on `dim`, minor to them, so that a later all_to_all can take them from its end: x=2,
    // y=3,z=2 [3072,96{y},48] partial{x,z} -> [3072{y},96{z},48] scatters x then z onto
    // dimension 2 and moves z from there (273.8 µs, optimal's) where z scattered first, or
    // onto dimension 1 behind y, had to travel with y (296.7 µs).
    std::optional<Candidate> last;
    if (scatters && joins) {
      last = moved;
      last->descent.clear();
      for (bool moved_ones : {false, true}) {
        for (size_t i = 0; i < moved.descent.size(); ++i) {
          if (was_moved[i] == moved_ones) last->descent.push_back(moved.descent[i]);
        }
      }
    }
    out.push_back(std::move(moved));
    if (last) out.push_back(*std::move(last));
  }
  return out;
}

// Under a model whose axes differ: `c` with a reduce_scatter that a slower one before it on
// its dimension holds back (FastScattersFirst keeps each dimension's order) moved, with the
// appends after it there, to the end of another dimension, for every dimension where that is
// valid. The fast reduction then goes first, and an all_to_all moves the moved axes back
// behind the slower ones on the smaller buffer (GreedyMiddle: no search, so that the many
// candidates this makes stay cheap). E.g. y fast, z and w slow, x=2,y=8,z=4,w=2:
// [4096,4096,768] partial{z,y,w} -> [4096{x},4096,768{w,z,y}] scatters y onto dimension 0,
// then w and z onto 2, and moves y to 2 (341 862 µs, optimal's plan) where w, z and y were
// scattered onto 2 in that order (930 204 µs).
std::vector<Candidate> FastScattersElsewhere(const Mesh& mesh, const DistType& from,
                                             const DistType& to, const CostModel& model,
                                             const Candidate& c) {
  if (!c.first.empty() || !c.late.empty() || c.built_middle) return {};
  auto gbps = [&](const Append& a) { return AppendGbps(model, a); };
  auto valid_bottom = [&](const std::vector<Append>& descent) {
    return Validate(mesh, Bottom(from, descent)).ok();
  };
  std::vector<Candidate> out;
  for (int d = 0; d < from.rank(); ++d) {
    std::optional<size_t> held;  // The first scatter onto d behind a slower one.
    double slowest = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < c.descent.size() && !held; ++i) {
      const Append& a = c.descent[i];
      if (a.dim != d || !a.scatter) continue;
      if (gbps(a) > slowest) held = i;
      slowest = std::min(slowest, gbps(a));
    }
    if (!held) continue;
    // The appends that stay (`rest`), and those that move, in `to`'s order (`tail`).
    std::vector<Append> rest, tail;
    for (size_t i = 0; i < c.descent.size(); ++i) {
      (c.descent[i].dim == d && i >= *held ? tail : rest).push_back(c.descent[i]);
    }
    // The moved appends fastest first too, where that differs: the middle then moves them
    // one suffix at a time (GreedyMiddle), e.g. [y,x] onto e as x, y, moved back as y, x.
    std::vector<Append> fast = tail;
    std::stable_sort(fast.begin(), fast.end(),
                     [&](const Append& a, const Append& b) { return gbps(a) > gbps(b); });
    for (int e = 0; e < from.rank(); ++e) {
      if (e == d) continue;
      const std::vector<Append>* orders[] = {&tail, &fast};
      for (const std::vector<Append>* order : orders) {
        if (order == &fast && SameDescent(fast, tail)) continue;
        std::vector<Append> moved_tail = *order;
        for (Append& a : moved_tail) a.dim = e;
        Candidate moved;
        moved.y = c.y;
        moved.built_middle = true;
        moved.descent = rest;
        moved.descent.insert(moved.descent.end(), moved_tail.begin(), moved_tail.end());
        if (!valid_bottom(moved.descent)) continue;
        // Where the ascent gathers the moved axes back from the end of d (a reduction split
        // around the middle), they can be gathered from e instead, with no middle to move
        // them.
        const AxisList& y_d = c.y.dims[d].axes;
        if (order == &tail && EndsWithAxes(y_d, tail) &&
            y_d.size() - tail.size() >= to.dims[d].axes.size()) {
          Candidate gathered = moved;
          gathered.y.dims[d].axes.resize(y_d.size() - tail.size());
          for (const Append& a : tail) gathered.y.dims[e].axes.push_back(a.axis);
          if (Validate(mesh, gathered.y).ok()) out.push_back(std::move(gathered));
        }
        out.push_back(moved);
        // Where e's own appends end its list in `to` (nothing gathered from e), they can also
        // wait until after the middle, as a middle-first candidate's late appends: the moved
        // axes then go before them on e, and e's slow reductions act on the smallest buffer.
        // E.g. x fast, y medium, z and w slow, x=4,y=4,z=4,w=4: [4096,3072] partial{x,y,w,z}
        // -> [4096{z,y,x},3072{w}] scatters x and y onto dimension 1 and z onto 0, moves y
        // and x behind z by all_to_alls and scatters w last (456.03 µs, optimal's plan;
        // 1 727.78 with every scatter in `to`'s order).
        std::vector<Append> own;
        for (const Append& a : rest) {
          if (a.dim == e) own.push_back(a);
        }
        const AxisList& want = to.dims[e].axes;
        if (own.empty() || c.y.dims[e].axes != want || !EndsWithAxes(want, own)) continue;
        Candidate late;
        late.built_middle = true;
        late.late = own;
        for (const Append& a : rest) {
          if (a.dim != e) late.descent.push_back(a);
        }
        late.descent.insert(late.descent.end(), moved_tail.begin(), moved_tail.end());
        late.y = c.y;
        late.y.dims[e].axes.resize(want.size() - own.size());
        late.y.partial.clear();
        for (const AxisName& axis : from.partial) {
          if (ScatteredLate(own, axis) || ContainsAxis(c.y.partial, axis)) {
            late.y.partial.push_back(axis);
          }
        }
        if (valid_bottom(late.descent)) out.push_back(std::move(late));
      }
    }
  }
  return out;
}

// `c` with the axes its ascent gathers (those Y has beyond `to`'s in each dimension) all
// gathered from one other dimension of Y instead, for every dimension where that is valid:
// x=2,y=3 [768{y},192,3072{x}] -> [768{x},192,3072] moves y to dimension 1 and x to 0 by two
// all_to_alls and gathers y there (9 588 µs, optimal's plan), where Y with y behind x on
// dimension 0 needed a permute (10 585 µs with the gather first).
std::vector<Candidate> GathersElsewhere(const Mesh& mesh, const DistType& to, const Candidate& c) {
  if (!c.late.empty()) return {};
  AxisList gathered;
  for (int i = 0; i < to.rank(); ++i) {
    const AxisList& want = to.dims[i].axes;
    const AxisList& have = c.y.dims[i].axes;
    if (have.size() < want.size() || !std::equal(want.begin(), want.end(), have.begin())) {
      return {};
    }
    gathered.insert(gathered.end(), have.begin() + static_cast<std::ptrdiff_t>(want.size()),
                    have.end());
  }
  if (gathered.empty()) return {};
  std::vector<Candidate> out;
  for (int dim = 0; dim < to.rank(); ++dim) {
    Candidate moved = c;
    moved.y = to;
    moved.y.partial = c.y.partial;
    AxisList& axes = moved.y.dims[dim].axes;
    axes.insert(axes.end(), gathered.begin(), gathered.end());
    if (moved.y != c.y && Validate(mesh, moved.y).ok()) out.push_back(std::move(moved));
  }
  return out;
}

// No descent and no ascent: the partial axes `to` does not keep are all_reduced (Prepare), then
// one middle goes straight to `to`. For where divisibility leaves every other candidate without
// a valley: on x=4,y=4,z=2,w=4,u=2,v=4,s=2,t=8 (16 384 devices), [3072{x,u,v,t,y}] partial{w}
// -> [3072{z,u,v,x,y,w}] can neither scatter w nor gather t (a local size of 3), so it has no
// pre-gather type, but all_reduce w and one permute reach it. nullopt when the local sizes
// differ (a middle keeps them).
std::optional<Candidate> StraightMiddle(const Mesh& mesh, const DistType& from,
                                        const DistType& to) {
  if (LocalElements(mesh, from) != LocalElements(mesh, to)) return std::nullopt;
  Candidate c;
  c.y = to;
  return c;
}

// The gathers first, then the middle at `to`'s local size: the mirror of MiddleFirst for a
// target larger than the source. Each dimension gathers the axes at the end of its list that
// `to` does not use; when that brings the local size to `to`'s, with the same partial axes,
// the middle goes from there to `to`. A valley moves the smaller buffer but may need a permute
// to make room for the axes it gathers last, e.g. x=3,y=2: [48,96{x,y}] -> [48{x},96] is
// all_gather y then all_to_all x (15.1 µs), where the valleys permute, all_to_all and gather
// (20.1 µs). The local size only grows towards `to`'s, so the memory bound holds. nullopt
// when nothing is gathered or the sizes do not meet.
std::optional<Candidate> GatherFirst(const Mesh& mesh, const DistType& from, const DistType& to) {
  if (PartialInMeshOrder(mesh, from) != PartialInMeshOrder(mesh, to)) return std::nullopt;
  Candidate c;
  for (int i = 0; i < from.rank(); ++i) {
    const AxisList& axes = from.dims[i].axes;
    size_t first = axes.size();
    while (first > 0 && AxisUse(to, axes[first - 1]) == kUnused) --first;
    if (first == axes.size()) continue;
    c.first.push_back(Collective::AllGather(
        AxisList(axes.begin() + static_cast<std::ptrdiff_t>(first), axes.end()), i));
  }
  if (c.first.empty()) return std::nullopt;
  int64_t group = 1;
  for (const Collective& gather : c.first) group *= mesh.GroupSize(gather.mesh_axes);
  if (LocalElements(mesh, from) * group != LocalElements(mesh, to)) return std::nullopt;
  c.y = to;
  return c;
}

// `c` with its all_reduce (the partial axes R of `from` that `to` neither keeps nor splits)
// split around the middle: the descent reduce_scatters R onto a dimension of x, the middle
// moves the smaller buffer, and the ascent gathers R back from a dimension of y. An
// all_reduce is a reduce_scatter plus an all_gather of the same bytes, and the middle between
// them then moves 1/|R| of the data, e.g. x=4,y=2,z=2: [192,192{x},768{y}] partial{z} ->
// [192,192{y},768{x}] 227 instead of 374 µs. Without `others`, the one split the candidates
// try first: R is gathered from y's dimension of largest local size R's group divides, and
// scattered onto a dimension of x that leaves x's local shape equal to y's, where there is
// one (the middle can then be one permute: x=4,y=4, [96,96{x}] partial{y} -> [96{x},96] 25.2
// instead of 35.2 µs), else onto the gather dimension when R's group divides it in x, else
// onto x's largest such. With `others`, every other pair of dimensions R's group divides
// (gathered from one of y, scattered onto one of x), tried after all first splits: which
// pair lets the middle move least is not local (x=4,y=4: [48,96,96{y}] partial{x} ->
// [48{y},96,96] scatters onto dimension 0 and gathers from dimension 2 around one permute,
// 32.7 µs, where the first split's all_to_all gave 38.8). Empty without such axes or
// dimensions.
std::vector<Candidate> WithScatteredReduction(const Mesh& mesh, const DistType& from,
                                              const DistType& to, const Candidate& c, bool others) {
  // (Without sums in `from` there is nothing to reduce: the common case, decided before
  // building x.)
  if (!c.late.empty() || from.partial.empty()) return {};
  const DistType x = Bottom(from, c.descent);
  const AxisList reduce = ToReduce(mesh, x, to);
  if (reduce.empty()) return {};
  const int64_t group = mesh.GroupSize(reduce);
  if (group == 1) return {};
  const std::optional<int> gather_dim = PickDim(mesh, c.y, group, {});
  if (!gather_dim) return {};
  // y with reduce[k] gathered from its dimension gathers[k].
  auto y_with = [&](const std::vector<int>& gathers) {
    DistType y = c.y;
    for (size_t k = 0; k < reduce.size(); ++k) y.dims[gathers[k]].axes.push_back(reduce[k]);
    return y;
  };
  // That, with R scattered onto `scatter`.
  auto split = [&](const std::vector<int>& gathers, int scatter) {
    Candidate out;
    out.y = y_with(gathers);
    out.descent = c.descent;
    for (const AxisName& axis : reduce) out.descent.push_back(Append{axis, scatter, true});
    return out;
  };
  auto all_from = [&](int gather) { return std::vector<int>(reduce.size(), gather); };
  const std::vector<int64_t> have = LocalShape(mesh, x);
  std::vector<int> preferred;
  const std::vector<int64_t> want = LocalShape(mesh, y_with(all_from(*gather_dim)));
  for (int d = 0; d < x.rank(); ++d) {
    bool fits = have[d] % group == 0;
    for (int e = 0; fits && e < x.rank(); ++e) {
      fits = (e == d ? have[e] / group : have[e]) == want[e];
    }
    if (fits) preferred.push_back(d);
  }
  preferred.push_back(*gather_dim);
  const std::optional<int> scatter_dim = PickDim(mesh, x, group, preferred);
  if (!scatter_dim) return {};
  if (!others) return {split(all_from(*gather_dim), *scatter_dim)};
  std::vector<Candidate> out;
  for (int gather = 0; gather < c.y.rank(); ++gather) {
    if (LocalDimSize(mesh, c.y.dims[gather]) % group != 0) continue;
    for (int scatter = 0; scatter < x.rank(); ++scatter) {
      if (have[scatter] % group != 0) continue;
      if (gather == *gather_dim && scatter == *scatter_dim) continue;
      out.push_back(split(all_from(gather), scatter));
    }
  }
  // And R's axes gathered from several dimensions of y, where that makes y's local shape
  // x's, so that the middle is one permute. The placements are a product over R's axes (on
  // a mesh of many partial atoms, millions): the walk stops after kMaxSpreadVisits of them.
  constexpr int kMaxSpreadVisits = 4096;
  int visits = 0;
  const std::vector<int64_t> y_local = LocalShape(mesh, c.y);
  std::vector<int> where(reduce.size());
  for (int scatter = 0; scatter < x.rank(); ++scatter) {
    if (have[scatter] % group != 0) continue;
    std::vector<int64_t> left = y_local;  // y's local sizes with the axes placed so far.
    std::vector<int64_t> goal = have;
    goal[scatter] /= group;
    // Places reduce[i..] (depth-first, dimensions in order).
    auto place = [&](auto& self, size_t i) -> void {
      if (++visits > kMaxSpreadVisits) return;
      if (i == reduce.size()) {
        if (left != goal ||
            std::all_of(where.begin(), where.end(), [&](int d) { return d == where[0]; })) {
          return;
        }
        out.push_back(split(where, scatter));
        return;
      }
      const int64_t size = mesh.AxisSize(reduce[i]);
      for (int d = 0; d < c.y.rank(); ++d) {
        if (left[d] % size != 0 || left[d] / size < goal[d]) continue;
        where[i] = d;
        left[d] /= size;
        self(self, i + 1);
        left[d] *= size;
      }
    };
    place(place, 0);
  }
  return out;
}

// A descent that reaches y's local shape by reduce_scattering the partial axes `from` sums
// over and `to` does not, and slices new axes only for what they leave: the middle is then
// one permute. The reductions that do not fit are all_reduced (Prepare). Per dimension of y,
// first the longest run of such axes ending its list (they already sit where y wants them,
// so the permute moves fewer devices), then the others in `from`'s order, then y's axes
// `from` does not use. E.g. x=2,y=8,z=4 [48{z}] partial{y} -> [48{x,y}], refined: scatter
// y:(2)2 and y:(4)2 (12 -> 3 per device), all_reduce y:(1)2 and permute, instead of
// all_reducing y and slicing x and y:(1)2 (25.0 instead of 35.0 µs). nullopt when there is no
// reduction to scatter or divisibility leaves no such descent.
std::optional<std::vector<Append>> ScatterToShape(const Mesh& mesh, const DistType& from,
                                                  const DistType& to, const DistType& y) {
  AxisList reduce = ToReduce(mesh, from, to);
  if (reduce.empty()) return std::nullopt;
  std::vector<int64_t> shrink = LocalShape(mesh, from);
  const std::vector<int64_t> want = LocalShape(mesh, y);
  for (int d = 0; d < from.rank(); ++d) {
    if (shrink[d] % want[d] != 0) return std::nullopt;
    shrink[d] /= want[d];
  }
  // Per dimension, the axes placed (major to minor): `lead` before `tail`.
  std::vector<std::vector<Append>> lead(from.rank()), tail(from.rank());
  auto take = [&](const AxisName& axis, int d) {
    const int64_t size = mesh.AxisSize(axis);
    if (shrink[d] % size != 0) return false;
    shrink[d] /= size;
    return true;
  };
  bool scattered = false;
  for (int d = 0; d < y.rank(); ++d) {
    const AxisList& axes = y.dims[d].axes;
    for (size_t k = axes.size(); k-- > 0;) {
      if (!ContainsAxis(reduce, axes[k]) || !take(axes[k], d)) break;
      tail[d].insert(tail[d].begin(), Append{axes[k], d, true});
      EraseAxis(reduce, axes[k]);
      scattered = true;
    }
  }
  for (int d = 0; d < from.rank(); ++d) {
    for (auto it = reduce.begin(); it != reduce.end();) {
      if (!take(*it, d)) {
        ++it;
        continue;
      }
      lead[d].push_back(Append{*it, d, true});
      it = reduce.erase(it);
      scattered = true;
    }
  }
  if (!scattered) return std::nullopt;
  // y's axes `from` does not use, each sliced once where a shrink is left (y's dimension first).
  AxisList unused;
  for (const Dim& dim : y.dims) {
    for (const AxisName& axis : dim.axes) {
      if (AxisUse(from, axis) == kUnused) unused.push_back(axis);
    }
  }
  for (int d = 0; d < y.rank(); ++d) {
    for (int e = 0; e < y.rank() && shrink[d] > 1; ++e) {
      for (const AxisName& axis : y.dims[(d + e) % y.rank()].axes) {
        if (!ContainsAxis(unused, axis) || !take(axis, d)) continue;
        lead[d].push_back(Append{axis, d, false});
        EraseAxis(unused, axis);
      }
    }
    if (shrink[d] != 1) return std::nullopt;
  }
  std::vector<Append> descent;
  for (int d = 0; d < from.rank(); ++d) {
    for (const auto* part : {&lead[d], &tail[d]}) {
      descent.insert(descent.end(), part->begin(), part->end());
    }
  }
  return descent;
}

// Whether `c` has a middle: the descent does not end where Y's
// dimensions are. The variants below that place axes elsewhere make the middle move them; on a
// candidate without one they would add a middle step to what it needs without, so they are
// tried only on candidates that move data anyway (an all_reduce alone keeps its three
// candidates: x=4,y=4,z=4 [64,64] partial{x} -> [64,64] took twice as long with nine).
bool HasMiddle(const DistType& from, const Candidate& c) {
  std::vector<Dim> dims = from.dims;
  for (const Append& a : c.descent) dims[a.dim].axes.push_back(a.axis);
  return dims != c.y.dims;
}

// Whether two descents append the same axes to the same dimensions in the same order.
bool SameDescent(const std::vector<Append>& a, const std::vector<Append>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Append& p, const Append& q) {
    return p.axis == q.axis && p.dim == q.dim && p.scatter == q.scatter;
  });
}

// Whether two candidates describe the same valley (gathers first, descent, late appends, y).
bool SameValley(const Candidate& a, const Candidate& b) {
  return a.first == b.first && a.y == b.y && SameDescent(a.descent, b.descent) &&
         SameDescent(a.late, b.late);
}

// Whether `list` has `c`'s valley already.
bool HasValley(const std::vector<Candidate>& list, const Candidate& c) {
  return std::any_of(list.begin(), list.end(),
                     [&](const Candidate& k) { return SameValley(k, c); });
}

// Whether every axis of `mesh` splits a dimension of both `from` and `to`, and neither has a
// pending sum: a pure move. Then no axis is free to slice or to scatter a sum onto, and any
// gather would exceed the memory bound (both types hold the smallest block the mesh allows),
// so every valley is the bare middle from `from` to `to`: all_to_alls and permutes.
bool IsPureMove(const Mesh& mesh, const DistType& from, const DistType& to) {
  if (!from.partial.empty() || !to.partial.empty()) return false;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (AxisUse(from, mesh.axis_name(a)) < 0 || AxisUse(to, mesh.axis_name(a)) < 0) return false;
  }
  return true;
}

// Candidate valleys, most promising first: each (descent, pre-gather type) pair with the same
// skip set. `heterogeneous`: the model's axes differ in cost (more candidates pay there).
// (Candidates below, which answers pure moves without these placements.)
std::vector<Candidate> PlacedCandidates(const Mesh& mesh, const DistType& from,
                                        const DistType& to, bool heterogeneous) {
  std::vector<Candidate> candidates;
  // Adds (descent, y) unless a candidate has both already.
  auto add = [&](const std::vector<Append>& descent, const DistType& y) {
    if (std::any_of(candidates.begin(), candidates.end(), [&](const Candidate& c) {
          return SameDescent(c.descent, descent) && c.y == y;
        })) {
      return;
    }
    Candidate c;
    c.descent = descent;
    c.y = y;
    candidates.push_back(std::move(c));
  };
  std::vector<DistType> plain_pre_gathers;  // Those of the empty skip set.
  const AxisList substitutions = Substitutions(mesh, from, to);
  for (const AxisList* skips : SkipSets(substitutions)) {
    const AxisList& skip = *skips;
    std::vector<DistType> pre_gathers;
    for (Placement placement : {Placement::kFollow, Placement::kDirect, Placement::kShape}) {
      std::optional<DistType> y = PlacePreGather(mesh, from, to, placement, skip);
      if (y && std::find(pre_gathers.begin(), pre_gathers.end(), *y) == pre_gathers.end()) {
        pre_gathers.push_back(*y);
      }
    }
    for (const DistType& y : pre_gathers) {
      for (Placement placement : {Placement::kFollow, Placement::kDirect, Placement::kShape}) {
        std::optional<std::vector<Append>> appends =
            PlaceDescent(mesh, from, to, placement, y, skip);
        if (!appends) continue;
        for (const std::vector<Append>& descent : {*appends, SlicesFirst(*appends)}) {
          add(descent, y);
        }
      }
    }
    if (skip.empty()) plain_pre_gathers = std::move(pre_gathers);
  }
  // Descents that scatter a dropped partial axis where a new axis of the same size goes.
  if (std::optional<DistType> substituted = WithPartialSubstitutions(mesh, from, to)) {
    for (const DistType& y : plain_pre_gathers) {
      for (Placement placement : {Placement::kFollow, Placement::kDirect, Placement::kShape}) {
        if (std::optional<std::vector<Append>> descent =
                PlaceDescent(mesh, from, *substituted, placement, y, {})) {
          add(*descent, y);
        }
      }
    }
  }
  if (std::optional<Candidate> c = MiddleFirst(mesh, from, to)) {
    std::optional<Candidate> early = LateSlicesFirst(from, *c);
    candidates.push_back(*std::move(c));
    if (early) candidates.push_back(*std::move(early));
  }
  // Each candidate again with the helper axes sliced first, when there is a reduction.
  const AxisList helpers = HelperAxes(mesh, from, to);
  const size_t plain = candidates.size();
  for (size_t i = 0; !helpers.empty() && i < plain; ++i) {
    for (Candidate& c : WithHelpers(mesh, from, candidates[i], helpers, false)) {
      candidates.push_back(std::move(c));
    }
  }
  // And with its all_reduce split around the middle.
  std::vector<Candidate> split;  // Those, for the helpers (last).
  for (size_t i = 0; i < plain; ++i) {
    for (Candidate& c : WithScatteredReduction(mesh, from, to, candidates[i], false)) {
      if (heterogeneous && !helpers.empty()) split.push_back(c);
      candidates.push_back(std::move(c));
    }
  }
  // Then, from the candidates above that have a middle (HasMiddle), with it split between
  // the other dimensions; with the helpers sliced onto one dimension and gathered from
  // another; with the axes it slices sliced elsewhere; with the axes it gathers gathered from
  // another dimension.
  std::vector<size_t> moving;
  std::vector<size_t> scattering;  // Without a middle, with a reduce_scatter.
  for (size_t i = 0; i < plain; ++i) {
    if (HasMiddle(from, candidates[i])) {
      moving.push_back(i);
    } else if (std::any_of(candidates[i].descent.begin(), candidates[i].descent.end(),
                           [](const Append& a) { return a.scatter; })) {
      scattering.push_back(i);
    }
  }
  std::vector<Candidate> scattered;
  for (size_t i : moving) {
    for (Candidate& c : WithScatteredReduction(mesh, from, to, candidates[i], true)) {
      add(c.descent, c.y);
      scattered.push_back(std::move(c));
    }
  }
  // With the helpers sliced where the reduction scatters and gathered where it is gathered.
  auto helped_where_split = [&](const std::vector<Candidate>& reductions) {
    for (const Candidate& s : reductions) {
      const Append& scatter = s.descent.back();
      const int gather = DimEndingWith(s.y, scatter.axis);
      for (Candidate& c : WithHelpers(mesh, from, s, helpers, true, {{scatter.dim, gather}})) {
        add(c.descent, c.y);
      }
    }
  };
  if (!helpers.empty()) helped_where_split(scattered);
  for (size_t i : scattering) {
    if (helpers.empty()) break;
    for (Candidate& c : WithHelpers(mesh, from, candidates[i], helpers, true)) {
      add(c.descent, c.y);
    }
  }
  for (size_t i : moving) {
    if (helpers.empty()) break;
    for (Candidate& c : WithHelpers(mesh, from, candidates[i], helpers, true)) {
      add(c.descent, c.y);
    }
    // And each helper alone, where all of them together do not divide a dimension: x=3,y=2,
    // z=3,w=4 [32,128{y},768] partial{w} -> [32,128,768{w,y}] slices x (not x and z) where w
    // is scattered, 64.1 instead of 70.1 µs.
    for (size_t h = 0; helpers.size() > 1 && h < helpers.size(); ++h) {
      for (Candidate& c : WithHelpers(mesh, from, candidates[i], {helpers[h]}, true)) {
        add(c.descent, c.y);
      }
    }
  }
  for (size_t i : moving) {
    for (Candidate& c : SlicesElsewhere(mesh, from, candidates[i])) add(c.descent, c.y);
  }
  for (size_t i : moving) {
    for (Candidate& c : GathersElsewhere(mesh, to, candidates[i])) add(c.descent, c.y);
  }
  // Reductions scattered to a pre-gather type's shape, or to `to`'s (the permute then drops
  // the axes only `from` splits instead of gathering them, where no pre-gather type fits).
  if (std::find(plain_pre_gathers.begin(), plain_pre_gathers.end(), to) ==
      plain_pre_gathers.end()) {
    plain_pre_gathers.push_back(to);
  }
  for (const DistType& y : plain_pre_gathers) {
    if (std::optional<std::vector<Append>> descent = ScatterToShape(mesh, from, to, y)) {
      add(*descent, y);
    }
  }
  if (std::optional<Candidate> c = GatherFirst(mesh, from, to)) {
    candidates.push_back(*std::move(c));
  }
  // Under a model whose axes differ, also those without a middle, last: the fast reduction on
  // the buffer the helpers shrink goes first (FastScattersFirst), e.g. x fast, z slow,
  // x=8,y=8,z=4 [768,3072,4096] partial{z,x} -> [768,3072,4096{z}] slices y, scatters x onto
  // dimension 1 and z onto 2, and gathers y and x (72.54 ms, where optimal's is 71.03) instead
  // of scattering z and then x onto dimension 2 on the whole buffer (190.8 ms). (Under the
  // default model they found nothing on the surveys and cost one plan 7 %.)
  helped_where_split(split);
  return candidates;
}

// PlacedCandidates; for a pure move (`pure_move`: IsPureMove) its one bare valley, built
// without the placements (~13 % of the median 3-axis suite call, a pure move). Debug builds
// check that the placements agree.
std::vector<Candidate> Candidates(const Mesh& mesh, const DistType& from, const DistType& to,
                                  bool heterogeneous, bool pure_move) {
  if (!pure_move) return PlacedCandidates(mesh, from, to, heterogeneous);
  std::vector<Candidate> bare(1);
  bare[0].y = to;
#ifndef NDEBUG
  const std::vector<Candidate> placed = PlacedCandidates(mesh, from, to, heterogeneous);
  RESHARD_CHECK(placed.size() == 1 && SameValley(placed[0], bare[0]))
      << "a pure move's placed candidates are not its bare valley: " << mesh.ToString() << " "
      << ToString(from) << " -> " << ToString(to);
#endif
  return bare;
}

// `model`: rank candidates by modeled time (then bytes) and run the middle searches in time
// mode; nullptr ranks by total bytes (the paper's objective).
// `bounds`: ComputeLowerBounds(mesh, from, to), computed once per call (a pass over the
// devices). `known`: plans built otherwise, which compete with the valleys (moved from).
// `make_candidates`: the valley candidates, asked for only when no plan in hand meets the
// lower bounds already.
// `incumbent`: a plan to beat (see NormalSteps); NotFound when none of the others does.
// `left`: what the candidates' middle searches may spend.
absl::StatusOr<std::vector<Step>> NormalValleys(
    const Mesh& mesh, const DistType& from, const DistType& to, const CostModel* model,
    const internal::LowerBounds& bounds, internal::MiddleCache& classes,
    absl::FunctionRef<std::vector<Candidate>()> make_candidates,
    absl::Span<std::vector<Step>> known, const std::vector<Step>* incumbent, MiddleBudget left) {
  if (from == to) return std::vector<Step>{};

  // BytesLowerBound: the sharper bound counts the merges a pending reduction needs.
  const int64_t lower_bound = internal::PendingBytesBound(bounds.bytes_total, bounds.pending,
                                                          internal::PendingUnit(mesh, to));
  // The best plan so far: `best`, or the incumbent when `incumbent_best` (not copied: on a
  // mesh of thousands of devices a permute's pair list is hundreds of KiB).
  std::optional<std::vector<Step>> best;
  // When set, `best` holds only the middle of this candidate's valley (joined on return: most
  // valleys that lead for a while lose later).
  const Candidate* best_valley = nullptr;
  bool incumbent_best = false;
  int64_t best_bytes = 0;
  double best_us = 0;
  size_t best_size = 0;
  auto have_best = [&] { return best.has_value() || incumbent_best; };
  // Whether a plan of `size` steps, `bytes` and `us` (unrounded) is better than the best so
  // far; if so it becomes the best's figures.
  auto better = [&](size_t size, int64_t bytes, double us) {
    us = model == nullptr ? 0.0 : RoundCostUs(us);
    if (have_best() &&
        std::make_tuple(us, bytes, size) >= std::make_tuple(best_us, best_bytes, best_size)) {
      return false;
    }
    best_size = size;
    best_bytes = bytes;
    best_us = us;
    return true;
  };
  // `bytes` and `us` (unrounded) are TotalBytes and CostUs of `steps`.
  // Keeps `steps` when better than `best`; whether it did.
  auto consider = [&](std::vector<Step> steps, int64_t bytes, double us) {
    if (!better(steps.size(), bytes, us)) return false;
    best = std::move(steps);
    best_valley = nullptr;
    incumbent_best = false;
    return true;
  };
  // Plans found otherwise (the Shardy-style pass, the incumbent) compete, priced as chains,
  // and bound the middle searches. (Moved, not copied: `known` is not read again.)
  auto price = [&](const std::vector<Step>& plan) {
    if (model == nullptr) return std::make_pair(TotalBytes(mesh, from, plan), 0.0);
    const std::optional<std::vector<Step>> chains = AsChains(mesh, from, plan, *model);
    const std::vector<Step>& priced = chains ? *chains : plan;
    return std::make_pair(TotalBytes(mesh, from, priced), CostUs(mesh, from, priced, *model));
  };
  for (std::vector<Step>& plan : known) {
    const auto [bytes, us] = price(plan);
    consider(std::move(plan), bytes, us);
  }
  if (incumbent != nullptr) {
    const auto [bytes, us] = price(*incumbent);
    if (better(incumbent->size(), bytes, us)) {
      best.reset();
      best_valley = nullptr;
      incumbent_best = true;
    }
  }
  // Same local shape and partial axes: one permute is always possible (and often best).
  if (std::optional<PricedPermute> permute = OnePermute(mesh, from, to, model)) {
    consider(PermuteSteps(to), permute->bytes, permute->us);
  }
  // No plan receives less than the lower bound: stop as soon as one reaches it.
  // In time mode, likewise for TimeLowerBoundUs without its slice bound (a walk over slices
  // that only a model whose axes differ can sharpen).
  const double time_bound =
      model == nullptr
          ? 0.0
          : RoundCostUs(internal::TimeBoundOf(mesh, *model, from, to, bounds, lower_bound, 0.0));
  // Whether no plan can beat `best`: it meets the lower bounds of the objective.
  auto unbeatable = [&] {
    return have_best() && best_bytes <= lower_bound && (model == nullptr || best_us <= time_bound);
  };
  // Every candidate tried outlives `halves`' use (its keys point into them): the list, the
  // winner's variants, the straight middle.
  std::vector<Candidate> candidates, moved;
  std::optional<Candidate> straight;
  ValleyHalves halves;
  // Prices candidate `c` and keeps its valley when it is better; whether it did. (Its steps
  // are joined only then: most valleys lose.)
  auto try_candidate = [&](Candidate& c) {
    int64_t bytes = 0;
    double us = 0;
    absl::StatusOr<std::vector<Step>> middle =
        Valley(mesh, from, to, c, have_best() ? best_bytes : std::numeric_limits<int64_t>::max(),
               left, classes, halves, model,
               have_best() ? best_us : std::numeric_limits<double>::infinity(), bytes, us);
    if (!middle.ok() ||
        !better(c.down->steps.size() + middle->size() + c.up->steps.size(), bytes, us)) {
      return false;
    }
    best = *std::move(middle);
    best_valley = &c;
    incumbent_best = false;
    return true;
  };
  // The best plan's steps (which `best` gives up).
  auto take_best = [&] {
    return best_valley != nullptr ? JoinValley(*best_valley, *std::move(best)) : *std::move(best);
  };
  // Built only when no plan in hand meets the bounds already (for a sum scattered three ways
  // the Shardy-style plan does).
  if (!unbeatable()) candidates = make_candidates();
  // try_candidate for a candidate made after the list, unless the list has its valley already.
  auto try_new = [&](Candidate& c) {
    if (!HasValley(candidates, c)) try_candidate(c);
  };
  for (Candidate& candidate : candidates) {
    if (have_best() && left.states <= 0) break;
    if (left.work <= 0 || unbeatable()) break;
    try_candidate(candidate);
  }
  // The winner again with its reductions scattered onto another dimension, where its plan
  // moves data at least twice (all_to_alls, permutes): a sum scattered where the target keeps
  // its axis can leave the middle more to move than one scattered where the middle needs it.
  // E.g. x=2,y=2,z=3,w=4: [24{w},48{z}] partial{x} -> [24{x,z},48{w,y}] scatters x onto
  // dimension 1 (25.0 µs, optimal's plan) where the winner scattered it onto dimension 0 and
  // its middle began with an all_to_all of x to dimension 1 (30.0 µs); on a 4096-device mesh
  // d=8,f=16,t=8,p=4, bf16[32,4096{t},16384{f}] partial{d} -> bf16[32{d},4096{f},16384{t}]
  // takes 176.1 µs (optimal's) instead of 206.8. Only the winner's variants, and only after
  // two moves: tried for every candidate they cost over twice the instructions for one more
  // better plan (docs/synthesis.md, "Reductions scattered elsewhere").
  auto moves = [](const Step& step) {
    return step.op.kind == CollectiveKind::kAllToAll ||
           step.op.kind == CollectiveKind::kCollectivePermute;
  };
  auto count_moves = [&](const std::vector<Step>& steps) {
    return std::count_if(steps.begin(), steps.end(), moves);
  };
  if (const Candidate* winner = best_valley;
      winner != nullptr &&
      count_moves(winner->down->steps) + count_moves(*best) + count_moves(winner->up->steps) >= 2) {
    moved = SlicesElsewhere(mesh, from, *winner, /*scatters=*/true);
    for (Candidate& candidate : moved) {
      if (left.work <= 0 || unbeatable()) break;
      try_new(candidate);
    }
  }
  if (incumbent_best) return absl::NotFoundError("no plan beats the incumbent");
  if (best) return take_best();

  // Divisibility blocked every valley above. The straight middle, where it is new, then gives
  // the exhaustive search below an incumbent: the search only looks for fewer bytes, and ends
  // far sooner where the memory bound leaves few types (docs/synthesis.md, "When the valley is
  // blocked").
  straight = StraightMiddle(mesh, from, to);
  if (straight) try_new(*straight);
  SearchOptions options;
  options.max_local_bytes = MemoryBoundBytes(mesh, from, to);
  options.max_states = kFallbackStates;
  options.max_work = kFallbackWork;
  options.walk_visit_work = kExactWalkVisitWork;
  options.fill_permute_pairs = false;
  options.bytes_bound = true;
  if (best) options.incumbent = SearchOptions::Incumbent{.us = 0, .bytes = best_bytes};
  absl::StatusOr<std::vector<Step>> steps = SearchPlan(mesh, from, to, options);
  if (best) {  // Whichever is better under the objective; the straight valley if it found none.
    if (steps.ok()) {
      const auto [bytes, us] = price(*steps);
      consider(*std::move(steps), bytes, us);
    }
    return take_best();
  }
  if (absl::IsResourceExhausted(steps.status())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no valley plan was found (divisibility, or the middle searches' work budget on this ",
        mesh.num_devices(), "-device mesh), and the exhaustive memory-bounded search gave up: ",
        steps.status().message()));
  }
  return steps;
}

bool IsPrefix(const AxisList& prefix, const AxisList& list) {
  return prefix.size() <= list.size() && std::equal(prefix.begin(), prefix.end(), list.begin());
}

// The middle of a valley without search: "priority 1" moves only, i.e. all_to_alls that move
// a suffix of one dimension to the end of another such that both dimensions stay prefixes of
// y's (the longest such suffix first), then, if y is not reached, one permute when the local
// shapes agree. False when neither reaches y. `loose`: the dimension a suffix leaves need not
// stay a prefix of y's (what is left there moves later), and no permute.
bool GreedyMiddle(const Mesh& mesh, const DistType& y, StepBuilder& builder, bool loose) {
  for (int guard = 0; !(builder.current() == y) && guard < 64; ++guard) {
    const DistType& c = builder.current();
    bool moved = false;
    for (int i = 0; i < c.rank() && !moved; ++i) {
      const AxisList& list = c.dims[i].axes;
      for (size_t len = list.size(); len >= 1 && !moved; --len) {
        const AxisList rest(list.begin(), list.end() - len);
        if (!loose && !IsPrefix(rest, y.dims[i].axes)) continue;
        const AxisList suffix(list.end() - len, list.end());
        for (int j = 0; j < c.rank() && !moved; ++j) {
          if (j == i) continue;
          AxisList grown = c.dims[j].axes;
          grown.insert(grown.end(), suffix.begin(), suffix.end());
          if (!IsPrefix(grown, y.dims[j].axes)) continue;
          if (LocalDimSize(mesh, c.dims[j]) % mesh.GroupSize(suffix) != 0) continue;
          builder.Apply(Collective::AllToAll(suffix, i, j));
          moved = true;
        }
      }
    }
    if (!moved) break;
  }
  if (builder.current() == y) return true;
  if (loose || LocalShape(mesh, builder.current()) != LocalShape(mesh, y)) return false;
  builder.Append({Step{Collective::Permute({}), y}});  // Paired once the plan is final.
  return true;
}

// FastPath's valleys: the first valley candidates (descent and pre-gather placed by kFollow,
// without and with substitutions), each with a GreedyMiddle; the first that receives the byte
// lower bound.
std::optional<std::vector<Step>> PlacedFastPath(const Mesh& mesh, const DistType& from,
                                                const DistType& to,
                                                const internal::LowerBounds& bounds) {
  const AxisList substitutions = Substitutions(mesh, from, to);
  for (const AxisList* skips : SkipSets(substitutions)) {
    const AxisList& skip = *skips;
    std::optional<DistType> y = PlacePreGather(mesh, from, to, Placement::kFollow, skip);
    if (!y) continue;
    std::optional<std::vector<Append>> appends =
        PlaceDescent(mesh, from, to, Placement::kFollow, *y, skip);
    if (!appends) continue;
    StepBuilder builder(mesh, from);
    EmitDescent(*appends, builder);
    const AxisList reduce = ToReduce(mesh, builder.current(), to);
    if (!reduce.empty()) builder.Apply(Collective::AllReduce(reduce));
    if (LocalBytes(mesh, builder.current()) != LocalBytes(mesh, *y)) continue;
    if (!GreedyMiddle(mesh, *y, builder)) continue;
    EmitAscent(to, *y, builder);
    if (TotalBytes(mesh, from, builder.steps()) <= bounds.bytes_total) {
      return std::move(builder.steps());
    }
  }
  return std::nullopt;
}

// The constructive fast path of `normal`: plans built without any search, returned only when
// they receive exactly the byte lower bound (then no plan can beat them in bytes, and the
// candidate loop of NormalValleys would stop at them too). Tried in order: no steps; the
// single permute (same local shape and partial axes); PlacedFastPath's valleys.
// This covers pure slices and gathers, single (multi-axis) all_to_alls, single permutes and
// slice + all_to_all + gather valleys whose middle is a sequence of suffix moves. On a pure
// move (`pure_move`: IsPureMove) the valleys are one GreedyMiddle from `from` to `to`, built
// without the placements (debug builds check that they agree).
std::optional<std::vector<Step>> FastPath(const Mesh& mesh, const DistType& from,
                                          const DistType& to,
                                          const internal::LowerBounds& bounds, bool pure_move) {
  if (from == to) return std::vector<Step>{};
  if (SameLocalShape(mesh, from, to) &&
      PartialInMeshOrder(mesh, from) == PartialInMeshOrder(mesh, to)) {
    std::vector<Step> steps = {Step{Collective::Permute({}), to}};
    if (TotalBytes(mesh, from, steps) <= bounds.bytes_total) return steps;
  }
  if (!pure_move) return PlacedFastPath(mesh, from, to, bounds);
  std::optional<std::vector<Step>> bare;
  StepBuilder builder(mesh, from);
  if (GreedyMiddle(mesh, to, builder) &&
      TotalBytes(mesh, from, builder.steps()) <= bounds.bytes_total) {
    bare = std::move(builder.steps());
  }
#ifndef NDEBUG
  RESHARD_CHECK(bare == PlacedFastPath(mesh, from, to, bounds))
      << "a pure move's placed fast path is not its bare middle: " << mesh.ToString() << " "
      << ToString(from) << " -> " << ToString(to);
#endif
  return bare;
}

// Gather, then slice, within the memory bound: each dimension keeps the longest prefix of its
// axes that `to` shares, slices first the new axes of the dimensions that keep all their axes
// (which only shrinks), then gathers the rest of each dimension's axes and slices what `to`
// adds. No byte crosses an axis the gathers do not span, so under a model with slow axes this
// can beat every valley, whose middle permutes: x=2,y=3,z=2 with z slow, [768{x},768] ->
// [768{z,x},768{y}] is slice y, all_gather x, slice [z,x] (2.3 µs; a permute over z: 27.9).
// A gather that would exceed the bound parks its most minor axes in a finished dimension
// first (see below); sums `from` has and `to` drops are reduce_scattered in the slices' place.
// nullopt when `to` does not split over such a sum's axes or a step would exceed the bound.
std::optional<std::vector<Step>> GatherThenSlice(const Mesh& mesh, const DistType& from,
                                                 const DistType& to) {
  // The sums `to` drops are reduce_scattered where `to` splits over their axes.
  for (const AxisName& axis : from.partial) {
    if (AxisUse(to, axis) == kUnused) return std::nullopt;
  }
  const int64_t bound = MemoryBoundBytes(mesh, from, to);
  std::vector<size_t> keep(from.rank());
  for (int i = 0; i < from.rank(); ++i) {
    const AxisList& have = from.dims[i].axes;
    const AxisList& want = to.dims[i].axes;
    while (keep[i] < have.size() && keep[i] < want.size() && have[keep[i]] == want[keep[i]]) {
      ++keep[i];
    }
  }
  StepBuilder builder(mesh, from);
  // Appends `axes` to dimension i: slices, and reduce_scatters for the pending sums.
  auto slice = [&](int i, const AxisList& axes) {
    for (size_t k = 0; k < axes.size();) {
      const bool partial = AxisUse(builder.current(), axes[k]) == kPartial;
      AxisList run;
      while (k < axes.size() && (AxisUse(builder.current(), axes[k]) == kPartial) == partial) {
        run.push_back(axes[k++]);
      }
      if (!builder.TryApply(partial ? Collective::ReduceScatter(std::move(run), i)
                                    : Collective::AllSlice(std::move(run), i))) {
        return false;
      }
    }
    return true;
  };
  for (int i = 0; i < from.rank(); ++i) {  // Appends to dimensions that keep everything.
    if (keep[i] < from.dims[i].axes.size()) continue;
    AxisList axes;
    for (size_t k = keep[i]; k < to.dims[i].axes.size(); ++k) {
      if (AxisUse(from, to.dims[i].axes[k]) != kUnused) break;
      axes.push_back(to.dims[i].axes[k]);
    }
    if (!slice(i, axes)) return std::nullopt;
  }
  // A gather that would exceed the bound may first park the most minor of its axes in a
  // dimension already as `to` has it (an all_to_all), and gather them there last.
  int parked_dim = -1;
  AxisList parked;
  auto fits = [&](const DistType& type) { return LocalBytes(mesh, type) <= bound; };
  for (int i = 0; i < from.rank(); ++i) {
    const AxisList& have = from.dims[i].axes;
    if (keep[i] == have.size()) continue;
    AxisList axes(have.begin() + static_cast<std::ptrdiff_t>(keep[i]), have.end());
    Collective gather = Collective::AllGather(axes, i);
    absl::StatusOr<DistType> gathered = ApplyRule(mesh, builder.current(), gather);
    if (!gathered.ok()) return std::nullopt;
    if (fits(*gathered)) {
      builder.Append({Step{std::move(gather), *std::move(gathered)}});
      continue;
    }
    if (parked_dim >= 0) return std::nullopt;  // One dimension parks at most.
    for (size_t p = 1; p < axes.size() && parked_dim < 0; ++p) {
      AxisList minor(axes.end() - static_cast<std::ptrdiff_t>(p), axes.end());
      Collective rest = Collective::AllGather(
          AxisList(axes.begin(), axes.end() - static_cast<std::ptrdiff_t>(p)), i);
      for (int j = 0; j < from.rank() && parked_dim < 0; ++j) {
        if (j == i || builder.current().dims[j].axes != to.dims[j].axes) continue;
        Collective park = Collective::AllToAll(minor, i, j);
        absl::StatusOr<DistType> moved = ApplyRule(mesh, builder.current(), park);
        if (!moved.ok()) continue;
        absl::StatusOr<DistType> rest_gathered = ApplyRule(mesh, *moved, rest);
        if (!rest_gathered.ok() || !fits(*rest_gathered)) continue;
        builder.Append(
            {Step{std::move(park), *std::move(moved)}, Step{rest, *std::move(rest_gathered)}});
        parked_dim = j;
        parked = minor;
      }
    }
    if (parked_dim < 0) return std::nullopt;
  }
  for (int i = 0; i < to.rank(); ++i) {
    if (i == parked_dim) continue;
    const AxisList& want = to.dims[i].axes;
    const size_t present = builder.current().dims[i].axes.size();
    if (present > want.size() ||
        !slice(i, AxisList(want.begin() + static_cast<std::ptrdiff_t>(present), want.end()))) {
      return std::nullopt;
    }
  }
  if (parked_dim >= 0 && !builder.TryApply(Collective::AllGather(parked, parked_dim))) {
    return std::nullopt;
  }
  if (builder.steps().empty() || builder.current().dims != to.dims ||
      PartialInMeshOrder(mesh, builder.current()) != PartialInMeshOrder(mesh, to)) {
    return std::nullopt;
  }
  builder.steps().back().type = to;  // Partial axes as the caller lists them.
  return std::move(builder.steps());
}

// Where `to` only gathers (each of its dimensions a prefix of `from`'s, the same sums): one
// permute first puts unused axes that are strictly faster under `model` (smaller alpha and
// larger bandwidth) in the place of gathered axes of the same size, the most major gathered
// ones first, then the ascent gathers, which the chains (SplitGroups) run minor first: the
// slow axes left are gathered at the smallest sizes and the substitutes last. E.g. x fast, y slow,
// on the prime-factor refinement: x=4,y=8 [96{y},48] -> [96,48] permutes to [96{x,y:(4)2},48] and
// gathers y:(4)2, x:(2)2, x:(1)2 (12.09 µs, optimal's plan; gathering y's atoms: 15.16). nullopt
// when no gathered axis has such a substitute.
std::optional<std::vector<Step>> RelabelThenGather(const Mesh& mesh, const DistType& from,
                                                   const DistType& to, const CostModel& model) {
  if (PartialInMeshOrder(mesh, from) != PartialInMeshOrder(mesh, to)) return std::nullopt;
  for (int i = 0; i < from.rank(); ++i) {
    if (!IsPrefix(to.dims[i].axes, from.dims[i].axes)) return std::nullopt;
  }
  AxisList unused;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const AxisName& name = mesh.axis_name(a);
    if (mesh.axes()[a].size > 1 && AxisUse(from, name) == kUnused) unused.push_back(name);
  }
  auto faster = [&](const AxisName& a, const AxisName& b) {
    const AxisCost ca = model.Axis(a), cb = model.Axis(b);
    return ca.alpha_us < cb.alpha_us && ca.gbps > cb.gbps;
  };
  DistType relabeled = from;
  for (int i = 0; i < from.rank(); ++i) {
    const AxisList& have = from.dims[i].axes;
    const size_t kept = to.dims[i].axes.size();
    AxisList substitutes, slow;
    for (size_t k = kept; k < have.size(); ++k) {
      auto u = std::find_if(unused.begin(), unused.end(), [&](const AxisName& name) {
        return mesh.AxisSize(name) == mesh.AxisSize(have[k]) && faster(name, have[k]);
      });
      if (u == unused.end()) {
        slow.push_back(have[k]);
      } else {
        substitutes.push_back(*u);
        unused.erase(u);
      }
    }
    if (substitutes.empty()) continue;
    AxisList& axes = relabeled.dims[i].axes;
    axes.resize(kept);
    axes.insert(axes.end(), substitutes.begin(), substitutes.end());
    axes.insert(axes.end(), slow.begin(), slow.end());
  }
  if (relabeled == from) return std::nullopt;
  StepBuilder builder(mesh, from);
  builder.Permute(relabeled);
  EmitAscent(to, relabeled, builder);
  builder.steps().back().type = to;  // Partial axes as the caller lists them.
  return std::move(builder.steps());
}

// Gathers in place, then one permute, then gathers: each dimension gathers a suffix of its
// axes whose group divides the factor by which `to`'s local size there exceeds `from`'s, one
// permute puts `to`'s axes in place with the rest of each factor still split (the most minor
// axes left that `to` does not use), and the gathers of those end. Where `to` drops an axis
// major to others that stay, a valley permutes first and then gathers that axis; this gathers
// over the minor axes instead, which can be faster links, and permutes at a larger size. The
// local size only grows towards `to`'s, so the memory bound holds.
// The first plan gathers each whole factor first (the suffix whose group is the factor, in
// every dimension; none when some dimension has no such suffix) and ends with the permute:
// under x fast and y slow, x=8,y=2 [96{y,x}] -> [96{x}] gathers x:(4)2 on the prime-factor
// refinement and permutes (6.0 µs, optimal's plan; the valley's permute and gather over y:
// 10.0). The others are the partial forms, every choice of suffix lengths but that and
// nothing gathered (a valley's shape): x=4,y=8 [3072{y,x}] -> [3072{x}] gathers x, permutes,
// and gathers y:(4)2 (12.0 µs, optimal's plan), where no suffix has the whole factor 8 but one
// that gathers y:(4)2 before the permute too. At most kMaxPartialGathers partial plans, from
// the first kMaxPartialGatherTries choices (on a type of rank 8 the choices can number
// billions). Empty when the types sum over different axes or a factor is fractional.
constexpr size_t kMaxPartialGathers = 16;
constexpr size_t kMaxPartialGatherTries = 256;
std::vector<std::vector<Step>> GatherSuffixesThenPermute(const Mesh& mesh, const DistType& from,
                                                         const DistType& to) {
  if (PartialInMeshOrder(mesh, from) != PartialInMeshOrder(mesh, to)) return {};
  const std::vector<int64_t> have = LocalShape(mesh, from);
  const std::vector<int64_t> want = LocalShape(mesh, to);
  // Per dimension, the suffix lengths whose group divides its factor, shortest first, and the
  // one whose group is the factor (nullopt: none).
  std::vector<std::vector<size_t>> lengths(from.rank());
  std::vector<std::optional<size_t>> whole(from.rank());
  size_t combinations = 1;
  for (int i = 0; i < from.rank(); ++i) {
    if (want[i] % have[i] != 0) return {};
    const int64_t factor = want[i] / have[i];
    const AxisList& axes = from.dims[i].axes;
    int64_t group = 1;
    lengths[i].push_back(0);
    if (factor == 1) whole[i] = 0;
    for (size_t k = axes.size(); k > 0 && factor % (group * mesh.AxisSize(axes[k - 1])) == 0; --k) {
      group *= mesh.AxisSize(axes[k - 1]);
      lengths[i].push_back(axes.size() - k + 1);
      if (group == factor && !whole[i]) whole[i] = axes.size() - k + 1;
    }
    // Saturated: only the first choices are tried (below).
    combinations = std::min(combinations * lengths[i].size(), size_t{1} << 32);
  }
  // The plan gathering `length[i]` axes of each dimension first; nullopt when the rest of
  // some factor cannot stay split over axes `to` does not use, or nothing moves.
  auto plan = [&](const std::vector<size_t>& length) -> std::optional<std::vector<Step>> {
    StepBuilder builder(mesh, from);
    DistType y = to;  // `to` with the rest of each factor still split.
    for (int i = 0; i < from.rank(); ++i) {
      const AxisList& axes = from.dims[i].axes;
      const size_t first = axes.size() - length[i];
      if (length[i] > 0) {
        builder.Apply(Collective::AllGather(
            AxisList(axes.begin() + static_cast<std::ptrdiff_t>(first), axes.end()), i));
      }
      int64_t rest = want[i] / LocalDimSize(mesh, builder.current().dims[i]);
      // The most minor axes left in this dimension that `to` does not use, major first.
      AxisList left;
      for (size_t k = first; k-- > 0 && rest > 1;) {
        if (AxisUse(to, axes[k]) != kUnused) continue;
        const int64_t size = mesh.AxisSize(axes[k]);
        if (rest % size != 0) break;
        rest /= size;
        left.insert(left.begin(), axes[k]);
      }
      if (rest != 1) return std::nullopt;
      y.dims[i].axes.insert(y.dims[i].axes.end(), left.begin(), left.end());
    }
    if (!Validate(mesh, y).ok()) return std::nullopt;
    if (builder.current() != y) builder.Permute(y);
    EmitAscent(to, y, builder);
    if (builder.steps().empty()) return std::nullopt;
    builder.steps().back().type = to;  // Partial axes as the caller lists them.
    return std::move(builder.steps());
  };
  std::vector<std::vector<Step>> plans;
  std::vector<size_t> length(from.rank());
  const bool gathers_whole = std::all_of(
      whole.begin(), whole.end(), [](const std::optional<size_t>& w) { return w.has_value(); });
  if (gathers_whole &&
      std::any_of(whole.begin(), whole.end(), [](const auto& w) { return *w > 0; })) {
    for (int i = 0; i < from.rank(); ++i) length[i] = *whole[i];
    if (std::optional<std::vector<Step>> steps = plan(length)) plans.push_back(*std::move(steps));
  }
  const size_t first_plans = plans.size();
  const size_t tries = std::min(combinations - 1, kMaxPartialGatherTries + 1);
  for (size_t n = 1; n < tries && plans.size() - first_plans < kMaxPartialGathers; ++n) {
    size_t code = n;
    for (int i = 0; i < from.rank(); ++i) {
      length[i] = lengths[i][code % lengths[i].size()];
      code /= lengths[i].size();
    }
    if (std::optional<std::vector<Step>> steps = plan(length)) plans.push_back(*std::move(steps));
  }
  return plans;
}

// The Shardy-style pass (internal::ShardySteps) as one more candidate of `normal`: valleys
// place whole axes, while Shardy's slice -> permute -> all_to_all -> gather rounds split the
// prime-factor refinement's sub-axes over dimensions in ways no valley of that refinement is
// built to, e.g. a=2,b=4,c=2,d=4: [64,64,64,64{a,b}] -> [64{a},64{b},64{c},64{d}] (80 MiB
// against the valleys' 92 MiB). Only on meshes whose axes are all of prime size (or 1),
// where the pass splits no axis (Synthesize runs normal on the prime-factor refinement when
// it splits axes); and only when it did not fall back to gather-then-slice and keeps every
// step within the memory bound.
std::optional<std::vector<Step>> ShardyCandidate(const Mesh& mesh, const DistType& from,
                                                 const DistType& to) {
  if (!HasPrimeAxes(mesh)) return std::nullopt;
  bool fell_back = false;
  absl::StatusOr<std::vector<Step>> steps =
      internal::ShardySteps(mesh, from, to, &fell_back, /*paired_permutes=*/false);
  if (!steps.ok() || fell_back || HasSubAxes(mesh, from, *steps)) return std::nullopt;
  const int64_t bound = MemoryBoundBytes(mesh, from, to);
  for (const Step& step : *steps) {
    if (LocalBytes(mesh, step.type) > bound) return std::nullopt;
  }
  if (!steps->empty()) steps->back().type = to;  // Partial axes as the caller lists them.
  return *std::move(steps);
}

// Whether reaching the byte lower bound may end `normal`'s search under `model` (nullptr: the
// bytes objective): always for bytes, and for time where every axis costs the same (a
// heuristic: the chains of SplitGroups still trade bytes for latency afterwards). Where axes
// differ, a lower-bound plan may cross a slow axis another plan avoids.
bool LowerBoundEndsSearch(const Mesh& mesh, const CostModel* model) {
  return model == nullptr || model->UniformOn(mesh);
}

// Whether `normal`'s pass on the prime-factor refinement may improve `plan` (its plan from
// `from` to `to` on whole axes), under LowerBoundEndsSearch's models: not when the plan
// receives no more bytes than the lower bound (no plan receives fewer), nor when it neither
// moves data (no all_to_all, no permute) nor splits over an axis `from` does not use (it
// only slices, reduces and gathers axes `from` names). Splitting such a plan's group
// collectives into chains over the atoms (SplitGroups, which runs either way) gives what the
// finer pass found: on the suite, 400 seeded cases (default model and bytes objective) and
// gap-survey's 5 000 draws, skipping it there changed no plan, and an all_reduce over x = 4
// on x=4,y=4,z=4 takes less than half the time (bench/synth_latency.cc, BM_Common; numbers in
// docs/benchmarks.md). A new axis keeps the pass: its atoms can take a reduced or gathered
// axis's place (x=2,y=8,z=4: [3072] partial{z,x} -> [3072{y,x}] is 20.1 µs with the finer
// pass, 25.0 without).
bool FinerPassMayPay(const DistType& from, const DistType& to, const Plan& plan) {
  if (plan.metrics.bytes_received_total <= plan.metrics.lower_bound_bytes_total) return false;
  const bool moves = std::any_of(plan.steps.begin(), plan.steps.end(), [](const Step& step) {
    return step.op.kind == CollectiveKind::kAllToAll ||
           step.op.kind == CollectiveKind::kCollectivePermute;
  });
  if (moves) return true;
  return std::any_of(to.dims.begin(), to.dims.end(), [&](const Dim& dim) {
    return std::any_of(dim.axes.begin(), dim.axes.end(),
                       [&](const AxisName& axis) { return AxisUse(from, axis) == kUnused; });
  });
}

// BytesLowerBound from `from` to `to` (on whole axes), from the LowerBoundBytesTotal that a
// plan's metrics hold: no pass over the devices.
int64_t BytesLowerBoundOf(const Mesh& mesh, const DistType& from, const DistType& to,
                          const Metrics& metrics) {
  return internal::PendingBytesBound(metrics.lower_bound_bytes_total,
                                     mesh.GroupSize(ToReduce(mesh, from, to)),
                                     internal::PendingUnit(mesh, to));
}

// `normal`: without `model` (the bytes objective), the byte-optimal valley (the paper's
// objective). With `model`, the valley of least modeled time among the candidates (ties:
// fewer bytes), which may trade bytes for fewer latency terms, e.g. a permute and a small
// all_to_all instead of one all_to_all over 256 devices; under a uniform `model` the fast
// path's plan, when it reaches the byte lower bound, is returned without ranking (it moves
// nothing redundant). With a `model` whose axes differ in cost, a plan at the byte lower bound
// is not the answer by itself (it may cross a slow axis that another plan avoids: on
// x=2,y=1,z=2 with x fast and z slow, [96,768{x}] partial{y} -> [96{y,x},768{z}] is 22.9 µs
// as the lower-bound permute over z, 1.2 µs as an all_to_all over x and a slice): it
// competes with the time-ranked candidates instead.
// `incumbent`: a plan within the memory bound to beat (e.g. the whole-axis plan when `mesh` is
// a refinement); it competes like the candidates and bounds their middle searches from the
// start, so the result is never worse than it under the objective; NotFound ("no plan beats
// the incumbent") when it stays the best.
// `known_bounds`: when not null, ComputeLowerBounds(mesh, from, to) if it holds them (they
// are the same on every refinement of a problem, so one pass serves the next), else set to
// them where the call computed them (a pass over the devices that the plan's metrics and a
// finer pass need not repeat).
absl::StatusOr<std::vector<Step>> NormalSteps(
    const Mesh& mesh, const DistType& from, const DistType& to, const CostModel* model = nullptr,
    const std::vector<Step>* incumbent = nullptr,
    std::optional<internal::LowerBounds>* known_bounds = nullptr) {
  if (from == to) return std::vector<Step>{};
  std::optional<internal::LowerBounds> own;
  if (known_bounds == nullptr) known_bounds = &own;
  if (!*known_bounds) *known_bounds = internal::ComputeLowerBounds(mesh, from, to);
  const internal::LowerBounds& bounds = **known_bounds;
  const bool bytes_decide = LowerBoundEndsSearch(mesh, model);
  const bool pure_move = IsPureMove(mesh, from, to);
  std::vector<std::vector<Step>> known;
  if (std::optional<std::vector<Step>> fast = FastPath(mesh, from, to, bounds, pure_move)) {
    if (bytes_decide) return *std::move(fast);
    known.push_back(*std::move(fast));
  }
  // The middle searches share their permute classes (each candidate's search would otherwise
  // enumerate the same class again).
  internal::MiddleCache classes;
  // Under a model whose axes differ in cost, a refinement's pass (with `incumbent`) searches
  // no middle: its valleys' middles are single permutes or ShapedMiddle's (MiddleBudget::
  // search). The whole-axis branch and bound (kNormalSearchWork) finds more per unit of work;
  // on gap-survey's skewed draws the refined middle searches spent their whole budget for
  // nothing in most 3-axis calls (docs/benchmarks.md). The search-free valleys on the atoms
  // are cheap and find what the whole axes cannot, e.g. x=4,y=8,z=2 with z slow:
  // [3072{z},3072] -> [3072,3072{z,y}] slices x and y, moves x:(2)2 by all_to_all and
  // permutes (53.47 µs instead of 83.29; docs/synthesis.md, "Sub-axes under a heterogeneous
  // model").
  auto make_candidates = [&] {
    std::vector<Candidate> candidates = Candidates(mesh, from, to, !bytes_decide, pure_move);
    if (!bytes_decide) {
      const size_t plain = candidates.size();
      for (size_t i = 0; i < plain; ++i) {
        for (Candidate& c : FastScattersElsewhere(mesh, from, to, *model, candidates[i])) {
          if (!HasValley(candidates, c)) candidates.push_back(std::move(c));
        }
      }
    }
    return candidates;
  };
  if (std::optional<std::vector<Step>> shardy = ShardyCandidate(mesh, from, to)) {
    known.push_back(*std::move(shardy));
  }
  // (Under a uniform model it never won, on the suite or on gap-survey's 5 000 draws.)
  if (!bytes_decide) {
    if (std::optional<std::vector<Step>> gathered = GatherThenSlice(mesh, from, to)) {
      known.push_back(*std::move(gathered));
    }
    for (std::vector<Step>& gathered : GatherSuffixesThenPermute(mesh, from, to)) {
      known.push_back(std::move(gathered));
    }
    if (std::optional<std::vector<Step>> relabeled = RelabelThenGather(mesh, from, to, *model)) {
      known.push_back(*std::move(relabeled));
    }
  }
  // Under the time objective, one pass ranking by time. (A pass ranking by bytes used to run
  // first and win when it reached the byte lower bound, or tied the time pass: on the suite,
  // 5 000 random cases under the default and a skewed model and 355 dumped plans, every plan
  // it chose had the time, bytes and steps of the time pass's; it was ~a quarter of the 3-axis
  // calls' time.) A refinement's pass (with `incumbent`) gets a quarter of the middle budget
  // and a cap per search.
  MiddleBudget budget;
  if (incumbent != nullptr) {
    budget.work = kRefinedMiddleWork;
    budget.search_work = kRefinedSearchWork;
    budget.search = bytes_decide;
  } else if (mesh.num_devices() > kCappedSearchDevices) {
    budget.search_work = kRefinedSearchWork;
  }
  return NormalValleys(mesh, from, to, model, bounds, classes, make_candidates,
                       absl::MakeSpan(known), incumbent, budget);
}

std::vector<Step> NaiveSteps(const Mesh& mesh, const DistType& from, const DistType& to) {
  StepBuilder builder(mesh, from);
  const AxisList reduce = ToReduce(mesh, from, to);
  if (!reduce.empty()) builder.Apply(Collective::AllReduce(reduce));
  for (int i = 0; i < from.rank(); ++i) {
    if (!from.dims[i].axes.empty()) builder.Apply(Collective::AllGather(from.dims[i].axes, i));
  }
  for (int j = 0; j < to.rank(); ++j) {
    if (!to.dims[j].axes.empty()) builder.Apply(Collective::AllSlice(to.dims[j].axes, j));
  }
  return std::move(builder.steps());
}


constexpr Strategy kStrategies[] = {Strategy::kNormal, Strategy::kNaive,  Strategy::kOptimal,
                                    Strategy::kGspmd,  Strategy::kGreedy, Strategy::kDirect,
                                    Strategy::kAuto};

// Re-pairs every permute under the cost model (same bytes, pairs on fast links first), so all
// strategies price a permute between the same two types alike.
void PairPermutes(const Mesh& mesh, const DistType& from, const CostModel& model,
                  std::vector<Step>& steps) {
  const DistType* current = &from;
  for (Step& step : steps) {
    if (step.op.kind == CollectiveKind::kCollectivePermute) {
      step.op = MinimalPermute(mesh, *current, step.type, &model);
    }
    current = &step.type;
  }
}

// The model to minimise, or nullptr for the bytes objective.
const CostModel* TimeModel(const SynthesisOptions& options) {
  return options.objective == Objective::kModeledTime ? &options.cost_model : nullptr;
}

// A permute from `in` to `out` without pairs, or nothing when the types are equal. CostUs
// prices it as MinimalPermute would pair it under the model, which SplitGroups does for those
// it keeps. Types that differ although no device moves (a size-1 axis changed places) still
// need the step: the plan's types must chain (it is free, having no pairs).
std::optional<Step> UnpairedPermute(const DistType& in, const DistType& out) {
  if (in == out) return std::nullopt;
  return Step{Collective::Permute({}), out};
}

// Modeled µs of a minimal permute from `in` to `out` (0 when no device moves).
double PermuteUs(const Mesh& mesh, const DistType& in, const DistType& out,
                 const CostModel& model) {
  return StepUs(mesh, in, Collective::Permute({}), out, model);
}

// The type before out.back(): the one before it, or `from`.
const DistType& InputOfLast(const DistType& from, const std::vector<Step>& out) {
  return out.size() > 1 ? out[out.size() - 2].type : from;
}

// Appends the permute `step` to `out` (which ends at its input; `out` starts at `from`),
// merged with a permute `out` ends with when one permute between the outer types is no
// costlier than both (it never is: its pairs cross at most the axes of the two).
void AppendPermute(const Mesh& mesh, const DistType& from, const Step& step,
                   const CostModel& model, std::vector<Step>& out) {
  if (out.empty() || out.back().op.kind != CollectiveKind::kCollectivePermute) {
    out.push_back(step);
    return;
  }
  const DistType& base = InputOfLast(from, out);
  const DistType& middle = out.back().type;
  if (PermuteUs(mesh, base, step.type, model) >
      PermuteUs(mesh, base, middle, model) + PermuteUs(mesh, middle, step.type, model)) {
    out.push_back(step);
    return;
  }
  out.pop_back();
  if (std::optional<Step> merged = UnpairedPermute(base, step.type)) {
    out.push_back(*std::move(merged));
  }
}

// Appends to `out` (which ends at `current`; `out` starts at `from`) the all_to_all `step`
// over `pieces` (its atoms grouped as SplitGroups does, major to minor) or, where the model
// prices it strictly lower, one all_to_all per piece and a permute that restores the order.
// An all_to_all moves a suffix of the losing dimension, so moving the pieces one at a time
// appends them to the gaining dimension in reverse; the permute fixes that either first
// (reversing the pieces in the losing dimension, so that they arrive in order; merged with a
// permute `out` ends with) or last (merged by SplitGroups with `next`, the step after `step`
// when it is a permute, and priced so). Every step keeps the local size, so the memory bound
// holds; bytes grow (each piece's share plus the permute's B) while the alphas drop from
// k - 1 to the pieces' sum plus one, which wins when latency dominates: an all_to_all over
// x=8 as three over its prime pieces and a permute, 20 instead of 35 µs under the default
// model (what `optimal` finds by search). A third form gathers the minor pieces, moves the
// major ones and slices the minor ones back, when that stays within `max_local_bytes`: on
// x=4,y=2, [96,96{x}] -> [96{y,x},96] slices y, then gathers x:(2)2, all_to_alls x:(1)2 and
// slices x:(2)2 (10.1 instead of 15.0 µs). Permutes it adds are unpaired (UnpairedPermute).
void SplitAllToAll(const Mesh& mesh, const DistType& from, const DistType& current,
                   const Step& step, const Step* next, const std::vector<AxisList>& pieces,
                   const CostModel& model, int64_t max_local_bytes, std::vector<Step>& out) {
  const int losing = static_cast<int>(step.op.dim);
  const int gaining = static_cast<int>(step.op.split_dim);
  const bool after_permute =
      !out.empty() && out.back().op.kind == CollectiveKind::kCollectivePermute;
  const bool before_permute =
      next != nullptr && next->op.kind == CollectiveKind::kCollectivePermute;
  const int64_t local_bytes = LocalBytes(mesh, current);
  const double bytes = static_cast<double>(local_bytes);
  const double single_us = model.StepCostUs(mesh, current, step.op);
  auto group_us = [&](CollectiveKind kind, absl::Span<const AxisName> axes, double in) {
    return GroupCollectiveUs(kind, static_cast<double>(mesh.GroupSize(axes)),
                             model.Group(mesh, axes), in);
  };
  // Gather, all_to_all, slice: the minor pieces S = [P_t .. P_m] are gathered on the losing
  // dimension, one piece at a time from the last (a chain: the same bytes as one gather over
  // S for fewer alphas), the major ones move as one all_to_all at |S| times the size, and S
  // is sliced onto the gaining dimension, where it then follows them: (|S| - 1) + (|P| - 1)
  // alphas at most instead of |S||P| - 1, within the memory bound. Priced without building
  // types.
  // The atoms of pieces [0, t) and of pieces [t, m).
  auto split_at = [&](size_t t) {
    std::pair<AxisList, AxisList> parts;
    for (size_t p = 0; p < pieces.size(); ++p) {
      AxisList& part = p < t ? parts.first : parts.second;
      part.insert(part.end(), pieces[p].begin(), pieces[p].end());
    }
    return parts;
  };
  double gather_us = std::numeric_limits<double>::infinity();
  size_t gather_split = 0;
  for (size_t t = 1; t < pieces.size(); ++t) {
    const auto [major, minor] = split_at(t);
    const int64_t widened = local_bytes * mesh.GroupSize(minor);
    if (widened > max_local_bytes) continue;
    double us = 0;
    double in = bytes;  // The buffer each gather of the chain widens.
    for (size_t p = pieces.size(); p-- > t;) {
      us += group_us(CollectiveKind::kAllGather, pieces[p], in);
      in *= static_cast<double>(mesh.GroupSize(pieces[p]));
    }
    us += group_us(CollectiveKind::kAllToAll, major, static_cast<double>(widened));
    if (us < gather_us) {
      gather_us = us;
      gather_split = t;
    }
  }
  const double kept_us = std::min(single_us, gather_us);  // The best without a permute.
  bool try_permutes = true;
  if (!after_permute && !before_permute) {
    // Without a permute to merge, a chain costs at least its pieces plus one permute at the
    // fastest link: most all_to_alls (bandwidth-bound) are settled here without building one.
    const AxisCost fastest = model.Fastest(mesh);
    double floor_us = fastest.alpha_us + fastest.TransferUs(bytes);
    for (const AxisList& piece : pieces) {
      floor_us += group_us(CollectiveKind::kAllToAll, piece, bytes);
    }
    try_permutes = floor_us < kept_us;
  }
  if (!try_permutes && !(gather_us < single_us)) {
    out.push_back(step);
    return;
  }
  // Candidates are priced from `base`, before the permute `out` ends with when there is one,
  // and replace that permute too (`prefix` restores it where they keep it).
  const DistType& base = after_permute ? InputOfLast(from, out) : current;
  const double prefix_us = after_permute ? PermuteUs(mesh, base, current, model) : 0.0;
  std::vector<Step> prefix;
  if (after_permute) prefix.push_back(out.back());
  double best_us = prefix_us + single_us;
  std::vector<Step> best;  // Empty: keep `step`.
  if (gather_us < single_us) {
    const auto [major, minor] = split_at(gather_split);
    StepBuilder chain(mesh, current);
    for (size_t p = pieces.size(); p-- > gather_split;) {
      chain.Apply(Collective::AllGather(pieces[p], losing));
    }
    chain.Apply(Collective::AllToAll(major, losing, gaining));
    chain.Apply(Collective::AllSlice(minor, gaining));
    RESHARD_CHECK(chain.current() == step.type)
        << ToString(step.op) << " as gather, all_to_all, slice ends at "
        << ToString(chain.current());
    best_us = prefix_us + gather_us;
    best = prefix;
    best.insert(best.end(), chain.steps().begin(), chain.steps().end());
  }
  if (!try_permutes) {
    if (after_permute) out.pop_back();
    for (Step& s : best) out.push_back(std::move(s));
    return;
  }

  // Permute first: the suffix [P1 .. Pm] of the losing dimension becomes [Pm .. P1].
  DistType reordered = current;
  AxisList& axes = reordered.dims[losing].axes;
  axes.resize(axes.size() - step.op.mesh_axes.size());
  for (size_t p = pieces.size(); p-- > 0;) {
    axes.insert(axes.end(), pieces[p].begin(), pieces[p].end());
  }
  StepBuilder first(mesh, reordered);
  for (const AxisList& piece : pieces) {
    first.Apply(Collective::AllToAll(piece, losing, gaining));
  }
  RESHARD_CHECK(first.current() == step.type)
      << ToString(step.op) << " split ends at " << ToString(first.current());
  if (const double us = PermuteUs(mesh, base, reordered, model) +
                        CostUs(mesh, reordered, first.steps(), model);
      us < best_us) {
    best_us = us;
    best.clear();  // This chain replaces the permute `out` ends with.
    if (std::optional<Step> permute = UnpairedPermute(base, reordered)) {
      best.push_back(*std::move(permute));
    }
    best.insert(best.end(), first.steps().begin(), first.steps().end());
  }

  // Permute last: the pieces moved minor first arrive as [Pm .. P1]. With a permute next, the
  // repair merges into it: one permute from here to next's type instead of next alone.
  StepBuilder last(mesh, current);
  for (size_t p = pieces.size(); p-- > 0;) {
    last.Apply(Collective::AllToAll(pieces[p], losing, gaining));
  }
  const double repair_us =
      before_permute ? PermuteUs(mesh, last.current(), next->type, model) -
                           PermuteUs(mesh, step.type, next->type, model)
                     : PermuteUs(mesh, last.current(), step.type, model);
  if (prefix_us + CostUs(mesh, current, last.steps(), model) + repair_us < best_us) {
    best = prefix;
    best.insert(best.end(), last.steps().begin(), last.steps().end());
    if (std::optional<Step> permute = UnpairedPermute(best.back().type, step.type)) {
      best.push_back(*std::move(permute));
    }
  }

  if (best.empty()) {
    out.push_back(step);
    return;
  }
  if (after_permute) out.pop_back();
  for (Step& s : best) out.push_back(std::move(s));
}

// `gathers` (all_gathers on one dimension i, from `in`) run on a buffer first sliced over
// helper atoms H — atoms `in` does not use, of size above 1 — on another dimension d, with H
// gathered back on d at the end, one atom at a time: the gathers move 1/|H| of the bytes and
// H's gathers the rest over H's links. Under a uniform model that always costs more (for one
// atom, (|h|-1)·alpha + (|h|-1)/|h|·B/bw more); with a slow gather axis and fast helpers it can
// cost far less: x=4,y=1,z=4 with z slow (x=1:300,z=20:25), f32[192,3072{z},96] ->
// f32[192,3072,96] is slice x, the gathers over z, then x's, 2 307 instead of 6 835 µs
// (`optimal`'s plan). Local sizes stay within the gathers' own, so the memory bound holds.
// H grows greedily from the empty set while an added atom lowers the cost; nullopt when no
// helper does.
std::optional<std::vector<Step>> WithGatherHelpers(const Mesh& mesh, const DistType& in,
                                                   const std::vector<Step>& gathers,
                                                   const CostModel& model) {
  const int gather_dim = static_cast<int>(gathers.front().op.dim);
  AxisList unused;  // In mesh order.
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const AxisName& name = mesh.axis_name(a);
    if (mesh.axes()[a].size > 1 && AxisUse(in, name) == kUnused) unused.push_back(name);
  }
  // The chain with the helpers `chosen` marks in `unused`, or nullopt when no dimension but
  // the gathers' takes their group.
  auto build = [&](const std::vector<bool>& chosen) -> std::optional<std::vector<Step>> {
    AxisList helpers;
    for (size_t u = 0; u < unused.size(); ++u) {
      if (chosen[u]) helpers.push_back(unused[u]);
    }
    const std::optional<int> dim = PickDim(mesh, in, mesh.GroupSize(helpers), {}, gather_dim);
    if (!dim) return std::nullopt;
    StepBuilder chain(mesh, in);
    chain.Apply(Collective::AllSlice(helpers, *dim));
    for (const Step& gather : gathers) chain.Apply(gather.op);
    for (size_t h = helpers.size(); h-- > 0;) {
      chain.Apply(Collective::AllGather({helpers[h]}, *dim));
    }
    RESHARD_CHECK(chain.current() == gathers.back().type)
        << "gathers with helpers end at " << ToString(chain.current());
    return std::move(chain.steps());
  };
  double best_us = CostUs(mesh, in, gathers, model);
  std::optional<std::vector<Step>> best;
  std::vector<bool> chosen(unused.size(), false);
  for (bool grew = true; grew;) {
    grew = false;
    size_t best_added = 0;
    for (size_t u = 0; u < unused.size(); ++u) {
      if (chosen[u]) continue;
      chosen[u] = true;
      std::optional<std::vector<Step>> chain = build(chosen);
      chosen[u] = false;
      if (!chain) continue;
      if (const double us = CostUs(mesh, in, *chain, model); us < best_us) {
        best_us = us;
        best = std::move(chain);
        best_added = u;
        grew = true;
      }
    }
    if (grew) chosen[best_added] = true;
  }
  return best;
}

// One collective per atom instead of one over the group, for the all_gather, reduce_scatter
// and all_reduce steps of `steps` (on `mesh`, starting at `from`) whose group spans several
// atoms (axes of `mesh`), where the model prices the chain strictly lower. Atoms of size 1
// join a neighbouring atom's collective rather than making a step of their own. Gathers go from the
// minor end, scatters from the major end; an all_reduce becomes such a scatter chain onto the
// dimension of largest local size divisible by the group, then the gathers back, or, when no
// dimension takes the whole group, a scatter chain over its most major pieces that one does,
// one all_reduce over the other pieces on the smaller buffer, and the gathers back (e.g. a
// 12-element buffer reduced over 16 devices: scatters over two pieces of size 2, an
// all_reduce over the remaining 4 devices, two gathers). Bytes are unchanged (the ring
// formulas telescope: (k-1)·B = sum over the chain, and 2(k-1)/k·B = 2(p-1)/p·B +
// 2(r-1)/r·B/p for k = p·r), local sizes stay
// between the step's input and output, and the alpha terms drop from (k-1) for the group to
// one per atom, each at its own axis's price instead of the group's slowest. This is the
// recursive halving/doubling that `optimal` finds by search, e.g. all_gather over x=8 on
// its pieces x:(4)2, x:(2)2, x:(1)2: 3 alphas instead of 7. A multi-atom all_to_all becomes
// one per piece plus an order-repairing permute where that is cheaper (SplitAllToAll; this one
// receives more bytes), and consecutive permutes merge into one (AppendPermute).
// `pair_permutes` false: the permutes it adds or merges keep no pairs (priced from their
// types, for ranking: AsChains). `light`: all_to_alls and permutes stay as they are and no
// gather helpers are tried (what needs permutes priced exactly; for ranking under a model
// whose axes differ: AsChains).
std::vector<Step> SplitGroups(const Mesh& mesh, const DistType& from,
                              const std::vector<Step>& steps, const CostModel& model,
                              bool pair_permutes, bool light) {
  std::vector<Step> out;
  const DistType* current = &from;  // The type before `steps[index]` (steps outlive it).
  // The memory bound of the plans it splits (normal's and optimal's).
  const int64_t max_local_bytes =
      steps.empty() ? LocalBytes(mesh, from) : MemoryBoundBytes(mesh, from, steps.back().type);
  // Appends gathers from `current`, on a helper's smaller buffer where that is cheaper (never
  // under a uniform model: WithGatherHelpers).
  const bool uniform = model.UniformOn(mesh);
  auto append_gathers = [&](std::vector<Step> gathers) {
    if (!uniform && !light) {
      if (std::optional<std::vector<Step>> helped =
              WithGatherHelpers(mesh, *current, gathers, model)) {
        gathers = *std::move(helped);
      }
    }
    for (Step& gather : gathers) out.push_back(std::move(gather));
  };
  for (size_t index = 0; index < steps.size(); ++index) {
    const Step& step = steps[index];
    const Collective& op = step.op;
    const AxisList& axes = op.mesh_axes;
    const bool splittable = ChainsWhenGrouped(op.kind) && axes.size() > 1;
    if (!splittable) {
      if (op.kind == CollectiveKind::kCollectivePermute && !light) {
        AppendPermute(mesh, from, step, model, out);
      } else if (op.kind == CollectiveKind::kAllGather) {
        append_gathers({step});
      } else {
        out.push_back(step);
      }
      current = &step.type;
      continue;
    }
    // The pieces of the chain, major to minor: one per atom of size > 1, each atom of size 1
    // riding with the next one (or, at the end, the previous one), as a step over it alone
    // would exchange nothing.
    std::vector<AxisList> pieces;
    AxisList riding;
    for (const AxisName& axis : axes) {
      riding.push_back(axis);
      if (mesh.AxisSize(axis) > 1) {
        pieces.push_back(std::move(riding));
        riding.clear();
      }
    }
    if (!riding.empty()) {
      if (pieces.empty()) pieces.emplace_back();
      pieces.back().insert(pieces.back().end(), riding.begin(), riding.end());
    }
    if (op.kind == CollectiveKind::kAllToAll && light) {
      out.push_back(step);
      current = &step.type;
      continue;
    }
    if (op.kind == CollectiveKind::kAllToAll) {
      const Step* next = index + 1 < steps.size() ? &steps[index + 1] : nullptr;
      SplitAllToAll(mesh, from, *current, step, next, pieces, model, max_local_bytes, out);
      current = &step.type;
      continue;
    }
    // An all_reduce scatters the most major pieces whose group divides some dimension's local
    // size (that of the largest such dimension), all_reduces the rest, and gathers back: all
    // of them when one dimension takes the whole group. The rest is all_reduced as one group
    // or piece by piece, whichever costs less: a ring over k devices pays 2(k-1) latencies,
    // so pieces of 2 and 2 pay 4 where one group of 4 pays 6 (for twice the bytes of half).
    size_t scattered = pieces.size();
    int dim = static_cast<int>(op.dim);
    if (op.kind == CollectiveKind::kAllReduce) {
      std::optional<int> reduce_dim;
      int64_t k = mesh.GroupSize(axes);  // Of the first `scattered` pieces.
      for (; scattered > 0; --scattered) {
        reduce_dim = PickDim(mesh, *current, k, {});
        if (reduce_dim) break;
        k /= mesh.GroupSize(pieces[scattered - 1]);
      }
      dim = reduce_dim.value_or(0);  // Unused when nothing is scattered.
    }
    auto chain = [&](bool one_group) {
      StepBuilder builder(mesh, *current);
      if (op.kind != CollectiveKind::kAllGather) {
        for (size_t p = 0; p < scattered; ++p) {
          builder.Apply(Collective::ReduceScatter(pieces[p], dim));
        }
      }
      if (one_group && scattered < pieces.size()) {
        AxisList rest;
        for (size_t p = scattered; p < pieces.size(); ++p) {
          rest.insert(rest.end(), pieces[p].begin(), pieces[p].end());
        }
        builder.Apply(Collective::AllReduce(rest));
      }
      for (size_t p = scattered; !one_group && p < pieces.size(); ++p) {
        builder.Apply(Collective::AllReduce(pieces[p]));
      }
      if (op.kind != CollectiveKind::kReduceScatter) {
        for (size_t p = scattered; p-- > 0;) builder.Apply(Collective::AllGather(pieces[p], dim));
      }
      RESHARD_CHECK(builder.current() == step.type)
          << ToString(op) << " split ends at " << ToString(builder.current());
      return std::move(builder.steps());
    };
    std::vector<Step> chosen = {step};
    double chosen_us = CostUs(mesh, *current, chosen, model);
    // One group with nothing scattered is `step`; piece by piece with at most one piece left
    // is one group.
    for (bool one_group : {true, false}) {
      if (one_group ? scattered == 0 : pieces.size() - scattered < 2) continue;
      std::vector<Step> steps = chain(one_group);
      const double us = CostUs(mesh, *current, steps, model);
      if (us < chosen_us) {
        chosen = std::move(steps);
        chosen_us = us;
      }
    }
    if (op.kind == CollectiveKind::kAllGather) {
      append_gathers(std::move(chosen));
    } else {
      for (Step& piece : chosen) out.push_back(std::move(piece));
    }
    current = &step.type;
  }
  // Pairs for the permutes the all_to_all chains added or merged.
  if (!pair_permutes) return out;
  const DistType* in = &from;
  for (Step& step : out) {
    if (step.op.kind == CollectiveKind::kCollectivePermute &&
        step.op.source_target_pairs.empty()) {
      step.op = MinimalPermute(mesh, *in, step.type, &model);
    }
    in = &step.type;
  }
  return out;
}

// The exhaustive search (SearchPlan, time or bytes as options.objective) within `max_work`,
// bounded by `normal` (NormalSteps' plan, when it found one): the search only looks for
// something strictly better, and `normal` is returned when it finds nothing.
// `gave_up`: when not null and the search gives up (ResourceExhausted), return `normal`
// instead of the error and set *gave_up.
absl::StatusOr<std::vector<Step>> BranchAndBound(const Mesh& mesh, const DistType& from,
                                                 const DistType& to,
                                                 const SynthesisOptions& options,
                                                 std::optional<std::vector<Step>> normal,
                                                 int64_t max_work, int64_t walk_visit_work,
                                                 bool* gave_up) {
  SearchOptions search;
  search.max_local_bytes = MemoryBoundBytes(mesh, from, to);
  search.max_states = options.max_states;
  search.max_work = max_work;
  search.walk_visit_work = walk_visit_work;
  search.fill_permute_pairs = false;
  search.bytes_bound = true;
  search.cost_model = TimeModel(options);
  // Branch and bound: normal's plan (in the same vocabulary and bound) caps the time.
  if (normal) {
    PairPermutes(mesh, from, options.cost_model, *normal);
    // The chains Synthesize would apply to normal's plan make it a tighter bound (e.g. a
    // reduce_scatter over two axes as two scatters: the search need not rediscover them).
    if (search.cost_model != nullptr) {
      normal = SplitGroups(mesh, from, *normal, options.cost_model);
    }
    double us = CostUs(mesh, from, *normal, options.cost_model);
    search.max_cost_us = us + 1e-9 * std::max(1.0, us);
    const int64_t bytes = TotalBytes(mesh, from, *normal);
    if (search.cost_model == nullptr) search.max_cost = bytes;
    search.incumbent = SearchOptions::Incumbent{us, bytes};
  }
  absl::StatusOr<std::vector<Step>> steps = SearchPlan(mesh, from, to, search);
  if (steps.ok()) {
    PairPermutes(mesh, from, options.cost_model, *steps);
    // The search prices permutes exactly as PairPermutes does, so normal can only tie; keep
    // the cheaper under the rounding ComputeMetrics applies.
    auto key = [&](const std::vector<Step>& plan) {
      double us = RoundCostUs(CostUs(mesh, from, plan, options.cost_model));
      int64_t bytes = TotalBytes(mesh, from, plan);
      return search.cost_model == nullptr ? std::make_pair(static_cast<double>(bytes), us)
                                          : std::make_pair(us, static_cast<double>(bytes));
    };
    if (normal && key(*normal) < key(*steps)) {
      return *std::move(normal);
    }
    return steps;
  }
  if (normal && absl::IsNotFound(steps.status())) return *std::move(normal);
  if (normal && gave_up != nullptr && absl::IsResourceExhausted(steps.status())) {
    *gave_up = true;
    return *std::move(normal);
  }
  return steps.status();
}

// BranchAndBound over the whole vocabulary from normal's plan (NormalSteps with `incumbent`).
// `gave_up`: as for BranchAndBound. Only for a refinement tried on top of one whose search
// finished (the caller keeps the better plan), never as the answer on its own: that plan is
// normal's with `incumbent` as its bound, not normal's own. `incumbent`: as for NormalSteps;
// normal's plan, the search's bound, is then no worse than it.
absl::StatusOr<std::vector<Step>> OptimalSteps(const Mesh& mesh, const DistType& from,
                                               const DistType& to,
                                               const SynthesisOptions& options,
                                               bool* gave_up,
                                               const std::vector<Step>* incumbent) {
  if (from == to) return std::vector<Step>{};
  std::optional<std::vector<Step>> normal;
  absl::StatusOr<std::vector<Step>> n = NormalSteps(mesh, from, to, TimeModel(options), incumbent);
  if (n.ok()) {
    normal = *std::move(n);
  } else if (incumbent != nullptr && absl::IsNotFound(n.status())) {
    normal = *incumbent;  // Nothing beat it (with an incumbent, NormalSteps' only NotFound).
  }
  return BranchAndBound(mesh, from, to, options, std::move(normal), kOptimalWork,
                        kExactWalkVisitWork, gave_up);
}

// Whether `normal` ends with BranchAndBound: under the time objective with a model whose axes
// differ in cost (kNormalSearchWork), on meshes where that budget pays for more than 64 of the
// search's heuristic evaluations (each visits every device). Beyond 2^14 devices the search
// could hardly settle a state, while pricing normal's plan for it exactly (its permutes paired
// under the model) took several hundred milliseconds on 2^20 devices.
bool NormalSearches(const Mesh& mesh, const SynthesisOptions& options) {
  const CostModel* model = TimeModel(options);
  return model != nullptr && !model->UniformOn(mesh) &&
         mesh.num_devices() <= kNormalSearchWork / 64;
}

}  // namespace

std::string_view StrategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kNormal:
      return "normal";
    case Strategy::kNaive:
      return "naive";
    case Strategy::kOptimal:
      return "optimal";
    case Strategy::kGspmd:
      return "gspmd";
    case Strategy::kGreedy:
      return "greedy";
    case Strategy::kDirect:
      return "direct";
    case Strategy::kAuto:
      return "auto";
  }
  return "unknown";
}

std::span<const Strategy> AllStrategies() { return kStrategies; }

bool IsMemoryBounded(Strategy strategy) {
  return strategy == Strategy::kNormal || strategy == Strategy::kOptimal;
}

absl::StatusOr<Strategy> ParseStrategy(std::string_view name) {
  std::vector<std::string> names;
  for (Strategy s : kStrategies) {
    if (name == StrategyName(s)) return s;
    names.emplace_back(StrategyName(s));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown strategy '", Absl(name), "' (known: ",
                                                 absl::StrJoin(names, ", "), ")"));
}

std::string_view ObjectiveName(Objective objective) {
  return objective == Objective::kBytes ? "bytes" : "time";
}

absl::StatusOr<Objective> ParseObjective(std::string_view name) {
  std::vector<std::string> names;
  for (Objective o : {Objective::kModeledTime, Objective::kBytes}) {
    if (name == ObjectiveName(o)) return o;
    names.emplace_back(ObjectiveName(o));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown objective '", Absl(name), "' (known: ",
                                                 absl::StrJoin(names, ", "), ")"));
}

namespace {

// Aborts with `what` unless `plan` type-checks and ends at its target: CheckPlan without what
// holds for every plan built here (a valid source; metrics computed from the same steps, on
// this mesh or on a refinement of it, which prices them alike) and with permutes checked by
// placement keys (synth/plan_check.h). Debug builds run CheckPlan as well.
// `finest`: see CheckSynthesizedPlan.
void CheckOrDie(const Plan& plan, std::string_view what, const AxisRefinement* finest = nullptr) {
  absl::Status check = internal::CheckSynthesizedPlan(plan, finest);
#ifndef NDEBUG
  if (check.ok()) check = CheckPlan(plan);
#endif
  RESHARD_CHECK(check.ok()) << what << ": " << check;
}

// CheckOrDie on the plans built on the way to the one Synthesize returns (a pass's plan, its
// coarsening, its split form), in debug builds only, where the message names the stage that
// went wrong. Release builds check just the plan returned (Synthesize): most of these lose to
// another plan and are dropped, and checking them cost ~6 % of a 3-axis call.
void DebugCheck([[maybe_unused]] const Plan& plan, [[maybe_unused]] std::string_view what) {
#ifndef NDEBUG
  CheckOrDie(plan, what);
#endif
}

// Synthesize on a mesh where every axis reference of `from` and `to` is a whole axis.
// `gave_up`, `incumbent`: see OptimalSteps; `incumbent` (a memory-bounded plan on
// `mesh`) is used by normal and optimal only, and NotFound says that none of their plans
// beats it (the synthesized steps are the incumbent's). `known_bounds`: as for NormalSteps.
absl::StatusOr<Plan> SynthesizeWholeAxes(
    const Mesh& mesh, const DistType& from, const DistType& to, const SynthesisOptions& options,
    bool* gave_up = nullptr, const std::vector<Step>* incumbent = nullptr,
    std::optional<internal::LowerBounds>* known_bounds = nullptr) {
  if (absl::Status s = CheckReshardable(mesh, from, to); !s.ok()) return s;
  if (absl::Status s = CheckCostModel(mesh, options.cost_model); !s.ok()) return s;
  std::vector<Step> steps;
  std::optional<internal::LowerBounds> own;
  if (known_bounds == nullptr) known_bounds = &own;
  switch (options.strategy) {
    case Strategy::kNormal: {
      absl::StatusOr<std::vector<Step>> normal =
          NormalSteps(mesh, from, to, TimeModel(options), incumbent, known_bounds);
      if (!normal.ok()) return normal.status();
      // Not on a refinement's pass (with `incumbent`), which only has to beat this plan.
      if (incumbent == nullptr && NormalSearches(mesh, options)) {
        bool searched_out = false;  // Then normal's plan stands.
        normal = BranchAndBound(mesh, from, to, options, *std::move(normal), kNormalSearchWork,
                                /*walk_visit_work=*/0, &searched_out);
        if (!normal.ok()) return normal.status();
      }
      steps = *std::move(normal);
      break;
    }
    case Strategy::kNaive:
      steps = NaiveSteps(mesh, from, to);
      break;
    case Strategy::kOptimal: {
      absl::StatusOr<std::vector<Step>> optimal =
          OptimalSteps(mesh, from, to, options, gave_up, incumbent);
      if (!optimal.ok()) return optimal.status();
      steps = *std::move(optimal);
      break;
    }
    case Strategy::kGspmd:
      steps = internal::GspmdSteps(mesh, from, to);
      break;
    case Strategy::kGreedy:
      steps = internal::GreedySteps(mesh, from, to);
      break;
    case Strategy::kDirect: {
      const int64_t transfers = internal::DirectTransferCount(mesh, from, to);
      if (transfers > kMaxDirectTransfers) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "strategy direct would build an all_to_all_v of ", transfers,
            " transfers on this ", mesh.num_devices(), "-device mesh (limit ",
            kMaxDirectTransfers, "); use strategy normal"));
      }
      steps = internal::DirectSteps(mesh, from, to);
      break;
    }
    case Strategy::kAuto:  // Composed of the two in SynthesizeUnchecked.
      RESHARD_CHECK(false) << "strategy auto reached SynthesizeWholeAxes";
  }
  PairPermutes(mesh, from, options.cost_model, steps);
  // Nothing beat the incumbent: the caller holds that plan already, priced and checked.
  // (NormalSteps says so itself when its valleys lose to it, but its fast path, a plan in
  // hand that ties it, and OptimalSteps' search return the plan, paired only now.)
  if (incumbent != nullptr && steps == *incumbent) {
    return absl::NotFoundError("no plan beats the incumbent");
  }
  // The target prints as the caller wrote it (partial order is not significant).
  if (!steps.empty()) {
    RESHARD_CHECK(steps.back().type == to) << ToString(steps.back().type) << " != " << ToString(to);
    steps.back().type = to;
  }

  Plan plan;
  plan.mesh = mesh;
  plan.source = from;
  plan.target = to;
  plan.strategy = std::string(StrategyName(options.strategy));
  plan.steps = std::move(steps);
  plan.cost_model = options.cost_model;
  plan.metrics = ComputeMetrics(
      mesh, from, plan.steps, plan.cost_model,
      *known_bounds ? (*known_bounds)->bytes_total : LowerBoundBytesTotal(mesh, from, to));
  DebugCheck(plan, "synthesized an ill-typed plan");
  if (IsMemoryBounded(options.strategy)) {
    RESHARD_CHECK(plan.metrics.peak_local_bytes <=
                  MemoryBoundBytes(mesh, from, to))
        << StrategyName(options.strategy) << " plan exceeds the memory bound";
  }
  return plan;
}

// Synthesizes on `refinement` and brings the plan back to the user's mesh in canonical form.
// `incumbent`: a plan on refinement.mesh() whose refinement normal and optimal must beat;
// NotFound when they return it unchanged.
absl::StatusOr<Plan> SynthesizeRefined(
    const AxisRefinement& refinement, const DistType& from, const DistType& to,
    const SynthesisOptions& options, bool* gave_up = nullptr, const Plan* incumbent = nullptr,
    std::optional<internal::LowerBounds>* known_bounds = nullptr) {
  const DistType refined_to = refinement.Refine(to);
  std::optional<std::vector<Step>> refined_incumbent;
  if (incumbent != nullptr && IsMemoryBounded(options.strategy) && !incumbent->steps.empty()) {
    refined_incumbent = refinement.Refine(incumbent->steps);
    refined_incumbent->back().type = refined_to;  // Partial axes as the search lists them.
  }
  absl::StatusOr<Plan> plan =
      SynthesizeWholeAxes(refinement.refined(), refinement.Refine(from), refined_to, options,
                          gave_up, refined_incumbent ? &*refined_incumbent : nullptr, known_bounds);
  if (!plan.ok()) return plan.status();
  // Canonical endpoints: a plan must read back from its JSON whatever the caller's spelling.
  Plan coarse = CoarsenPlan(refinement.mesh(), *std::move(plan));
  DebugCheck(coarse, "coarsened an ill-typed plan");
  return coarse;
}

// Lexicographic objective of `options` (smaller is better).
bool Better(const Metrics& a, const Metrics& b, Objective objective) {
  if (objective == Objective::kBytes) {
    return std::tie(a.bytes_received_total, a.cost_us) <
           std::tie(b.bytes_received_total, b.cost_us);
  }
  return std::tie(a.cost_us, a.bytes_received_total) < std::tie(b.cost_us, b.bytes_received_total);
}

// Whether SplitGroups would return `plan`'s steps, refined, unchanged, seen without refining
// them: it rewrites only collectives over several atoms (gathers, reductions, all_to_alls),
// pairs of permutes in a row, and (under a model whose axes differ) gathers that a helper
// may shrink. Most plans have none of them; refining one costs more than this look.
bool SplitGroupsKeeps(const AxisRefinement& refinement, const Plan& plan, const CostModel& model) {
  if (!model.UniformOn(plan.mesh)) return false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Collective& op = plan.steps[i].op;
    if (op.kind == CollectiveKind::kCollectivePermute) {
      if (i > 0 && plan.steps[i - 1].op.kind == CollectiveKind::kCollectivePermute) return false;
    } else if (ChainsWhenGrouped(op.kind) &&
               (op.mesh_axes.size() > 1 || refinement.Atoms(op.mesh_axes[0]).size() > 1)) {
      return false;
    }
  }
  return true;
}

// `plan` (on refinement.mesh()) with SplitGroups applied on the refinement's atoms, when that
// is better under the objective; else `plan`. With `rival` (the metrics of a plan the result
// will compete with under the time objective), a split plan that costs more than the rival
// is not built (coarsened and checked): `plan`, costlier still, loses to the rival either way.
Plan SplitGroupCollectives(const AxisRefinement& refinement, Plan plan,
                           const SynthesisOptions& options, const Metrics* rival = nullptr) {
  if (SplitGroupsKeeps(refinement, plan, options.cost_model)) return plan;
  const Mesh& atoms = refinement.refined();
  const DistType from = refinement.Refine(plan.source);
  const std::vector<Step> refined = refinement.Refine(plan.steps);
  std::vector<Step> steps = SplitGroups(atoms, from, refined, options.cost_model);
  if (steps == refined) return plan;
  if (rival != nullptr &&
      RoundCostUs(CostUs(atoms, from, steps, options.cost_model)) > rival->cost_us) {
    return plan;
  }
  Metrics metrics =
      ComputeMetrics(atoms, from, steps, options.cost_model, plan.metrics.lower_bound_bytes_total);
  if (!Better(metrics, plan.metrics, options.objective)) return plan;
  // `plan` becomes the split plan on the atoms, then coarsened.
  plan.mesh = atoms;
  plan.source = from;
  plan.target = refinement.Refine(plan.target);
  plan.steps = std::move(steps);
  plan.metrics = metrics;
  Plan coarse = CoarsenPlan(refinement.mesh(), std::move(plan));
  DebugCheck(coarse, "split an ill-typed plan");
  return coarse;
}

bool SplitsAxes(Strategy strategy) {
  return strategy == Strategy::kNormal || strategy == Strategy::kOptimal;
}

// normal's plan for a pure move (types with sub-axes or without) under a model uniform on
// the mesh, from the exact solver of pure_move.h, without the valleys, passes and
// refinements of the general path (their plans are never faster); nullopt where the solver
// does not apply.
std::optional<Plan> PureMovePlan(const Mesh& mesh, const DistType& from, const DistType& to,
                                 const SynthesisOptions& options) {
  // Types naming sub-axes go to the solver, which tells whether every atom is used.
  const bool named = HasSubAxes(mesh, from) || HasSubAxes(mesh, to);
  const bool pure =
      named ? from.partial.empty() && to.partial.empty() : IsPureMove(mesh, from, to);
  if (options.strategy != Strategy::kNormal || options.objective != Objective::kModeledTime ||
      !pure || !CheckReshardable(mesh, from, to).ok() ||
      !CheckCostModel(mesh, options.cost_model).ok() || !options.cost_model.UniformOn(mesh)) {
    return std::nullopt;
  }
  std::optional<std::vector<Step>> steps =
      internal::PureMoveSteps(mesh, from, to, options.cost_model, options.sub_axes);
  if (!steps) return std::nullopt;
#ifndef NDEBUG
  // Its permute's pairs are built from the atom arrangement; MinimalPermute finds the same.
  if (!steps->empty() && steps->front().op.kind == CollectiveKind::kCollectivePermute) {
    RESHARD_CHECK(steps->front().op ==
                  MinimalPermute(mesh, from, steps->front().type, &options.cost_model))
        << "pure move: its permute's pairs differ from MinimalPermute's";
  }
#endif
  Plan plan;
  plan.mesh = mesh;
  // Canonical ends where the types name sub-axes, as SynthesizeRefined gives them; else as
  // the caller wrote them.
  plan.source = named ? Canonicalize(mesh, from) : from;
  plan.target = named ? Canonicalize(mesh, to) : to;
  if (!steps->empty()) steps->back().type = plan.target;
  plan.strategy = std::string(StrategyName(options.strategy));
  plan.steps = *std::move(steps);
  plan.cost_model = options.cost_model;
  // The bound by the searches' walk (LackingElements: fewer tuples, no allocation), which
  // reads whole axes only; types naming sub-axes take typesys's walk over the devices.
  plan.metrics = ComputeMetrics(mesh, plan.source, plan.steps, plan.cost_model,
                                named ? LowerBoundBytesTotal(mesh, from, to)
                                      : internal::ComputeLowerBounds(mesh, from, to).bytes_total);
  DebugCheck(plan, "synthesized an ill-typed pure move");
  RESHARD_CHECK(plan.metrics.peak_local_bytes <= MemoryBoundBytes(mesh, from, to))
      << "pure move plan exceeds the memory bound";
  return plan;
}

// Synthesize without the final check. `unproven`: when not null, set when `optimal`'s search
// on the prime-factor refinement gave up (Optimality::kWholeAxesOnly). `finest`: when not
// null, set to the prime-factor refinement of `mesh` the call built, if it built one: every
// axis reference of the plan returned nests with it (for the final check).
absl::StatusOr<Plan> SynthesizeUnchecked(const Mesh& mesh, const DistType& from, const DistType& to,
                                         const SynthesisOptions& options, bool* unproven = nullptr,
                                         std::optional<AxisRefinement>* finest = nullptr) {
  if (options.strategy == Strategy::kAuto) {
    // normal's whole plan (refinement, chains, its branch and bound) against direct's, which
    // refuses exchanges too large to build (ResourceExhausted): direct only when strictly
    // cheaper, as normal keeps the memory bound; normal's error when neither has a plan.
    SynthesisOptions each = options;
    each.strategy = Strategy::kNormal;
    absl::StatusOr<Plan> normal = SynthesizeUnchecked(mesh, from, to, each, nullptr, finest);
    each.strategy = Strategy::kDirect;
    absl::StatusOr<Plan> direct = SynthesizeUnchecked(mesh, from, to, each, nullptr, finest);
    absl::StatusOr<Plan>& chosen =
        direct.ok() && (!normal.ok() || direct->metrics.cost_us < normal->metrics.cost_us)
            ? direct
            : normal;
    if (chosen.ok()) chosen->strategy = std::string(StrategyName(Strategy::kAuto));
    return std::move(chosen);
  }
  if (std::optional<Plan> pure = PureMovePlan(mesh, from, to, options)) {
    if (finest != nullptr && HasSubAxes(mesh, pure->source, pure->steps)) {
      // Its atoms are the prime factors: the final check refines the plan onto them.
      absl::StatusOr<AxisRefinement> atoms = AxisRefinement::Create(mesh, {}, true);
      RESHARD_CHECK(atoms.ok()) << atoms.status();  // No references to reject.
      *finest = *std::move(atoms);
    }
    return *std::move(pure);
  }
  // Under the bytes objective ties go to fewer steps, which the chains of SplitGroups never
  // are. `optimal`'s plan is already split wherever that is cheaper, unless its search on the
  // finer mesh gave up: then splitting keeps it no worse than `normal`'s.
  const bool split_groups =
      options.objective == Objective::kModeledTime &&
      (options.strategy == Strategy::kNormal || options.strategy == Strategy::kOptimal);
  auto finish = [&](const AxisRefinement& finest, absl::StatusOr<Plan> plan,
                    const Metrics* rival = nullptr) {
    if (!plan.ok() || !split_groups) return plan;
    return absl::StatusOr<Plan>(SplitGroupCollectives(finest, *std::move(plan), options, rival));
  };
  const AxisList refs = SubAxisRefs(mesh, from, to);
  const bool split = options.sub_axes && SplitsAxes(options.strategy);
  if (refs.empty() && !split) {
    if (!split_groups) return SynthesizeWholeAxes(mesh, from, to, options);
    // The mesh as its own refinement: Create cannot fail without references.
    return finish(*AxisRefinement::Create(mesh, {}), SynthesizeWholeAxes(mesh, from, to, options));
  }
  if (absl::Status s = ValidateEnds(mesh, from, to); !s.ok()) return s;
  absl::StatusOr<AxisRefinement> coarse = AxisRefinement::Create(mesh, refs);
  if (!coarse.ok()) return coarse.status();
  // Without sub-axis references in the types, refining and coarsening are identities:
  // synthesize directly (SynthesizeRefined would only check the same plan a second time).
  // (A trivial refinement is not enough: `x:(1)4` on x = 4 must still be renamed to `x`.)
  // The lower bounds of the first pass serve the finer one (the same on any refinement).
  std::optional<internal::LowerBounds> bounds;
  absl::StatusOr<Plan> plan =
      refs.empty() ? SynthesizeWholeAxes(mesh, from, to, options, nullptr, nullptr, &bounds)
                   : SynthesizeRefined(*coarse, from, to, options, nullptr, nullptr, &bounds);
  if (!split || (refs.empty() && HasPrimeAxes(mesh))) return finish(*coarse, std::move(plan));
  absl::StatusOr<AxisRefinement> created =
      AxisRefinement::Create(mesh, refs, /*prime_factors=*/true);
  RESHARD_CHECK(created.ok()) << created.status();  // Refines `coarse`, which exists.
  std::optional<AxisRefinement> own;
  std::optional<AxisRefinement>& fine = finest != nullptr ? *finest : own;
  fine = *std::move(created);
  if (fine->refined().num_axes() == coarse->refined().num_axes()) {
    return finish(*coarse, std::move(plan));
  }
  // `normal` is a heuristic: it synthesizes on the finer mesh only where that may pay
  // (FinerPassMayPay), under a model where that ends its search (LowerBoundEndsSearch).
  // `optimal` always searches the finer mesh.
  // The plan as it leaves (its groups split into chains where that is better), when it was
  // built before the finer pass: then it meets no lower bound.
  std::optional<absl::StatusOr<Plan>> leaving;
  if (options.strategy != Strategy::kOptimal && plan.ok()) {
    if (!FinerPassMayPay(from, to, *plan) && LowerBoundEndsSearch(mesh, TimeModel(options))) {
      return finish(*fine, std::move(plan));
    }
    // When it meets both lower bounds, bytes (BytesLowerBound) and modeled time
    // (TimeLowerBoundUs, rounded as metrics are), no plan on whole axes or sub-axes (both
    // bounds are the same on a refinement) is better under either objective. Splitting never
    // lowers the bytes (a chain of gathers or scatters receives what the group collective
    // does, a chain of all_to_alls more), so a plan above the byte bound is not split here.
    if (refs.empty()) {
      const int64_t bytes_bound = BytesLowerBoundOf(mesh, from, to, plan->metrics);
      if (plan->metrics.bytes_received_total <= bytes_bound) {
        leaving = finish(*fine, *plan);
        const Metrics& split = (*leaving)->metrics;
        if (split.bytes_received_total <= bytes_bound &&
            split.cost_us <= RoundCostUs(TimeLowerBoundUs(mesh, options.cost_model, from, to))) {
          return *std::move(leaving);
        }
      }
    }
  }
  // Sub-axes can only add options; the finer search wins ties to the plan without them. When
  // `optimal`'s search on the finer mesh gives up, its branch-and-bound incumbent (`normal` on
  // that mesh) and `normal`'s own plan still compete: the result is then the best of three
  // plans, not a proven optimum of the finer vocabulary (docs/sub_axes.md).
  // The plan in hand bounds the finer synthesis (branch and bound): it only has to find
  // something strictly better, which prunes most of its middle and optimal searches.
  bool gave_up = false;
  absl::StatusOr<Plan> finer =
      finish(*fine, SynthesizeRefined(*fine, from, to, options, plan.ok() ? &gave_up : nullptr,
                                      plan.ok() ? &*plan : nullptr, &bounds));
  // (Built with the finer plan as rival it would be the same plan: it is not built only when
  // it is costlier than the rival, which then wins either way.)
  plan = leaving ? *std::move(leaving)
                 : finish(*fine, std::move(plan), finer.ok() ? &finer->metrics : nullptr);
  if (!plan.ok()) {
    if (finer.ok()) return finer;
    if (options.strategy != Strategy::kOptimal || !absl::IsResourceExhausted(finer.status())) {
      return plan;
    }
    // No whole-axis plan, and `optimal`'s search on the finer mesh gave up (its permute
    // classes can outgrow their cap where several size-1 axes are in play): NotFound would
    // claim that no plan exists. normal's plan below, unproven, when it has one; else the
    // search's status.
    plan = finer.status();
    gave_up = true;
  } else if (finer.ok() && Better(finer->metrics, plan->metrics, options.objective)) {
    finer->strategy = plan->strategy;
    plan = std::move(finer);
  }
  if (!gave_up) return plan;
  if (unproven != nullptr) *unproven = true;
  // Not proven: the plan in hand descends from optimal's whole-axis plan, which knows no
  // sub-axes, and from normal on the finer mesh bounded by it, which ranks its valleys before
  // finish() splits their groups. Normal's own plan can still be cheaper (e.g. a gather over
  // y = 4 that finish() splits into two of y:(m)2, against a whole-axis plan that needed
  // permutes): it competes, so that optimal is never worse than normal.
  SynthesisOptions normal_options = options;
  normal_options.strategy = Strategy::kNormal;
  absl::StatusOr<Plan> normal = SynthesizeUnchecked(mesh, from, to, normal_options);
  if (normal.ok() && (!plan.ok() || Better(normal->metrics, plan->metrics, options.objective))) {
    normal->strategy = std::string(StrategyName(options.strategy));
    return normal;
  }
  return plan;
}

// Size-1 axes: no two devices differ in them, so they split, gather and sum nothing, device ids
// do not depend on them, and the cost model prices them at nothing. Yet every search counts
// their placements as distinct types (a permute class grows by their orders), so the normal
// and optimal searches run on the mesh without them and the plan is lifted back (LiftSizeOne).
// Every plan on `mesh` maps to one on the stripped mesh with the same metrics (drop the size-1
// axes, and the steps over them alone), and lifting keeps the metrics, so an optimum there
// is one here. The baselines imitate other planners, size-1 axes included, and are left
// alone.
struct SizeOneStripped {
  Mesh mesh;
  DistType from, to;
  CostModel model;
};

bool IsSizeOne(const Mesh& mesh, const AxisName& axis) {
  return !IsSubAxisRef(axis) && mesh.AxisSize(axis) == 1;
}

// `type` without its size-1 axes: in its dimensions, and in its partial list unless
// `keep_partial` (a permute must keep those).
DistType WithoutSizeOne(const Mesh& mesh, DistType type, bool keep_partial = false) {
  auto drop = [&](AxisList& axes) {
    EraseAxesIf(axes, [&](const AxisName& axis) { return IsSizeOne(mesh, axis); });
  };
  for (Dim& dim : type.dims) drop(dim.axes);
  if (!keep_partial) drop(type.partial);
  return type;
}

// The stripped problem, or nothing when the mesh has no size-1 axis or only those.
std::optional<SizeOneStripped> StripSizeOne(const Mesh& mesh, const DistType& from,
                                            const DistType& to, const CostModel& model) {
  std::vector<MeshAxis> kept;
  for (const MeshAxis& axis : mesh.axes()) {
    if (axis.size > 1) kept.push_back(axis);
  }
  if (kept.size() == mesh.axes().size() || kept.empty()) return std::nullopt;
  absl::StatusOr<Mesh> stripped = Mesh::Create(std::move(kept));
  RESHARD_CHECK(stripped.ok()) << stripped.status();  // A subset of a valid mesh's axes.
  CostModel kept_model = model.OnAxesOf(*stripped);
  // Canonical there: pieces a size-1 axis kept apart may now merge (x:(1)2,u,x:(2)2 is x),
  // and the synthesis would otherwise keep them apart.
  DistType stripped_from = Canonicalize(*stripped, WithoutSizeOne(mesh, from));
  DistType stripped_to = Canonicalize(*stripped, WithoutSizeOne(mesh, to));
  return SizeOneStripped{*std::move(stripped), std::move(stripped_from), std::move(stripped_to),
                         std::move(kept_model)};
}

// `pieces` (a gather's or all_to_all's axes on the stripped mesh, all of size > 1) with the
// size-1 axes that sit among them at the end of `dim_axes` (a dimension on the full mesh),
// so that the collective takes the suffix whole, and the size-1 axes right before them that
// `absorb` accepts. Walks `dim_axes` from its minor end, matching each axis to the pieces whose
// sizes multiply to its own; stops at an axis the pieces only partly cover (they are sub-axes
// of it). ApplyRule judges the result: where the pieces do not line up with the axes, it fails.
AxisList WithSizeOneInSuffix(const Mesh& mesh, const AxisList& dim_axes, const AxisList& pieces,
                             absl::FunctionRef<bool(const AxisName&)> absorb) {
  AxisList reversed;
  size_t next = pieces.size();  // Pieces [0, next) are not matched yet.
  for (size_t a = dim_axes.size(); a > 0; --a) {
    const AxisName& axis = dim_axes[a - 1];
    const int64_t size = mesh.AxisSize(axis);
    if (size == 1) {
      if (next == 0 && !absorb(axis)) break;
      reversed.push_back(axis);
      continue;
    }
    if (next == 0) break;
    int64_t covered = 1;
    size_t first = next;
    while (first > 0 && covered < size) covered *= mesh.AxisSize(pieces[--first]);
    if (covered != size) break;  // Partly covered: the rest of the pieces are its sub-axes.
    for (size_t p = next; p > first; --p) reversed.push_back(pieces[p - 1]);
    next = first;
  }
  for (size_t p = next; p > 0; --p) reversed.push_back(pieces[p - 1]);
  std::reverse(reversed.begin(), reversed.end());
  return reversed;
}

// `pieces` (axes an all_slice or reduce_scatter appends to dimension `dim` of `current`) with
// the size-1 axes that `to`'s dimension has among and right after them, in `to`'s order, so
// that they need no renaming at the end. Only when `current`'s dimension plus the pieces is
// a prefix of `to`'s in digits (size-1 axes aside; pieces may be sub-axes of an axis `to`
// names whole), and only axes `current` does not use, or, when the step reduces (`reduces`),
// only axes it sums over. With no pieces: the size-1 axes that can be appended now.
AxisList WithTargetSizeOne(const Mesh& mesh, const DistType& current, const DistType& to, int dim,
                           const AxisList& pieces, bool reduces) {
  const AxisList& target = to.dims[dim].axes;
  std::vector<const AxisName*> sized;  // current's dimension, size-1 axes aside, then pieces.
  for (const AxisName& axis : current.dims[dim].axes) {
    if (!IsSizeOne(mesh, axis)) sized.push_back(&axis);
  }
  const size_t have = sized.size();
  for (const AxisName& axis : pieces) sized.push_back(&axis);
  // Match the sized axes' digits against target's, major to minor: each must take the top of
  // what is left of the current target axis. owner[j]: the target position axis j lies in.
  std::vector<size_t> owner(sized.size());
  size_t k = 0;
  int64_t top = 0, low = 0;  // Digits [low, top) of target[k] are not matched yet.
  int index = -1;
  for (size_t j = 0; j < sized.size(); ++j) {
    if (top == low) {  // The next target axis of size above 1.
      if (j > 0) ++k;
      while (k < target.size() && IsSizeOne(mesh, target[k])) ++k;
      if (k == target.size()) return pieces;
      const Mesh::Digit t = mesh.Resolve(target[k]);
      index = t.index;
      low = t.stride;
      top = t.stride * t.size;
    }
    const Mesh::Digit d = mesh.Resolve(*sized[j]);
    if (d.index != index || d.stride * d.size != top || d.stride < low) return pieces;
    top = d.stride;
    owner[j] = k;
  }
  const bool complete = top == low;  // The last sized axis ends target[k].
  // The first position from `position` on of an axis of size above 1, or the end.
  auto after = [&](size_t position) {
    while (position < target.size() && IsSizeOne(mesh, target[position])) ++position;
    return position;
  };
  // Where the pieces start: after have's last target axis when that is complete.
  size_t begin = 0;
  if (have > 0)
    begin = have == sized.size()
                ? (complete ? owner.back() + 1 : target.size())
                : (owner[have - 1] == owner[have] ? owner[have] : owner[have - 1] + 1);
  // Where they end: before the next target axis when the last is complete, else with it.
  const size_t end = sized.empty() ? after(0)
                     : complete    ? after(owner.back() + 1)
                                   : owner.back() + 1;
  AxisList out;
  size_t next_piece = have;
  for (size_t position = begin; position < end; ++position) {
    const AxisName& axis = target[position];
    if (!IsSizeOne(mesh, axis)) {
      while (next_piece < sized.size() && owner[next_piece] == position) {
        out.push_back(*sized[next_piece++]);
      }
      continue;
    }
    // A slice takes axes nothing uses; a reduce_scatter, partial ones (it sums over them all).
    if (AxisUse(current, axis) == (reduces ? kPartial : kUnused)) out.push_back(axis);
  }
  if (next_piece != sized.size()) return pieces;
  return out;
}

// `steps`, a plan on the stripped mesh from WithoutSizeOne(from) to WithoutSizeOne(to), as a
// plan on `mesh` from `from` to `to` with the same metrics. The size-1 axes of `from` ride
// along: a gather or all_to_all takes those inside the suffix it moves. Those of `to` join the
// all_slice or reduce_scatter that builds their dimension of `to` (WithTargetSizeOne). The
// partial ones `to` drops join the first reduction (at the end of a reduce_scatter's axes,
// unless `to` wants them among them or an all_reduce follows); without one, reduce_scatters
// where `to` wants them and an all_reduce over the rest come first or last, whichever takes
// fewer steps. A permute or all_to_all_v puts `to`'s size-1 axes where its result's dimensions
// agree with `to`'s so far. The last step, when it is a permute or all_to_all_v (whose result
// type is free), ends at `to`; else, where the size-1 axes still differ from `to`'s, a permute
// without pairs renames them. Where a step does not fit `from` (a size-1 axis between pieces of
// an axis that the stripped plan moves as one), a permute without pairs first drops the size-1
// axes from `from`'s dimensions. Requires valid types and no size-1 axis partial in `to` only.
// Nothing when no form fits: the caller then synthesizes on `mesh` itself.
std::optional<std::vector<Step>> LiftSizeOne(const Mesh& mesh, const DistType& from,
                                             const DistType& to, const std::vector<Step>& steps) {
  AxisList all_dropped;  // Partial size-1 axes of `from` that `to` drops.
  for (const AxisName& axis : from.partial) {
    if (IsSizeOne(mesh, axis) && AxisUse(to, axis) != kPartial) all_dropped.push_back(axis);
  }
  // Where the dropped axes are reduced: joining the plan's first reduction, or (when it has
  // none) in steps of their own first or last; last, a reduce_scatter can put them where `to`
  // wants them, sparing the renaming permute.
  enum class Reduce { kJoin, kFirst, kLast };
  size_t last_all_reduce = 0;  // Its index + 1; 0 without one.
  for (size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].op.kind == CollectiveKind::kAllReduce) last_all_reduce = k + 1;
  }
  auto lift = [&](const DistType& start, Reduce where) -> std::optional<std::vector<Step>> {
    std::vector<Step> lifted;
    if (start != from) lifted.push_back(Step{Collective::Permute({}), start});
    DistType current = start;
    AxisList dropped = all_dropped;  // Those not reduced yet.
    auto apply = [&](Collective op) {
      absl::StatusOr<DistType> out = ApplyRule(mesh, current, op);
      if (!out.ok()) return false;
      current = *std::move(out);
      EraseAxesIf(dropped,
                  [&](const AxisName& axis) { return AxisUse(current, axis) != kPartial; });
      lifted.push_back(Step{std::move(op), current});
      return true;
    };
    // Scattered where `to` wants them next in a dimension, the rest all_reduced.
    auto reduce_dropped = [&]() {
      for (int i = 0; i < current.rank() && !dropped.empty(); ++i) {
        AxisList axes = WithTargetSizeOne(mesh, current, to, i, {}, true);
        if (!axes.empty() && !apply(Collective::ReduceScatter(std::move(axes), i))) return false;
      }
      return dropped.empty() || apply(Collective::AllReduce(dropped));
    };
    if (where == Reduce::kFirst && !reduce_dropped()) return std::nullopt;
    for (size_t k = 0; k < steps.size(); ++k) {
      const Step& step = steps[k];
      Collective op = step.op;
      switch (op.kind) {
        case CollectiveKind::kAllGather:
        case CollectiveKind::kAllToAll:
          // Size-1 axes right before the moved ones go along when `to` does not want them
          // where they are (a gather drops them) or wants them where an all_to_all goes.
          op.mesh_axes = WithSizeOneInSuffix(
              mesh, current.dims[op.dim].axes, op.mesh_axes, [&](const AxisName& axis) {
                const int use = AxisUse(to, axis);
                return op.kind == CollectiveKind::kAllGather ? use != op.dim : use == op.split_dim;
              });
          break;
        case CollectiveKind::kAllSlice:
          op.mesh_axes = WithTargetSizeOne(mesh, current, to, static_cast<int>(op.dim),
                                           op.mesh_axes, /*reduces=*/false);
          break;
        case CollectiveKind::kReduceScatter:
          op.mesh_axes = WithTargetSizeOne(mesh, current, to, static_cast<int>(op.dim),
                                           op.mesh_axes, /*reduces=*/true);
          // The other dropped axes too (rather than a step of their own), at the end, unless
          // an all_reduce follows, which takes them without putting them in a dimension.
          if (last_all_reduce <= k + 1) {
            for (const AxisName& axis : dropped) {
              if (!ContainsAxis(op.mesh_axes, axis)) op.mesh_axes.push_back(axis);
            }
          }
          break;
        case CollectiveKind::kAllReduce:
          op.mesh_axes.insert(op.mesh_axes.end(), dropped.begin(), dropped.end());
          break;
        case CollectiveKind::kCollectivePermute:
        case CollectiveKind::kAllToAllV: {
          // Same blocks as the stripped result; the partial axes a permute must keep; `to`'s
          // size-1 axes where its dimensions so far agree with `to`'s (WithTargetSizeOne).
          DistType out = step.type;
          for (const AxisName& axis : current.partial) {
            if (IsSizeOne(mesh, axis)) out.partial.push_back(axis);
          }
          for (int i = 0; i < out.rank(); ++i) {
            DistType others = out;
            others.dims[i].axes.clear();
            out.dims[i].axes =
                WithTargetSizeOne(mesh, others, to, i, out.dims[i].axes, /*reduces=*/false);
          }
          current = out;
          lifted.push_back(Step{std::move(op), std::move(out)});
          continue;
        }
      }
      if (!apply(std::move(op))) return std::nullopt;
    }
    if (where == Reduce::kLast && !reduce_dropped()) return std::nullopt;
    if (!dropped.empty()) return std::nullopt;
    const bool same = current.dims == to.dims &&
                      PartialInMeshOrder(mesh, current) == PartialInMeshOrder(mesh, to);
    const bool free_result =
        !lifted.empty() && (lifted.back().op.kind == CollectiveKind::kCollectivePermute ||
                            lifted.back().op.kind == CollectiveKind::kAllToAllV);
    if (!same && !free_result) lifted.push_back(Step{Collective::Permute({}), current});
    if (!lifted.empty()) lifted.back().type = to;
    return lifted;
  };
  // From `from` itself, else (a size-1 axis of `from` between pieces a step moves as one)
  // from `from` without its size-1 dimension axes, after a permute without pairs.
  // Pieces the size-1 axes kept apart merge.
  const DistType bare = Canonicalize(mesh, WithoutSizeOne(mesh, from, /*keep_partial=*/true));
  for (const DistType* start : {&from, &bare}) {
    if (std::optional<std::vector<Step>> joined = lift(*start, Reduce::kJoin)) return joined;
    std::optional<std::vector<Step>> first = lift(*start, Reduce::kFirst);
    std::optional<std::vector<Step>> last = lift(*start, Reduce::kLast);
    if (last && (!first || last->size() < first->size())) return last;
    if (first) return first;
  }
  return std::nullopt;
}

// The plan for `from` -> `to` on `mesh`, synthesized on `stripped` and lifted (LiftSizeOne),
// or synthesized on `mesh` itself where lifting does not fit.
absl::StatusOr<Plan> Lifted(const Mesh& mesh, const DistType& from, const DistType& to,
                            const SynthesisOptions& options, const SizeOneStripped& stripped,
                            bool* unproven) {
  SynthesisOptions on_stripped = options;
  on_stripped.cost_model = stripped.model;
  auto on_mesh = [&] {
    if (unproven != nullptr) *unproven = false;
    return SynthesizeUnchecked(mesh, from, to, options, unproven);
  };
  absl::StatusOr<Plan> plan =
      SynthesizeUnchecked(stripped.mesh, stripped.from, stripped.to, on_stripped, unproven);
  // Inputs it rejects (element types or shapes differ, ...): as the user wrote them.
  if (absl::IsInvalidArgument(plan.status())) return on_mesh();
  if (!plan.ok()) {
    // A search gave up or found no plan; its message may print the types without their
    // size-1 axes: say where it ran.
    return absl::Status(
        plan.status().code(),
        absl::StrCat(plan.status().message(), " (synthesized on ", stripped.mesh.ToString(),
                     ", the mesh without its size-1 axes)"));
  }
  Plan lifted;
  lifted.mesh = mesh;
  lifted.source = from;
  lifted.target = to;
  lifted.strategy = std::move(plan->strategy);
  std::optional<std::vector<Step>> steps = LiftSizeOne(mesh, from, to, plan->steps);
  if (!steps) return on_mesh();
  lifted.steps = *std::move(steps);
  // The stripped types merge pieces the size-1 axes kept apart (`z:(1)3,x,z:(3)2` with x of
  // size 1 is `z`), and the stripped synthesis splits z by its prime factors, smallest first
  // (z:(1)2, z:(2)3): its pieces need not nest with the user's. Such a plan is synthesized
  // on the user's mesh instead.
  if (!SubAxisRefs(mesh, from, to).empty() &&
      !AxisRefinement::Create(mesh, SubAxisRefs(mesh, from, lifted.steps)).ok()) {
    return on_mesh();
  }
  lifted.cost_model = options.cost_model;
  // Size-1 axes split nothing: the bytes to receive are the stripped plan's.
  lifted.metrics = ComputeMetrics(mesh, from, lifted.steps, lifted.cost_model,
                                  plan->metrics.lower_bound_bytes_total);
  return lifted;
}

// SynthesizeUnchecked, on the mesh without its size-1 axes where that applies (StripSizeOne).
// Inputs it would reject go to SynthesizeUnchecked as they are, so errors name them.
// `finest`: as for SynthesizeUnchecked, set only where `mesh` itself was refined.
absl::StatusOr<Plan> SynthesizeWithoutSizeOne(const Mesh& mesh, const DistType& from,
                                              const DistType& to, const SynthesisOptions& options,
                                              bool* unproven,
                                              std::optional<AxisRefinement>* finest) {
  const bool ours = options.strategy == Strategy::kNormal ||
                    options.strategy == Strategy::kOptimal ||
                    options.strategy == Strategy::kDirect || options.strategy == Strategy::kAuto;
  const bool size_one = HasSizeOneAxis(mesh);
  // The checks that must see the size-1 axes (CheckReshardable compares partial axes by
  // name, and pieces would need refining first: the synthesis on the stripped mesh checks the
  // rest, with messages that name no type).
  auto strippable = [&] {
    if (!ValidateEnds(mesh, from, to).ok() || !CheckCostModel(mesh, options.cost_model).ok()) {
      return false;
    }
    return std::none_of(to.partial.begin(), to.partial.end(), [&](const AxisName& axis) {
      return IsSizeOne(mesh, axis) && AxisUse(from, axis) != kPartial;
    });
  };
  std::optional<SizeOneStripped> stripped;
  if (ours && size_one && strippable()) {
    stripped = StripSizeOne(mesh, from, to, options.cost_model);
  }
  if (!stripped) return SynthesizeUnchecked(mesh, from, to, options, unproven, finest);
  // Types with sub-axes get canonical endpoints, as SynthesizeRefined gives them.
  if (!SubAxisRefs(mesh, from, to).empty()) {
    return Lifted(mesh, Canonicalize(mesh, from), Canonicalize(mesh, to), options, *stripped,
                  unproven);
  }
  return Lifted(mesh, from, to, options, *stripped, unproven);
}

// The identity reshard, which a partitioner meets on every edge whose two shardings already
// agree: the plan without steps (what every memory-bounded strategy returns for it), built
// without the refinements, lower bounds and passes of a call (~30 k instructions of them,
// docs/benchmarks.md). nullopt for strategies that may move data anyway (naive gathers
// first), types naming sub-axes (the general path gives them canonical names), and input the
// general path must reject with its own message.
std::optional<Plan> IdentityPlan(const Mesh& mesh, const DistType& from, const DistType& to,
                                 const SynthesisOptions& options) {
  const bool ours = options.strategy == Strategy::kNormal ||
                    options.strategy == Strategy::kOptimal || options.strategy == Strategy::kAuto;
  // `to` is `from` up to the order of its partial axes: its checks are `from`'s, and
  // CheckReshardable's comparisons of the two hold.
  if (!ours || !(from == to) || HasSubAxes(mesh, from) || !Validate(mesh, from).ok() ||
      !CheckCostModel(mesh, options.cost_model).ok()) {
    return std::nullopt;
  }
  Plan plan;
  plan.mesh = mesh;
  plan.source = from;
  plan.target = to;
  plan.strategy = std::string(StrategyName(options.strategy));
  plan.cost_model = options.cost_model;
  // Every device holds its target block (and summand) already: nothing to receive.
  plan.metrics = ComputeMetrics(mesh, from, plan.steps, plan.cost_model,
                                /*lower_bound_bytes_total=*/0);
  if (options.strategy == Strategy::kOptimal) plan.optimality = Optimality::kProven;
  return plan;
}

}  // namespace

absl::StatusOr<Plan> Synthesize(const Mesh& mesh, const DistType& from, const DistType& to,
                                const SynthesisOptions& options) {
  if (std::optional<Plan> identity = IdentityPlan(mesh, from, to, options)) {
    DebugCheck(*identity, "synthesized an ill-typed identity plan");
    return *std::move(identity);
  }
  bool unproven = false;
  std::optional<AxisRefinement> finest;  // Saves the final check a refinement of its own.
  absl::StatusOr<Plan> plan = SynthesizeWithoutSizeOne(mesh, from, to, options, &unproven, &finest);
  if (!plan.ok()) return plan;
  CheckOrDie(*plan, "synthesized an ill-typed plan", finest ? &*finest : nullptr);
  if (options.strategy == Strategy::kOptimal) {
    plan->optimality = unproven ? Optimality::kWholeAxesOnly : Optimality::kProven;
  }
  return plan;
}

}  // namespace reshard
