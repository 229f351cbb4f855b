// placement.h — per-device quantities of distributed types without per-device allocations
// (internal to synth/).
//
// A device's block index in dimension i is a mixed-radix number of its coordinates, so it is a
// linear function of the coordinates: block_i(d) = sum over the axes a of dimension i of
// coord_a(d) * stride_i(a). The same holds for the summand index and for the placement key
// (block indices and summand packed into one integer). The helpers here exploit that:
// MovedDevices counts the devices a permute must move without visiting the devices (a count
// of solutions of one linear equation over the coordinates), and the per-device loops that
// remain (pairs of a permute, the lower bounds) walk the devices with an odometer that updates
// the indices incrementally instead of decomposing every device id.
//
//   int64_t moved = internal::MovedDevices(mesh, in, out);   // in, out: same local shape
//   internal::LowerBounds lb = internal::ComputeLowerBounds(mesh, from, to);
#ifndef RESHARD_SYNTH_PLACEMENT_H_
#define RESHARD_SYNTH_PLACEMENT_H_

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard::internal {

// Number of devices whose block (all dimensions) or summand differs between `in` and `out`:
// the targets of the minimal permute from `in` to `out`. Both valid on mesh with the same
// element type, global shape, partial axes and local shape. Cost: a count over the
// coordinates of the axes whose role differs, at most O(devices) and usually far less
// (e.g. 1024 steps for a transpose on a 1024x1024 mesh). When `work` is not null it receives
// the number of steps taken, for callers that budget their work.
int64_t MovedDevices(const Mesh& mesh, const DistType& in, const DistType& out,
                     int64_t* work = nullptr);

// How one mesh axis enters a placement key (see placement.cc): accumulator `slot` (-1: not
// at all) grows by `weight` per unit of the axis coordinate.
struct AxisRole {
  int slot = -1;
  int64_t weight = 0;
};

// Per mesh axis, its weight in the placement key ((b_0 * B_1 + b_1) * B_2 + ...) * S + summand
// (B_i blocks of dimension i, S summands; every role has slot 0, or -1 for an axis outside the
// key). Two types with the same local shape and partial axes have the same B_i and S, so
// their keys agree exactly where the placements agree. Callers that count one type against
// many (a search relaxing a permute class) build each type's roles once.
std::vector<AxisRole> KeyRoles(const Mesh& mesh, const DistType& type);

// KeyRoles' weights without the roles: writes mesh.num_axes() values to `weights`, the
// weight of each axis (0 for an axis outside the key). key(d) = sum over the axes of
// coord_a(d) * weights[a]. For callers that only count or compare keys (MovedDevices prices
// every permute of every candidate valley: role vectors were most of its cost).
void KeyWeights(const Mesh& mesh, const DistType& type, int64_t* weights);

// keys[d] = sum_i digit_i(d) * weights[i] for every d < prod(sizes), where d counts in mixed
// radix `sizes` (digit 0 most major, as device ids count over mesh axes): every device's key
// in id order, e.g. from KeyWeights. Built digit by digit, each key so far expanded in place by
// the next digit's values: one add per key, where an odometer over the digits cost ~35
// instructions per device. `keys` holds prod(sizes) values.
inline void RowMajorKeys(absl::Span<const int64_t> sizes, const int64_t* weights, int64_t* keys) {
  keys[0] = 0;
  int64_t filled = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t size = sizes[i], w = weights[i];
    // From the back, so that no key is overwritten before it is expanded.
    for (int64_t j = filled - 1; j >= 0; --j) {
      const int64_t base = keys[j];
      int64_t* out = keys + j * size;
      for (int64_t c = size - 1; c >= 0; --c) out[c] = base + c * w;
    }
    filled *= size;
  }
}

// Meshes of at most this many devices have placement keys below 256 (a key numbers one of at
// most `devices` placements), so one byte per device holds them: see PlacementKeyBytes.
inline constexpr int64_t kKeyByteDevices = 256;
// Every device's placement key under given roles (KeyRoles), one byte each, on a mesh
// of at most kKeyByteDevices devices. The number of positions where two such vectors differ
// is MovedDevicesFromRoles' count, without its enumeration: for callers that count one type
// against many (a search relaxing a permute class). Holds the mesh's coordinates, one byte
// per device and axis, so that a key vector is a sum of weight x coordinate rows (exact in
// bytes: every partial sum is at most the final key, below 256).
class PlacementKeyBytes {
 public:
  explicit PlacementKeyBytes(const Mesh& mesh);
  std::vector<uint8_t> operator()(const std::vector<AxisRole>& roles) const;
  // The same from the roles' per-axis weights (0 for an axis outside the key).
  std::vector<uint8_t> operator()(absl::Span<const int64_t> weights) const;

