// search_bounds.h — internal to synth/: the bound arithmetic shared by the two forms of the
// plan search (SearchPlanOnDistTypes in search.cc, CompactSearch in compact_search.cc).
//
// Both searches must compute the same numbers in the same arithmetic (their results, statistics
// and work are tested equal), so the formulas live here once and each search only supplies the
// quantities it derives from its own representation of types.
#ifndef RESHARD_SYNTH_SEARCH_BOUNDS_H_
#define RESHARD_SYNTH_SEARCH_BOUNDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "synth/placement.h"
#include "synth/search.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard::internal {

// A search heuristic's lower bounds on the rest of any path from a type to the target:
// modeled time (time mode; 0 otherwise) and total bytes received (bytes mode with
// SearchOptions::bytes_bound; else 0), which order the queue; `bytes_floor` is the byte bound
// whenever bytes_bound is set, in time mode too, where it only prunes (WithinSearchBounds) and
// leaves the order of equally fast paths (so bytes_floor >= bytes, equal in bytes mode).
struct RestBound {
  double us = 0;
  int64_t bytes = 0;
  int64_t bytes_floor = 0;
};

// BytesLowerBound from ComputeLowerBounds' bytes_total and pending summands K, where `unit`
// is GlobalElements(to) * NumSummands(to) * element bytes. With a reduction over K summands
// pending, each of the N (element, target summand) classes needs K - 1 receives that merge
// partial sums plus one more for every further target holder (only the device completing the
// last merge can end with it): sum over classes of (K - 1) + (R - 1) = (target bytes summed
// over devices) + (K - 2) * N * element bytes. bytes_total counts the first term. Saturated.
int64_t PendingBytesBound(int64_t bytes_total, int64_t pending, __int128 unit);
// PendingBytesBound's unit for the target `to`.
__int128 PendingUnit(const Mesh& mesh, const DistType& to);

// TimeLowerBoundUs from the per-device maximum of lacking elements (`worst_elements`), the
// byte bound (`bytes_bound`, PendingBytesBound's total), the devices and PiecesNeeded. A
// step's modeled time is a latency part ((k - 1) alphas) plus a transfer part, and each part
// has its own bound over the rest of the plan. Latency: at least LatencyRounds(pieces) alphas,
// and one when anything is lacking. Transfer: every step takes at least its largest
// per-device receive over the fastest bandwidth, and the steps' largest receives add up to at
// least the largest per-device total, which is at least the lacking elements of the worst
// device and at least the average total, bytes_bound / devices (which exceeds the former only
// while a reduction is pending; callers without a pending reduction may pass 0).
// `crossing_alpha_us` (CrossingAlphaUs, or 0): one of those latency terms belongs to a step
// that crosses an axis of that alpha, so the latency part is at least that alpha plus the
// fastest alpha for each further round.
// `slice_transfer_us` (SliceTransferUs over the slow axes, or 0): a second bound on the
// transfer part, which takes the larger.
double TimeBoundUs(const AxisCost& fastest, int64_t worst_elements, int64_t element_bytes,
                   int64_t bytes_bound, int64_t devices, int64_t pieces,
                   double crossing_alpha_us, double slice_transfer_us);
// TimeBoundUs for the pair `from` -> `to` under `model`: `bounds` is ComputeLowerBounds(mesh,
// from, to), `bytes_bound` its PendingBytesBound; the crossing alpha from CrossingAlphaUs.
double TimeBoundOf(const Mesh& mesh, const CostModel& model, const DistType& from,
                   const DistType& to, const LowerBounds& bounds, int64_t bytes_bound,
                   double slice_transfer_us);

// The slice bound on the transfer part of the rest of a plan (docs/synthesis.md, "The slice
// bound"). Take a set S of mesh axes of size >= 2, none of them partial, and let g be the
// largest bandwidth among them. A slice is the set of devices with given coordinates on the
// axes of S. Only steps that cross an axis of S (a collective whose group spans it, a permute
// with a pair differing on it) move data into a slice, and such a step's transfer term is at
// least its largest per-device receive over g (the step's slowest axis is no faster). So the
// elements some device of a slice needs and no device of it holds, spread over the slice's
// devices, over g, bound the transfer terms of those steps. A step lowers the lacking
// elements by no more than it moves into the slice, so the bound stays consistent. Without
// pending summands, and with the type's partial axes those of the target (else the caller
// passes 0), each summand layer of a slice counts alone, the same for every layer. The
// searches take, for each bandwidth g below the fastest axis's, S = the non-partial axes of
// size >= 2 whose bandwidth is at most g, and two of its slices (MoreLackingSlice).
//
// One dimension: its size and its axes in the type and in the target (SliceDigits, whose
// slots are positions in S's list of coordinates).
struct SliceDim {
  int64_t size = 0;
  const SliceDigits* type = nullptr;
  const SliceDigits* target = nullptr;
};
// The elements that the devices of the slice with coordinates `coords` (by slot) and one
// summand layer need in the target and none of them holds. Within that set of devices the
// axes outside S vary freely and each dimension has its own axes, so what they hold (and
// need) is a product over the dimensions of the indices whose digits of S's axes are the
// coordinates; the lacking elements are the needed product minus the product of the
// per-dimension intersections. Adds its work to `*work`: a unit per dimension, and where
// both types have axes of S, the intervals it walks times the digits it reads for each
// (at most the mesh's devices per dimension).
int64_t SliceLackingElements(const SliceDim* dims, int rank, const int64_t* coords,
                             int64_t* work);
