// search_bounds.h — internal to synth/: the bound arithmetic shared by the two forms of the
// plan search (SearchPlanOnDistTypes in search.cc, CompactSearch in compact_search.cc).
//
// Both searches must compute the same numbers in the same arithmetic (their results, statistics
// and work are tested equal), so the formulas live here once and each search only supplies the
// quantities it derives from its own representation of types.
#ifndef RESHARD_SYNTH_SEARCH_BOUNDS_H_
#define RESHARD_SYNTH_SEARCH_BOUNDS_H_

#include <cstdint>

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

// The slice bound on the transfer part of the rest of a plan, for a mesh axis a of size k >= 2
// slower than the fastest axis (docs/synthesis.md, "The slice bound"). An a-slice is the set
// of devices with one coordinate c on a. Only steps that cross a (a collective over a group
// spanning a, a permute with a pair differing on a) move data into a slice, and such a step's
// transfer term is at least its largest per-device receive over a's bandwidth (the group's is
// no faster). So the elements some device of a slice needs and no device of it holds, spread
// over the slice's devices, are a lower bound on the sum of those steps' largest receives:
// over a's bandwidth, on their transfer terms. A step lowers the lacking elements by no more
// than it moves into the slice, so the bound stays consistent. Without pending summands, and
// with the type's partial axes those of the target (else the caller passes 0), each summand
// layer of a slice counts alone, the same for every layer.
//
// One dimension of the type: its size, and a's stride there in the type and in the target
// (the local size times the sizes of the axes after a; 0 when a is not in that dimension).
struct SliceDim {
  int64_t size = 0;
  int64_t stride = 0;
  int64_t stride_to = 0;
};
// The elements that the devices of one a-slice and one summand layer need in the target and
// none of them holds, the most over the slice coordinates c. Within such a set of devices the
// axes other than a vary freely and each dimension has its own axes, so what they hold (and
// need) is a product over the dimensions of the indices whose digit of a (floor(e / stride)
// mod k) is c, or every index when a is not there; the lacking elements are the needed
// product minus the product of the per-dimension intersections. Adds the iterations of its
// counting loop to `*work` (at most the devices of the mesh per dimension and coordinate).
int64_t SliceLackingElements(const SliceDim* dims, int rank, int64_t k, int64_t* work);
// `lacking` elements spread over `slice_devices` (the devices of an a-slice in one summand
// layer: devices / (k times the sizes of the partial axes)), over a's bandwidth.
double SliceTransferUs(const AxisCost& axis, int64_t lacking, int64_t element_bytes,
                       int64_t slice_devices);

// Whether a path with lower bounds (us, bytes) on its final cost may beat options.incumbent
// (always without one): strictly faster beyond a relative tolerance of 1e-9, or as fast
// within it and strictly fewer bytes (bytes mode: strictly fewer bytes).
bool CanBeatIncumbent(const SearchOptions& options, double us, int64_t bytes);

// Whether the search from a source whose rest bounds are `source` can end before its first
// expansion: options has an incumbent, and no path, all of which start at the source, can
// beat it or stay within max_cost / max_cost_us (WithinSearchBounds at cost 0). The queue's
// own check cannot see this: it uses the queue's byte key, which is 0 in time mode, so at the
// source it would explore every path as fast as the incumbent, looking for fewer bytes than
// the byte floor allows (e.g. an incumbent that is one permute moving only what devices lack,
// at one alpha).
bool SourceCannotBeatIncumbent(const SearchOptions& options, const RestBound& source);

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