 private:
  int64_t devices_;
  std::vector<std::vector<uint8_t>> coordinates_;  // [axis][device]; empty for size-1 axes.
};
// The number of positions where `a` and `b` (same length) differ.
int64_t CountDifferentBytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// MovedDevices from the placement-key roles of both types (KeyRoles of `in` and `out`, one per
// mesh axis): the same count and the same `work` as MovedDevices. For callers that build the
// roles themselves (a search counting one type against many). On meshes of up to 4 096
// devices it enumerates only the coordinates of the axes whose weights differ, solving for
// the largest, but charges `work` as the walk over the devices it replaces.
int64_t MovedDevicesFromRoles(const Mesh& mesh, const std::vector<AxisRole>& key_in,
                              const std::vector<AxisRole>& key_out, int64_t* work = nullptr);
// The same from the roles' per-axis weights (0 for an axis outside the key).
int64_t MovedDevicesFromWeights(const Mesh& mesh, absl::Span<const int64_t> w_in,
                                absl::Span<const int64_t> w_out, int64_t* work = nullptr);

// A placement held by more devices than this is paired in id order rather than by the
// quadratic cheapest-link greedy of MinimalPermute (bounds its work on large meshes).
inline constexpr size_t kGreedyPairingLimit = 64;
// MinimalPermute's greedy under a cost model: which holder of a placement each device that
// needs it takes. A link costs the slowest of the axes in which its two devices differ
// (CostModel::Between), and a cheaper link has the smaller alpha, then the larger bandwidth,
// then fewer differing axes.
class LinkOrder {
 public:
  // `axis_sizes` and `axis_cost`: per mesh axis.
  LinkOrder(absl::Span<const int64_t> axis_sizes, const AxisCost* axis_cost);

  // Forgets the devices added.
  void Clear();
  // Adds the next device, by its coordinates (one per axis).
  void Add(const int64_t* coord);
  // One step of the greedy: the position in `sources` (the remaining holders of one
  // placement, in id order; numbered in the order of Add) of the holder that device `target`
  // takes: the one behind the cheapest link, the first of equals. `sources` is not empty and
  // does not hold `target`.
  size_t CheapestSource(absl::Span<const int64_t> sources, int64_t target) const;

 private:
  // A rank from the places of the link's slowest alpha and bandwidth and its axis count.
  static uint64_t Encode(uint64_t alpha, uint64_t gbps, uint64_t differing) {
    return (alpha << 40) | (gbps << 20) | differing;
  }
  // The rank of the link between devices i and j: smaller is cheaper, equal is as cheap.
  uint64_t Rank(int64_t i, int64_t j) const;
  // No link from `sources` to `target` ranks below this: the rank of the axes on which all
  // sources agree and the target differs (every such link crosses them; a link crossing more
  // axes ranks no lower), or floor_. A scan reaching it can stop: in structured permutes a
  // device's partner, differing only where it must, comes first.
  uint64_t Floor(absl::Span<const int64_t> sources, int64_t target) const;

  int k_ = 0;
  // Per axis, the place of its alpha (the number of axes with a smaller one) and of its
  // bandwidth (with a larger one): a link's rank is the largest of each over its differing
  // axes, then their count, packed in one integer, so a scan compares integers rather than
  // pairs of doubles.
  absl::InlinedVector<uint32_t, 8> alpha_place_, gbps_place_;
  // The smallest rank: no link crossing several axes ranks below every one-axis link.
  uint64_t floor_ = 0;
  // When every axis costs the same and the coordinates fit: a device is one word holding a
  // field per axis, its top bit a zero guard, so the differing axes of two devices are the
  // guard bits of x + low_ for x their XOR (a nonzero field carries into its guard, and no
  // carry leaves a field), and the rank is their count. Else k_ coordinates per device.
  bool packed_ = false;
  uint64_t low_ = 0, guards_ = 0;
  absl::InlinedVector<int, 8> shift_;
  std::vector<int64_t> rows_;
};