// The more lacking elements (SliceLackingElements) of two slices of S, whose axes have sizes
// `sizes` (count of them, by slot): the slice of zeros and the slice of largest coordinates.
// The slice of zeros, where block 0 of every dimension sits, tends to lack the least; trying
// every slice (up to 16) proved no more suite plans and made `optimal` slower (docs/
// synthesis.md). Which slices these are does not depend on how the mesh is refined (a whole
// axis's coordinate and its atoms' digits name the same devices), so neither does the bound.
int64_t MoreLackingSlice(const SliceDim* dims, int rank, const int64_t* sizes, int count,
                         int64_t* work);
// One set S: its bandwidth g, each mesh axis's slot in it (-1 when not in it), the sizes of
// its axes by slot, and the devices of one of its slices in one summand layer.
struct SliceSet {
  double gbps = 0;
  std::vector<int> slot;
  std::vector<int64_t> sizes;
  int64_t devices = 1;
};
// The sets the searches use, by mesh axis: for each bandwidth g below `fastest_gbps` among the
// `eligible` axes (size >= 2, not partial), at its first such axis in mesh order, S = the
// eligible axes whose bandwidth is at most g. `layers`: the product of the partial axes'
// sizes (for SliceSet::devices).
std::vector<SliceSet> SliceSets(const std::vector<double>& gbps,
                                const std::vector<int64_t>& sizes,
                                const std::vector<bool>& eligible, double fastest_gbps,
                                int64_t devices, int64_t layers);
// `lacking` elements spread over `slice_devices` (the devices of a slice in one summand
// layer: devices / (the sizes of S's axes times those of the partial axes)), at `gbps`.
double SliceTransferUs(double gbps, int64_t lacking, int64_t element_bytes,
                       int64_t slice_devices);

// Whether a path with lower bounds (us, bytes) on its final cost may beat options.incumbent
// (always without one): strictly faster beyond a relative tolerance of 1e-9, or as fast
// within it and strictly fewer bytes (bytes mode: strictly fewer bytes).
bool CanBeatIncumbent(const SearchOptions& options, double us, int64_t bytes);

// Whether the search from a source whose rest bounds are `source` can end before its first
// expansion: no path, all of which start at the source, can stay within max_cost /
// max_cost_us and beat options.incumbent when there is one (WithinSearchBounds at cost 0).
// The queue's own checks cannot see this. Without an incumbent the source is queued whatever
// its bound, and its expansion generates every neighbour only to drop each one (the bound is
// consistent: none can come in under the source's); `normal`'s middle searches, whose budget
// is what the best valley so far leaves, mostly end that way (docs/synthesis.md, "Strategy
// `optimal`", pruning). With an incumbent the queue's check uses the queue's byte key, which
// is 0 in time mode, so at the source it would explore every path as fast as the incumbent,
// looking for fewer bytes than the byte floor allows (e.g. an incumbent that is one permute
// moving only what devices lack, at one alpha).
bool SourceOutOfBounds(const SearchOptions& options, const RestBound& source);
// How the NotFound of a search that SourceOutOfBounds ends continues "no plan from X to Y".
const char* SourceOutOfBoundsReason(const SearchOptions& options);
// `type` as a search's failure messages name it: printed when options.describe_failures, else
// `unnamed` ("the source", "the target").
std::string FailureText(const SearchOptions& options, const DistType& type, const char* unnamed);

// Branch and bound: whether a path of cost (us, cost) so far, whose rest costs at least
// (rest_us, bytes_floor), can still stay within options.max_cost and max_cost_us and beat the
// incumbent, with the byte floor deciding among paths as fast as the incumbent. A node outside
// is kept (a cheaper path may reach it later) but not queued.
bool WithinSearchBounds(const SearchOptions& options, double us, int64_t cost, double rest_us,
                        int64_t bytes_floor);

// Whether no permute edge from a state into its permute class can lead to a plan within
// options.max_cost and options.max_cost_us, when every permute to another member moves at
// least one device (no size-1 axis in play): such an edge receives at least the state's local
// bytes `in_bytes` and costs at least the cheapest permute (fastest alpha + in_bytes over the
// fastest bandwidth), and every member shares the state's local shape and partial axes, hence
// its `pieces` (PiecesNeeded), so the time bound of the search's heuristic (`growth`: the
// middle's MiddleGrowthBound, or null) is at least alpha * LatencyRounds(pieces) and
// growth(pieces) at every member (when pieces > 1 some device lacks elements). A search skips
// such a class without enumerating it: every edge into it would be dropped or never queued.
// `path_us` and `path_bytes`: the cost of the best path to the state.
bool PermuteClassOutOfBounds(const SearchOptions& options, const AxisCost& fastest,
                             MiddleGrowthBound* growth, int64_t pieces, double path_us,
                             int64_t path_bytes, int64_t in_bytes);

}  // namespace reshard::internal

#endif  // RESHARD_SYNTH_SEARCH_BOUNDS_H_