// The byte lower bound of LowerBoundBytesTotal (same value) and the per-device maximum of the
// lacking elements that TimeLowerBoundUs uses, in one allocation-free pass over the devices.
struct LowerBounds {
  int64_t bytes_total = 0;            // == LowerBoundBytesTotal(mesh, from, to).
  int64_t max_lacking_elements = 0;   // Max over devices of target elements not yet held.
  // Summands a reduction still has to add up: the product of the sizes of from's partial
  // axes that to does not keep.
  int64_t pending = 1;
  // PiecesNeeded(local shapes of from and to, pending).
  int64_t pieces = 1;
};
LowerBounds ComputeLowerBounds(const Mesh& mesh, const DistType& from, const DistType& to);

// One type's axes of size above 1 in one dimension, major to minor, each with its slot in a
// list of fixed coordinates (-1 when its digit is free). Axes of size 1 are left out: their
// digit is always 0. A mesh of at most kMaxDevices devices has at most 20 axes of size above 1.
inline constexpr int kMaxSliceDigits = 24;
struct SliceDigits {
  int count = 0;
  int32_t size[kMaxSliceDigits];
  int8_t slot[kMaxSliceDigits];
  void Add(int64_t axis_size, int slot_in_s) {
    size[count] = static_cast<int32_t>(axis_size);
    slot[count++] = static_cast<int8_t>(slot_in_s);
  }
};
// The product of the sizes of the fixed digits (1 when none is).
int64_t FixedProduct(const SliceDigits& digits);
// A dimension of size n read in the mixed radix of a type's axes, major to minor, has the
// type's local size as its least significant radix. Of its indices, those whose fixed digits
// in `a` and in `b` are the coordinates `coords` (by slot): how many lie in both sets. Walks
// the intervals of the set with fewer, counting the other's members in each (a walk down its
// digits at both ends). Adds its work to `*work`: a unit, and where both sets have fixed
// digits the intervals walked times the digits of the other.
int64_t CommonIndices(int64_t n, const SliceDigits& a, const SliceDigits& b, const int64_t* coords,
                      int64_t* work);

// Over the devices of a mesh with axis sizes `sizes`, for two types without pending summands
// whose blocks are given by per-axis roles (slot = dimension, weight = the axis's stride in
// that dimension's block index; slots outside [0, rank) are ignored) and local shapes: the
// most target elements any device lacks, and (with `need_total`; else -1) their sum over the
// devices. Exact, by one of three walks (`walk`: the cheapest by a count of visits, unless a
// test forces one):
// - kEveryTuple visits every tuple of coordinates of the axes that split a dimension in
//   either type (devices that differ only elsewhere hold alike);
// - kFixedTuples visits every tuple of the axes that split a dimension in both types. A
//   device holds prod_i overlap_i, where overlap_i depends only on the axes of dimension i in
//   either type, so given those fixed coordinates the dimensions are independent, and each
//   one's free digits (axes of one type only) are counted, not walked: the sum of overlaps
//   is the indices both types' free blocks cover (CommonIndices), the least overlap follows
//   from how many blocks of one side meet each block of the other (at most 2 blocks need
//   looking at). E.g. 6 144 devices whose types share one axis of size 6: 6 tuples.
// - kByDimension visits every tuple of the axes that link two dimensions (a dimension in each
//   type, different ones) and, per such tuple, each dimension's own axes' tuples apart: the
//   dimensions are then independent, so sums and least overlaps multiply. E.g. 11 axes of
//   size 2, 4 in dimension 0 of both types, 5 in dimension 1 and 2 linking them: 4 x (16 +
//   32) visits instead of 2 048 tuples.
// Without `need_total` a walk stops at the first device that holds nothing.
// `visits`: what the walk cost, in kEveryTuple's visits of one tuple (the unit the choice of
// walk counts in), for searches that charge their work by it. (kByDimension reuses a
// dimension's sums where its block offsets differ as before, but counts the visits it stands
// for: the searches' budgets were tuned on that count.)
struct Lacking {
  int64_t worst = 0;
  __int128 total = -1;
  int64_t visits = 0;
};
enum class LackingWalk { kCheaper, kEveryTuple, kFixedTuples, kByDimension };
Lacking LackingElements(absl::Span<const int64_t> sizes, absl::Span<const AxisRole> from_roles,
                        absl::Span<const int64_t> from_local, absl::Span<const AxisRole> to_roles,
                        absl::Span<const int64_t> to_local, int64_t target_elements,
                        bool need_total, LackingWalk walk = LackingWalk::kCheaper);

// The larger of two counts whose ceil(log2) bounds the latency terms of the rest of any plan
// (saturated at 2^62), with `pending` (K) summands still to be reduced:
//
// M = K * prod_i ceil(to_local[i] / from_local[i]): the (block, summand) pieces of a type with
// local shape `from_local` that a device's target block (local shape `to_local`) needs. Its
// block meets at least prod_i ceil(...) blocks of the current type and needs every pending
// summand of each, so its final buffer derives from at least M devices' current buffers. A
// collective over a group of k devices lets a buffer derive from at most k times as many
// devices as before and costs (k - 1) >= ceil(log2 k) alphas; permutes and slices add none.
// M shrinks by at most the factor k per such step (a gather or all_to_all widens a
// dimension's blocks k-fold, a reduction divides the pending summands by k).
//
// R = K * max(1, ceil(K * V_to / V)), V and V_to the local volumes: the reductions must divide
// K down to 1 and the local volume must reach V_to. In log2 terms, a reduce_scatter over k
// takes log k off both log K and log V for (k - 1) >= log k alphas, an all_reduce log k off log K
// for 2(k - 1) >= 2 log k, a gather (or an all_to_all_v growing each buffer k-fold, from >= k - 1
// other devices) adds log k to log V for >= log k; slices only lower V, all_to_alls and
// permutes change neither. So phi = log K + max(0, log K + log V_to - log V), which is log2 R,
// drops by at most a step's latency terms and is 0 at the target. It exceeds log M where a
// reduction must be undone: x=2 partial{x} -> replicated needs 2 alphas (reduce_scatter then
// gather, or one all_reduce), M = 2 says 1, R = 4 says 2.
//
// LatencyRounds(max(M, R)) is then a lower bound on the number of latency terms (each at least
// the smallest alpha) of any plan, and consistent, as A* needs: both logs drop by at most the
// latency terms of each step (the rounds are integers, so their ceilings do too). With K = 1,
// R <= M: a valley's middle (MiddleGrowthBound) sees M alone.
int64_t PiecesNeeded(absl::Span<const int64_t> from_local, absl::Span<const int64_t> to_local,
                     int64_t pending);
inline int LatencyRounds(int64_t pieces) {
  return static_cast<int>(std::bit_width(static_cast<uint64_t>(pieces - 1)));
}

// A lower bound on the modeled time of a path made of all_to_alls and permutes only (a valley's
// middle: every type has the same local bytes B) from a type whose target blocks need
// M = PiecesNeeded pieces. An all_to_all over k devices multiplies the devices a buffer
// derives from by at most k and costs at least f(k) = (k - 1)·alpha + (k - 1)/k·B/bw (fastest
// axis); a permute multiplies it by 1. So the path costs at least
//   g(M) = min over k_1..k_r >= 2 with prod k_i >= M of sum f(k_i),   g(1) = 0,
// computed as g(m) = min_k f(k) + g(ceil(m / k)). Consistent: a step of growth k from a type
// needing M to one needing M' >= M / k costs >= f(k), and f(k) + g(M') >= g(M).
// Memoized; M above kMaxPieces is answered with g(kMaxPieces) (still a lower bound, as g
// grows with M).
class MiddleGrowthBound {
 public:
  static constexpr int64_t kMaxPieces = 4096;
  MiddleGrowthBound(double alpha_us, double transfer_us_per_byte, double bytes);
  double operator()(int64_t pieces) {
    // Inline for the memo's hits (the searches ask for a few values thousands of times).
    const int64_t m = std::min(pieces, kMaxPieces);
    if (m <= 1) return 0;
    if (m < static_cast<int64_t>(memo_.size()) && memo_[m] >= 0) return memo_[m];
    return Fill(m);
  }

  // A stronger bound for the same paths when every permute moves a device (no size-1 axis in
  // play), so costs at least alpha + B/bw (of the fastest axis, as f's terms). A path without
  // permutes moves every dimension axis of the type that is not in the common prefix of its
  // dimension with the target's same dimension (all_to_all only removes suffixes and appends,
  // so an axis that is never moved keeps everything before it): `unsettled` is the product of
  // those axes' sizes, and the path's all_to_alls, whose group sizes multiply to at least
  // max(pieces, unsettled), cost at least g(max(pieces, unsettled)); it cannot reach the target
  // at all when the type's dimension axes are not the target's (`same_axes` false). A path
  // with a permute costs at least alpha + B/bw + g(pieces) (permutes keep the local shape). The
  // bound is the smaller of the two. Consistent: an all_to_all over k lowers pieces and
  // unsettled at most k-fold and costs at least f(k); a permute costs at least alpha + B/bw and
  // leaves pieces unchanged.
  double Order(int64_t pieces, bool same_axes, int64_t unsettled);

 private:
  double f(int64_t k) const;
  // operator() for 2 <= m <= kMaxPieces, filling the memo.
  double Fill(int64_t m0);
  double alpha_us_, b_us_;  // alpha, and B/bw in µs
  std::vector<double> memo_;  // memo_[m]; negative = not computed
};

// ComputeLowerBounds(mesh, from, to) for many `from` and one `to`, whose block roles and local
// shape are built once (a search bounds every type it generates against the same target).
// `mesh` and `to` must outlive it.
class LowerBoundsTo {
 public:
  LowerBoundsTo(const Mesh& mesh, const DistType& to);
  LowerBounds operator()(const DistType& from) const;
  // operator()'s `pending` and `pieces` alone (no walk), given LocalShape(mesh, from).
  std::pair<int64_t, int64_t> PendingAndPieces(const DistType& from,
                                               const std::vector<int64_t>& from_local) const;

 private:
  const Mesh& mesh_;
  const DistType& to_;
  std::vector<AxisRole> to_roles_;
  std::vector<int64_t> to_local_;
  int64_t target_elements_;
  std::vector<int64_t> axis_sizes_;
};

// Whether some step of every plan from a type to the target must cross mesh axis a (size
// >= 2), which sits in the type's dimension i with stride `w_a` (the type's local size there
// times the sizes of the axes after a): whether some device's target block in dimension i
// holds an element whose digit of a (floor(e / w_a) mod size_a) is not the device's own
// coordinate on a, i.e. an element no device of its a-slice holds. `w_a_in_to`: a's stride in
// the target's dimension i (defined alike), or 0 when a is not there. That is the case exactly
// when the strides differ: with equal strides the two digits are the same function of e; with
// w < w' (the two strides, in either order) element e = w, which some device's block holds
// (both strides times size_a divide the dimension), has digit 1 under w and 0 under w', and
// without a in the target's dimension the device with coordinate 1 on a (0 elsewhere) needs
// element 0, of digit 0.
inline bool NeedsOtherSlices(int64_t w_a, int64_t w_a_in_to) { return w_a != w_a_in_to; }

// The largest alpha (µs) among the axes every plan from `from` to `to` must cross, when it
// exceeds the fastest axis's (else 0). A step crosses an axis when its group spans it (a
// collective over it) or some pair of it differs in that coordinate (a permute), and then
// costs at least that axis's alpha. Steps that cross no axis a only move data between devices
// of one a-slice (devices with the same coordinate on a), so every plan crosses a when a is a
// partial axis of `from` that `to` does not keep (its summands sit in different a-slices), or
// when some device's target block needs an element no device of its a-slice holds
// (NeedsOtherSlices; an axis `from` leaves replicated never: each of its slices holds
// everything). Neither can stop holding without a step that crosses a, which makes the
// latency bound of TimeBoundUs built on it consistent. Valid types of one shape.
double CrossingAlphaUs(const Mesh& mesh, const CostModel& model, const DistType& from,
                       const DistType& to);

// The link a permute from `in` to `out` (valid types of one local shape and partial axes,
// some device moving) is priced at, when that follows from the types: where every placement
// of `in` is held by one device, the pairs are forced and cross exactly the axes whose
// placement-key weights differ (KeyRoles); otherwise, when the axes every pairing must cross
// (those CrossingAlphaUs counts) are together (Slower) as slow as all axes of size >= 2,
// which bound whatever a pairing crosses. StepCostUs prices a permute at the Slower of the
// links its pairs cross, so then it costs this link's alpha plus its local bytes over the
// link's bandwidth, exactly as MinimalPermute's pairs would be priced. nullopt otherwise.
std::optional<AxisCost> ForcedPermuteLink(const Mesh& mesh, const CostModel& model,
                                          const DistType& in, const DistType& out);

}  // namespace reshard::internal

#endif  // RESHARD_SYNTH_PLACEMENT_H_
