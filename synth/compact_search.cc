// compact_search.cc — SearchPlan on compact types (see compact_search.h).
//
// Every step below mirrors a step of Searcher in search.cc; the comments name the
// counterpart. A type is CType: the mesh-axis indices of its dimensions, concatenated, with
// the end of each dimension, and the mask of its partial axes. Element type and global shape
// are the same for every state of a search, so they live in the context.

#include "synth/compact_search.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "synth/placement.h"
#include "synth/search_bounds.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"

namespace reshard::internal {
namespace {

// The same work units as search.cc.
constexpr int64_t kTypeWork = 256;
constexpr int64_t kCountStepWork = 16;
// Encoding limits: axis index + 1 fits a nibble, and a key holds 16 nibbles (one per axis
// slot and one terminating each dimension but the last).
constexpr int kMaxAxes = 15;
constexpr int kMaxRank = 8;
constexpr int kMaxNibbles = 16;

// A state's identity: its dimensions' nibbles (CType::DimsKey) and its partial mask.
using StateKey = std::pair<uint64_t, uint32_t>;

struct CType {
  uint8_t rank = 0;
  uint8_t end[kMaxRank] = {};  // Dimension i holds ax[begin(i), end[i]).
  uint8_t ax[kMaxNibbles] = {};
  uint32_t partial = 0;  // Bit a: mesh axis a is partial.

  int begin(int i) const { return i == 0 ? 0 : end[i - 1]; }
  // Axis indices + 1 per dimension, each dimension but the last closed by a 0 nibble (the
  // last one's would be a leading zero). Unique within one rank: axis nibbles are never 0, so
  // the first rank - 1 zero nibbles end the first rank - 1 dimensions and the rest of the key
  // is the last one.
  uint64_t DimsKey() const {
    uint64_t key = 0;
    int pos = 0;
    int slot = 0;
    for (int i = 0; i < rank; ++i) {
      for (; slot < end[i]; ++slot) key |= uint64_t{ax[slot] + 1u} << (4 * pos++);
      ++pos;
    }
    return key;
  }
  StateKey Key() const { return {DimsKey(), partial}; }
  uint32_t DimsMask() const {
    uint32_t mask = 0;
    for (int s = 0; s < (rank == 0 ? 0 : end[rank - 1]); ++s) mask |= 1u << ax[s];
    return mask;
  }
};

// `s` with the last `len` axes of dimension `from_dim` removed (from_dim < 0: none) and
// `count` axes `extra` appended to dimension `to_dim` (to_dim < 0: none).
CType Rearranged(const CType& s, int from_dim, int len, int to_dim, const uint8_t* extra,
                 int count) {
  CType next;
  next.rank = s.rank;
  next.partial = s.partial;
  int slot = 0;
  for (int d = 0; d < s.rank; ++d) {
    const int de = d == from_dim ? s.end[d] - len : s.end[d];
    for (int t = s.begin(d); t < de; ++t) next.ax[slot++] = s.ax[t];
    if (d == to_dim) {
      for (int t = 0; t < count; ++t) next.ax[slot++] = extra[t];
    }
    next.end[d] = static_cast<uint8_t>(slot);
  }
  return next;
}

// The operation of an edge, enough to rebuild its Collective from the types it joins:
//   kSlice, kReduceScatter: the last `len` axes of the result's dimension i;
//   kAllReduce: the partial axes the result lost, in mesh order;
//   kGather: the last `len` axes of the source's dimension i;
//   kAllToAll: the last `len` axes of the source's dimension i, onto dimension j.
enum class Kind : uint8_t { kSlice, kReduceScatter, kAllReduce, kGather, kAllToAll, kPermute };
CollectiveKind ToCollectiveKind(Kind kind) {
  switch (kind) {
    case Kind::kSlice:
      return CollectiveKind::kAllSlice;
    case Kind::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case Kind::kAllReduce:
      return CollectiveKind::kAllReduce;
    case Kind::kGather:
      return CollectiveKind::kAllGather;
    case Kind::kAllToAll:
      return CollectiveKind::kAllToAll;
    case Kind::kPermute:
      break;
  }
  return CollectiveKind::kCollectivePermute;
}
struct Op {
  Kind kind = Kind::kPermute;
  uint8_t i = 0, len = 0, j = 0;
};

int64_t SaturatedInt64(__int128 value) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return value > kMax ? kMax : static_cast<int64_t>(value);
}

}  // namespace

struct MiddleCache::Impl {
  struct Class {
    std::vector<CType> members;
    std::vector<uint64_t> keys;                          // members[m].DimsKey()
    // Placement-key weights, built on a member's first count (members the bounds filter are
    // never counted). weights[m][0] < 0: not built; empty until the class's first count.
    std::vector<std::array<int64_t, kMaxAxes>> weights;
    // On meshes of at most kKeyByteDevices devices: each member's per-device placement keys
    // (PlacementKeyBytes), so that a count is a byte comparison. Built when a member is
    // counted the second time: building them costs about one count, and in the middles of
    // `normal` most members are counted once.
    std::vector<std::vector<uint8_t>> key_bytes;
    std::vector<uint8_t> counted;  // Per member: counted before.
    // Per source state key: MovedDevices to each member and its work (-1: not computed).
    absl::flat_hash_map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> moved;
    // The number of members (saturated above MaxPermuteClassSize), known before they are
    // enumerated: searches that bound every member walk the class instead
    // (Compact::WalkPermuteClass) and keep only `size` and `moved_by_key`. -1: not known.
    int64_t size = -1;
    bool enumerated = false;  // `members` and the per-member vectors above are built.
    // The walks' MovedDevices memo: (source dims key, member dims key) -> count and work.
    absl::flat_hash_map<std::pair<uint64_t, uint64_t>, std::pair<int64_t, int64_t>> moved_by_key;
  };
  // Keyed by (relevant-axes mask, partial mask, local shape...).
  absl::flat_hash_map<std::array<int64_t, kMaxRank + 2>, std::unique_ptr<Class>> classes;
  // The heuristic's device walk for a non-pending pair, by (target dims key, state dims key):
  // partial axes do not enter block placements. `total` is -1 until a full walk ran (a walk
  // that only needs the maximum stops once some device lacks everything).
  struct Walk {
    int64_t worst = 0;
    int64_t total = -1;
    int64_t visits = 0;  // Lacking::visits of the walk that computed it.
  };
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, Walk> walks;
  // The slice bound (SliceBound) and the work its counts were charged, by (target dims key,
  // target partial mask, state dims key, state partial mask): the sets S depend only on the
  // mesh, the model and the target, which the searches sharing a cache have in common. A
  // hit charges the same work, so the searches stop where they would without it.
  absl::flat_hash_map<std::tuple<uint64_t, uint32_t, uint64_t, uint32_t>,
                      std::pair<double, int64_t>>
      slice_bounds;
  std::optional<PlacementKeyBytes> key_bytes;  // Meshes of <= kKeyByteDevices devices.
  PermuteClassCache fallback;  // For middles handed to the DistType search.
  // The middles' growth bounds by (alpha, µs per byte, bytes): their memos outlive a search
  // (the middles of one pass mostly share their local size).
  std::vector<std::pair<std::array<double, 3>, std::unique_ptr<MiddleGrowthBound>>> growth;
  MiddleGrowthBound& Growth(double alpha_us, double transfer_us_per_byte, double bytes) {
    const std::array<double, 3> key = {alpha_us, transfer_us_per_byte, bytes};
    for (auto& [k, bound] : growth) {
      if (k == key) return *bound;
    }
    growth.emplace_back(key,
                        std::make_unique<MiddleGrowthBound>(alpha_us, transfer_us_per_byte, bytes));
    return *growth.back().second;
  }
};

MiddleCache::MiddleCache() : impl_(std::make_unique<Impl>()) {}
MiddleCache::~MiddleCache() = default;

namespace {

class Compact {
 public:
  // `shared`: whether `cache` serves other searches too (then heuristic walks are remembered).
  Compact(const Mesh& mesh, const DistType& from, const DistType& to, const SearchOptions& options,
          MiddleCache::Impl& cache, bool shared)
      : mesh_(mesh), options_(options), cache_(cache), shared_(shared) {
    num_axes_ = mesh.num_axes();
    n_ = mesh.num_devices();
    for (int a = 0; a < num_axes_; ++a) size_[a] = mesh.axes()[a].size;
    rank_ = from.rank();
    for (int i = 0; i < rank_; ++i) dim_size_[i] = from.dims[i].size;
    template_ = from;
    template_.partial.clear();
    if (options.describe_failures) {
      from_text_ = from;
      from_text_.partial = PartialInMeshOrder(mesh, from);  // Canonical, as Searcher's from_.
      to_text_ = to;
      to_text_.partial = PartialInMeshOrder(mesh, to);
    }
    from_ = Encode(from);
    to_ = Encode(to);
    to_dims_key_ = to_.DimsKey();
    to_dims_mask_ = to_.DimsMask();
    element_bytes_ = ElementBytes(from.element_type);
    bool size_one = false;
    for (int a = 0; a < num_axes_; ++a) {
      const AxisName& name = mesh.axis_name(a);
      if (size_[a] > 1 || AxisUse(from, name) != kUnused || AxisUse(to, name) != kUnused) {
        relevant_.push_back(a);
        relevant_mask_ |= 1u << a;
        size_one |= size_[a] == 1;
      }
    }
    for (int i = 0; i < rank_; ++i) {
      to_local_[i] = LocalDim(to_, i);
      to_held_[i] = AxesOf(to_, i);
    }
    target_elements_ = LocalElements(mesh, to);
    pending_unit_ = PendingUnit(mesh, to);
    if (timed()) {
      fastest_ = options_.cost_model->Fastest(mesh);
      uniform_ = options_.cost_model->UniformOn(mesh);
      uint32_t moving = 0;  // Axes of size above 1.
      for (int a = 0; a < num_axes_; ++a) {
        axis_cost_[a] = options_.cost_model->Axis(mesh.axes()[a].name);
        if (size_[a] > 1) moving |= 1u << a;
      }
      if (!uniform_ && num_axes_ <= kSlowestTableAxes) {
        // Slower is a max and a min: exact in any order, so each entry extends a smaller one.
        slowest_of_.resize(size_t{1} << num_axes_);
        for (uint32_t m = 1; m < slowest_of_.size(); ++m) {
          const AxisCost& axis = axis_cost_[std::countr_zero(m)];
          const std::optional<AxisCost>& rest = slowest_of_[m & (m - 1)];
          slowest_of_[m] = rest ? Slower(*rest, axis) : axis;
        }
      }
      if (!uniform_) links_.emplace(absl::MakeConstSpan(size_, num_axes_), axis_cost_);
      slowest_ = SlowestOf(moving).value_or(AxisCost{});
      if (!uniform_ && options_.slice_bound) SetUpSlices();
      for (int a = 0; a < num_axes_; ++a) {
        if (size_[a] > 1 && (axis_cost_[a].alpha_us == slowest_.alpha_us ||
                             axis_cost_[a].gbps == slowest_.gbps)) {
          slowest_axes_ |= 1u << a;
        }
      }
    }
    once_per_class_ = timed() && uniform_ && !size_one;
    permutes_move_ = !size_one;
    if (timed() && !options_.allow_all_slice && !options_.allow_all_gather &&
        !options_.allow_all_reduce && !options_.allow_reduce_scatter) {
      growth_ = &cache_.Growth(fastest_.alpha_us, fastest_.TransferUs(1.0),
                               static_cast<double>(LocalBytes(from_)));
    }
  }

  // Whether the types fit the encoding (else the caller uses the DistType search).
  static bool Encodable(const Mesh& mesh, const DistType& from, const DistType& to) {
    if (mesh.num_axes() > kMaxAxes || from.rank() == 0 || from.rank() > kMaxRank) return false;
    for (const DistType* type : {&from, &to}) {
      for (const Dim& dim : type->dims) {
        for (const AxisName& axis : dim.axes) {
          if (mesh.AxisIndex(axis) < 0) return false;  // A sub-axis.
        }
      }
      for (const AxisName& axis : type->partial) {
        if (mesh.AxisIndex(axis) < 0) return false;
      }
    }
    // Every state's dimensions use at most the axes that are not partial in `to` (those stay
    // partial throughout).
    int pool = 0;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      if (AxisUse(to, mesh.axis_name(a)) != kPartial) ++pool;
    }
    return pool + from.rank() - 1 <= kMaxNibbles;
  }

  absl::StatusOr<std::vector<Step>> Run(MiddlePath* path);
  int64_t settled() const { return settled_; }
  int64_t generated() const { return generated_; }
  int64_t work() const { return work_; }

 private:
  using Bound = RestBound;
  struct Edge {
    Op op;
    CType type;
    int64_t cost = 0;
    double us = 0;  // -1: a permute not priced yet.
    // A permute's KeyWeights of `type` when Neighbors had them (PermuteUs), else null. They
    // live in the permute class, which outlives the expansion.
    const int64_t* weights = nullptr;
  };
  struct Node {
    CType type;
    int64_t cost = 0;
    int steps = 0;
    int parent = -1;
    Op op;
    bool settled = false;
    double us = 0;
    Bound h;
    double edge_us = 0;  // The us of the edge from `parent` (time mode).
  };

  CType Encode(const DistType& type) const {
    CType c;
    c.rank = static_cast<uint8_t>(type.rank());
    int slot = 0;
    for (int i = 0; i < type.rank(); ++i) {
      for (const AxisName& axis : type.dims[i].axes) {
        c.ax[slot++] = static_cast<uint8_t>(mesh_.AxisIndex(axis));
      }
      c.end[i] = static_cast<uint8_t>(slot);
    }
    for (const AxisName& axis : type.partial) c.partial |= 1u << mesh_.AxisIndex(axis);
    return c;
  }
  DistType Decode(const CType& c) const {
    DistType type = template_;
    for (int i = 0; i < rank_; ++i) {
      AxisList& axes = type.dims[i].axes;
      axes.clear();
      for (int s = c.begin(i); s < c.end[i]; ++s) axes.push_back(mesh_.axes()[c.ax[s]].name);
    }
    for (int a = 0; a < num_axes_; ++a) {
      if (c.partial & (1u << a)) type.partial.push_back(mesh_.axes()[a].name);
    }
    return type;
  }
  AxisList Names(const uint8_t* ax, int count) const {
    AxisList names;
    names.reserve(count);
    for (int s = 0; s < count; ++s) names.push_back(mesh_.axes()[ax[s]].name);
    return names;
  }
  // The Collective of the edge `op` from `in` to `out` (without permute pairs).
  Collective ToCollective(const CType& in, const CType& out, const Op& op) const {
    switch (op.kind) {
      case Kind::kSlice:
        return Collective::AllSlice(Names(out.ax + out.end[op.i] - op.len, op.len), op.i);
      case Kind::kReduceScatter:
        return Collective::ReduceScatter(Names(out.ax + out.end[op.i] - op.len, op.len), op.i);
      case Kind::kAllReduce: {
        AxisList axes;
        for (int a = 0; a < num_axes_; ++a) {
          if ((in.partial & ~out.partial) & (1u << a)) axes.push_back(mesh_.axes()[a].name);
        }
        return Collective::AllReduce(std::move(axes));
      }
      case Kind::kGather:
        return Collective::AllGather(Names(in.ax + in.end[op.i] - op.len, op.len), op.i);
      case Kind::kAllToAll:
        return Collective::AllToAll(Names(in.ax + in.end[op.i] - op.len, op.len), op.i, op.j);
      case Kind::kPermute:
        break;
    }
    return Collective::Permute({});
  }
  int64_t Group(const CType& c, int i) const {
    int64_t k = 1;
    for (int s = c.begin(i); s < c.end[i]; ++s) k *= size_[c.ax[s]];
    return k;
  }
  int64_t LocalDim(const CType& c, int i) const { return dim_size_[i] / Group(c, i); }
  int64_t LocalBytes(const CType& c) const {
    int64_t elements = 1;
    for (int i = 0; i < rank_; ++i) elements *= LocalDim(c, i);
    return elements * element_bytes_;
  }

  bool timed() const { return options_.cost_model != nullptr; }
  bool Charge(int64_t units) {
    work_ += units;
    return work_ <= options_.max_work;
  }
  bool OverBudget() const { return work_ > options_.max_work; }

  // placement.cc's KeyRoles weights (every axis in slot 0 of the key; 0 = not in the key).
  void KeyWeights(const CType& c, int64_t* weight) const {
    int64_t scale[kMaxRank + 1];
    int64_t factor = 1;
    int64_t partial_stride[kMaxAxes] = {};
    for (int a = num_axes_ - 1; a >= 0; --a) {
      weight[a] = 0;
      if (c.partial & (1u << a)) {
        partial_stride[a] = factor;
        factor *= size_[a];
      }
    }
    for (int i = rank_ - 1; i >= 0; --i) {
      scale[i] = factor;
      factor *= Group(c, i);
    }
    for (int a = 0; a < num_axes_; ++a) {
      if (c.partial & (1u << a)) weight[a] = partial_stride[a];
    }
    for (int i = 0; i < c.rank; ++i) {
      int64_t stride = 1;
      for (int s = c.end[i] - 1; s >= c.begin(i); --s) {
        weight[c.ax[s]] = stride * scale[i];
        stride *= size_[c.ax[s]];
      }
    }
  }
  // PlacementKeyBytes of the key with these weights.
  std::vector<uint8_t> KeyBytes(const int64_t* weight) {
    if (!cache_.key_bytes) cache_.key_bytes.emplace(mesh_);
    return (*cache_.key_bytes)(absl::MakeConstSpan(weight, num_axes_));
  }
  // MovedDevices (same count, same work) from key weights.
  int64_t Moved(const int64_t* w_in, const int64_t* w_out, int64_t* work) const {
    return MovedDevicesFromWeights(mesh_, absl::MakeConstSpan(w_in, num_axes_),
                                   absl::MakeConstSpan(w_out, num_axes_), work);
  }

  // CostModel::StepCostUs of a collective over `count` axes `ax` of a type of `bytes` local
  // bytes (not for permutes), in the same arithmetic.
  double StepUs(Kind kind, const uint8_t* ax, int count, int64_t in_bytes) const {
    int64_t k = 1;
    bool any = false;  // CostModel::Group: axes of size 1 do not slow the group.
    AxisCost group = options_.cost_model->default_cost();
    for (int t = 0; t < count; ++t) {
      k *= size_[ax[t]];
      if (size_[ax[t]] == 1) continue;
      group = any ? Slower(group, axis_cost_[ax[t]]) : axis_cost_[ax[t]];
      any = true;
    }
    return GroupCollectiveUs(ToCollectiveKind(kind), static_cast<double>(k), group,
                             static_cast<double>(in_bytes));
  }
  // Searcher::Holders.
  int64_t Holders(const CType& type) const {
    const uint32_t used = type.DimsMask() | type.partial;
    int64_t holders = 1;
    for (int a = 0; a < num_axes_; ++a) {
      if (!(used & (1u << a))) holders *= size_[a];
    }
    return holders;
  }

  // What PermuteUs needs of a permute's input: the state being expanded, the same for every
  // permute priced from it (Run computes it once per expansion).
  struct PricedInput {
    int64_t weights[kMaxAxes] = {};  // KeyWeights.
    int64_t holders = 0;             // Holders.
    int64_t bytes = 0;               // LocalBytes.
  };
  PricedInput Priced(const CType& in) const {
    PricedInput priced;
    KeyWeights(in, priced.weights);
    priced.holders = Holders(in);
    priced.bytes = LocalBytes(in);
    return priced;
  }

  // The exact price of a permute (non-uniform models): StepCostUs of MinimalPermute's pairs,
  // computed without building them. That price is alpha + bytes over the bandwidth of the
  // elementwise slowest link of the pairs (Slower is a max and a min, so the order of the pairs
  // does not matter), and a pair's link is the slowest of the axes in which its devices differ:
  // so it is that of the union of those axes over the pairs. The pairs are MinimalPermute's:
  // the devices whose placement key changes, grouped by the key they hold and the key they
  // need (each in id order); within a group of 2..kGreedyPairingLimit holders each needer, in
  // id order, takes the remaining holder behind the cheapest link (LinkOrder), otherwise
  // holders and needers pair in id order. Placement keys here are KeyWeights' (the same
  // grouping as KeyRoles'). Which axes two devices differ in is read off their packed
  // coordinates (DeviceCodes): the fields of the OR of the codes' XORs that are not zero.
  // Where `in` has several holders per placement, the pairing is skipped when the axes every
  // pairing crosses already cost as much as the slowest of all axes: a device whose block of
  // `out` no device of its a-slice holds in `in` receives it across a (LeavesSlice), and the
  // union of the crossed axes, which contains those, costs at most the slowest of all.
  // `priced`: Priced(in). `w_out`: KeyWeights(out) when the caller has them, else null.
  double PermuteUs(const PricedInput& priced, const CType& in, const CType& out,
                   const int64_t* w_out) const {
    int64_t own_w_out[kMaxAxes];
    auto out_weights = [&] {
      if (w_out == nullptr) {
        KeyWeights(out, own_w_out);
        w_out = own_w_out;
      }
      return w_out;
    };
    std::optional<AxisCost> link;  // The Slower of the axes some pair differs in.
    if (priced.holders == 1) {
      link = SlowestOf(SinglyHeldCrossed(priced.weights, out_weights()));
    } else if (PairingIsSlowest(in, out)) {
      link = slowest_;
    } else {
      DeviceCodes();
      const uint64_t acc = PairedDiffs(priced.weights, out_weights());
      uint32_t crossed = 0;
      for (int a = 0; a < num_axes_; ++a) {
        if (acc & scratch_.field[a]) crossed |= 1u << a;
      }
      link = SlowestOf(crossed);
    }
    const double bytes = static_cast<double>(priced.bytes);
    return link ? link->alpha_us + link->TransferUs(bytes) : 0;
  }

  // The Slower of the axes in `axes` (a mask), nullopt when it is empty.
  std::optional<AxisCost> SlowestOf(uint32_t axes) const {
    if (!slowest_of_.empty()) return slowest_of_[axes];
    std::optional<AxisCost> slowest;
    for (int a = 0; a < num_axes_; ++a) {
      if ((axes >> a) & 1u) slowest = slowest ? Slower(*slowest, axis_cost_[a]) : axis_cost_[a];
    }
    return slowest;
  }

  // Whether the axes every pairing of the permute from `in` to `out` crosses are, together,
  // as slow as all axes of size above 1 (PermuteUs).
  bool PairingIsSlowest(const CType& in, const CType& out) const {
    int64_t out_local[kMaxRank];
    for (int i = 0; i < rank_; ++i) out_local[i] = LocalDim(out, i);
    uint32_t must = 0;
    for (int a = 0; a < num_axes_; ++a) {
      if (((slowest_axes_ >> a) & 1u) && LeavesSlice(in, out, out_local, a)) must |= 1u << a;
    }
    return SlowestOf(must) == slowest_;
  }

  // Every device's coordinates packed into one word, axis a in the bits of field[a]
  // (bit_width(size - 1) bits each: at most 20 + 15 bits, as the device count is at most 2^20),
  // built on first use.
  void DeviceCodes() const {
    PermuteScratch& x = scratch_;
    if (!x.codes.empty() || n_ == 0) return;
    int shift[kMaxAxes];
    int bits = 0;
    for (int a = num_axes_ - 1; a >= 0; --a) {
      shift[a] = bits;
      const int width = std::bit_width(static_cast<uint64_t>(size_[a] - 1));
      x.field[a] = ((uint64_t{1} << width) - 1) << bits;
      bits += width;
    }
    RESHARD_CHECK(bits <= 64) << "device coordinates do not pack into 64 bits";
    x.codes.resize(n_);
    int64_t coord[kMaxAxes] = {};
    uint64_t code = 0;
    for (int64_t d = 0; d < n_; ++d) {
      x.codes[d] = code;
      for (int a = num_axes_ - 1; a >= 0; --a) {
        if (++coord[a] < size_[a]) {
          code += uint64_t{1} << shift[a];
          break;
        }
        coord[a] = 0;
        code &= ~x.field[a];
      }
    }
  }

  // The OR of the code XORs of MinimalPermute's pairs, for any input.
  uint64_t PairedDiffs(const int64_t* w_in, const int64_t* w_out) const {
    RESHARD_CHECK(links_.has_value()) << "permute pairing under a uniform model";
    PermuteScratch& x = scratch_;
    x.changed.clear();
    x.have.clear();
    x.need.clear();
    links_->Clear();
    int64_t coord[kMaxAxes] = {};
    int64_t key_in = 0, key_out = 0, max_in = 0, max_out = 0;
    for (int a = 0; a < num_axes_; ++a) {
      max_in += (size_[a] - 1) * w_in[a];
      max_out += (size_[a] - 1) * w_out[a];
    }
    const int64_t num_keys = std::max(max_in, max_out) + 1;  // Equal: the same radices.
    // The changed devices in id order, with their keys and (for the greedy) coordinates.
    for (int64_t d = 0; d < n_; ++d) {
      if (key_in != key_out) {
        x.changed.push_back(d);
        x.have.push_back(key_in);
        x.need.push_back(key_out);
        links_->Add(coord);
      }
      for (int a = num_axes_ - 1; a >= 0; --a) {
        if (++coord[a] < size_[a]) {
          key_in += w_in[a];
          key_out += w_out[a];
          break;
        }
        coord[a] = 0;
        key_in -= w_in[a] * (size_[a] - 1);
        key_out -= w_out[a] * (size_[a] - 1);
      }
    }
    const size_t changed = x.changed.size();
    if (changed == 0) return 0;
    // Counting sort by key, stable: each key's holders and needers in id order.
    x.hold_start.assign(num_keys + 1, 0);
    x.need_start.assign(num_keys + 1, 0);
    for (size_t i = 0; i < changed; ++i) {
      ++x.hold_start[x.have[i] + 1];
      ++x.need_start[x.need[i] + 1];
    }
    for (int64_t key = 0; key < num_keys; ++key) {
      x.hold_start[key + 1] += x.hold_start[key];
      x.need_start[key + 1] += x.need_start[key];
    }
    x.holders.resize(changed);
    x.needers.resize(changed);
    for (size_t i = changed; i-- > 0;) {  // Backwards, filling each bucket from its end.
      x.holders[--x.hold_start[x.have[i] + 1]] = static_cast<int64_t>(i);
      x.needers[--x.need_start[x.need[i] + 1]] = static_cast<int64_t>(i);
    }
    auto code = [&](int64_t i) { return x.codes[x.changed[i]]; };
    uint64_t acc = 0;
    for (int64_t key = 0; key < num_keys; ++key) {
      // After the fill, bucket `key` starts at start[key + 1] and ends at start[key + 2].
      const size_t h0 = x.hold_start[key + 1];
      const size_t h1 = key + 2 <= num_keys ? x.hold_start[key + 2] : changed;
      const size_t n0 = x.need_start[key + 1];
      const size_t n1 = key + 2 <= num_keys ? x.need_start[key + 2] : changed;
      RESHARD_CHECK(h1 - h0 == n1 - n0) << "unbalanced permute";
      const size_t count = h1 - h0;
      if (count == 0) continue;
      if (count == 1 || count > kGreedyPairingLimit) {
        for (size_t i = 0; i < count; ++i) acc |= code(x.holders[h0 + i]) ^ code(x.needers[n0 + i]);
        continue;
      }
      x.sources.assign(x.holders.begin() + static_cast<std::ptrdiff_t>(h0),
                       x.holders.begin() + static_cast<std::ptrdiff_t>(h1));
      for (size_t j = n0; j < n1; ++j) {
        const size_t best = links_->CheapestSource(x.sources, x.needers[j]);
        acc |= code(x.sources[best]) ^ code(x.needers[j]);
        x.sources.erase(x.sources.begin() + static_cast<std::ptrdiff_t>(best));
      }
    }
    return acc;
  }

  // PermuteUs's crossed axes when every placement of `in` is held by one device (Holders 1,
  // so `out`, of the same local shape, too). Then both placement keys number the devices,
  // each axis a of size > 1 being the digit of place w[a] (KeyWeights), and every device that
  // changes takes the one device holding its new key: the pair crosses a exactly when that
  // holder's a-digit differs, i.e. when digit w_in[a] of the device's out-key is not its own
  // a-coordinate. With w_in[a] == w_out[a] it is that coordinate on every device. Otherwise
  // some device differs: with w_out[a] < w_in[a], the device at 1 on a alone (out-key w_out[a]
  // has in-digit 0); with w_out[a] > w_in[a], the device at 0 on a whose out-key is w_in[a]
  // (below a's place, so a-digit 0, but in-digit 1). So no device needs visiting.
  uint32_t SinglyHeldCrossed(const int64_t* w_in, const int64_t* w_out) const {
    uint32_t crossed = 0;
    for (int a = 0; a < num_axes_; ++a) {
      if (size_[a] > 1 && w_in[a] != w_out[a]) crossed |= 1u << a;
    }
    return crossed;
  }

  // The summands a reduction still has to add up: the product of the sizes of the type's
  // partial axes that the target does not keep.
  int64_t Pending(const CType& type) const {
    int64_t pending = 1;
    for (int a = 0; a < num_axes_; ++a) {
      if ((type.partial & ~to_.partial) & (1u << a)) pending *= size_[a];
    }
    return pending;
  }

  // NeedsOtherSlices for axis a of `type` (false when no dimension of `type` holds it):
  // whether some device's block of `target` (local sizes `target_local`) holds an element no
  // device of its a-slice holds in `type`.
  bool LeavesSlice(const CType& type, const CType& target, const int64_t* target_local,
                   int a) const {
    for (int i = 0; i < rank_; ++i) {
      if (const int64_t w_a = StrideOf(type, i, LocalDim(type, i), a); w_a != 0) {
        return NeedsOtherSlices(w_a, StrideOf(target, i, target_local[i], a));
      }
    }
    return false;
  }
  // The stride of axis a in dimension i of `c`, whose local size there is `local`: `local`
  // times the sizes of the axes after a; 0 when a is not there.
  int64_t StrideOf(const CType& c, int i, int64_t local, int a) const {
    for (int t = c.end[i] - 1; t >= c.begin(i); --t) {
      if (c.ax[t] == a) return local;
      local *= size_[c.ax[t]];
    }
    return 0;
  }

  // CrossingAlphaUs on compact types (the same loop: equal results).
  double CrossingAlpha(const CType& type) const {
    if (uniform_) return 0;
    double crossing = 0;
    for (int a = 0; a < num_axes_; ++a) {
      const double alpha = axis_cost_[a].alpha_us;
      if (size_[a] < 2 || alpha <= std::max(fastest_.alpha_us, crossing)) continue;
      if ((((type.partial & ~to_.partial) >> a) & 1u) || LeavesSlice(type, to_, to_local_, a)) {
        crossing = alpha;
      }
    }
    return crossing;
  }

  // SliceBoundUs (search.cc) on compact types: the same loop, hence equal results and work.
  // What does not depend on the state is set up once (SetUpSlices).
  double SliceBound(const CType& type) {
    if (slices_.empty() || ((type.partial ^ to_.partial) & sized_) != 0) return 0;
    if (!shared_) return CountSliceBound(type);
    auto [it, inserted] = cache_.slice_bounds.try_emplace(
        std::make_tuple(to_dims_key_, to_.partial, type.DimsKey(), type.partial));
    if (inserted) {
      const int64_t before = work_;
      it->second.first = CountSliceBound(type);
      it->second.second = work_ - before;
    } else {
      Charge(it->second.second);
    }
    return it->second.first;
  }
  // SliceBound counted for `type`, charging the counts' work.
  double CountSliceBound(const CType& type) {
    SliceDigits type_digits[kMaxRank];
    SliceDim dims[kMaxRank];
    int64_t work = 0;
    double most = 0;
    for (const Slices& slices : slices_) {
      const SliceSet& set = slices.set;
      for (int i = 0; i < rank_; ++i) {
        type_digits[i].count = 0;
        for (int s = type.begin(i); s < type.end[i]; ++s) {
          const int a = type.ax[s];
          if (size_[a] > 1) type_digits[i].Add(size_[a], set.slot[a]);
        }
        dims[i] = {dim_size_[i], &type_digits[i], &slices.target[i]};
      }
      const int64_t lacking = MoreLackingSlice(dims, rank_, set.sizes.data(),
                                               static_cast<int>(set.sizes.size()), &work);
      most = std::max(most, SliceTransferUs(set.gbps, lacking, element_bytes_, set.devices));
    }
    Charge(work);
    return most;
  }
  // The sets S of SliceBoundUs (SliceSets) with the target's digits per dimension. Types
  // whose partial axes differ from the target's get no slice bound, so the eligible axes are
  // those of size above 1 not partial in the target.
  void SetUpSlices() {
    std::vector<double> gbps(num_axes_);
    std::vector<int64_t> sizes(size_, size_ + num_axes_);
    std::vector<bool> eligible(num_axes_);
    int64_t layers = 1;  // Summand layers: the product of the partial axes' sizes.
    for (int a = 0; a < num_axes_; ++a) {
      gbps[a] = axis_cost_[a].gbps;
      if (size_[a] > 1) sized_ |= 1u << a;
      const bool partial = (to_.partial >> a) & 1u;
      if (partial) layers *= size_[a];
      eligible[a] = size_[a] > 1 && !partial;
    }
    for (SliceSet& set : SliceSets(gbps, sizes, eligible, fastest_.gbps, n_, layers)) {
      Slices& slices = slices_.emplace_back();
      for (int i = 0; i < rank_; ++i) {
        for (int s = to_.begin(i); s < to_.end[i]; ++s) {
          const int a = to_.ax[s];
          if (size_[a] > 1) slices.target[i].Add(size_[a], set.slot[a]);
        }
      }
      slices.set = std::move(set);
    }
  }

  // Searcher::Heuristic.
  Bound Heuristic(const CType& type) {
    const bool time_bound = timed() && options_.use_heuristic;
    const bool bytes_bound = !timed() && options_.bytes_bound;
    if (!time_bound && !bytes_bound) return Bound{};
    Charge(n_);  // One pass over the devices.
    // LowerBoundsTo(type): pending summands, then the walk or its closed form.
    const int64_t pending = Pending(type);
    int64_t from_local[kMaxRank];
    for (int i = 0; i < rank_; ++i) from_local[i] = LocalDim(type, i);
    int64_t bytes_total = 0;
    int64_t worst = 0;
    if (pending > 1) {
      bytes_total = SaturatedInt64(__int128{n_} * target_elements_ * element_bytes_);
      worst = target_elements_;
    } else {
      // TimeBoundUs needs the walk's total only through the average, which never exceeds the
      // worst device without pending summands; only the byte bound needs it.
      const bool need_total = options_.bytes_bound;
      MiddleCache::Impl::Walk walk;
      int64_t visits = 0;  // Of a walk run here (not found in the cache).
      // The closed form, where it applies, costs less than a lookup in the cache.
      std::optional<int64_t> closed;
      if (!need_total) closed = ClosedFormWorst(type, from_local);
      if (closed) {
        walk.worst = *closed;
      } else if (shared_) {
        auto [it, inserted] =
            cache_.walks.try_emplace({to_dims_key_, type.DimsKey()}, MiddleCache::Impl::Walk{});
        if (inserted || (need_total && it->second.total < 0)) {
          it->second = Walk(type, from_local, need_total);
          visits = it->second.visits;
        }
        walk = it->second;
      } else {
        walk = Walk(type, from_local, need_total);
        visits = walk.visits;
      }
      // The walk's own charge, where it exceeds the nominal pass charged above.
      const int64_t walk_work = options_.walk_visit_work * visits;
      if (walk_work > n_) Charge(walk_work - n_);
      worst = walk.worst;
      bytes_total = need_total ? walk.total : 0;
    }
    const int64_t pieces = PiecesNeeded(absl::MakeConstSpan(from_local, rank_),
                                        absl::MakeConstSpan(to_local_, rank_), pending);
    const int64_t total = PendingBytesBound(bytes_total, pending, pending_unit_);
    double us = 0;
    if (time_bound) {
      us = TimeBoundUs(fastest_, worst, element_bytes_, total, n_, pieces, CrossingAlpha(type),
                       SliceBound(type));
    }
    if (time_bound && growth_) us = std::max(us, GrowthBound(type, pieces));
    return Bound{us, bytes_bound ? total : 0, options_.bytes_bound ? total : 0};
  }

  // Searcher::GrowthBound.
  double GrowthBound(const CType& type, int64_t pieces) {
    if (!permutes_move_) return (*growth_)(pieces);
    int64_t unsettled = 1;
    for (int i = 0; i < rank_; ++i) {
      const int b = type.begin(i), e = type.end[i], tb = to_.begin(i), te = to_.end[i];
      int common = 0;
      while (b + common < e && tb + common < te && type.ax[b + common] == to_.ax[tb + common]) {
        ++common;
      }
      for (int p = b + common; p < e; ++p) unsettled *= size_[type.ax[p]];
    }
    return growth_->Order(pieces, type.DimsMask() == to_dims_mask_, unsettled);
  }

  // ComputeLowerBounds' walk over the devices for a pair without pending summands: the
  // per-device maximum of lacking target elements and (with `need_total`) their sum in bytes.
  MiddleCache::Impl::Walk Walk(const CType& type, const int64_t* from_local,
                               bool need_total) const {
    AxisRole from_roles[kMaxAxes], to_roles[kMaxAxes];
    auto place = [&](const CType& c, int i, AxisRole* roles) {
      int64_t stride = 1;
      for (int s = c.end[i] - 1; s >= c.begin(i); --s) {
        roles[c.ax[s]] = AxisRole{i, stride};
        stride *= size_[c.ax[s]];
      }
    };
    for (int i = 0; i < rank_; ++i) {
      place(type, i, from_roles);
      place(to_, i, to_roles);
    }
    const Lacking lacking = LackingElements(
        absl::MakeConstSpan(size_, num_axes_), absl::MakeConstSpan(from_roles, num_axes_),
        absl::MakeConstSpan(from_local, rank_), absl::MakeConstSpan(to_roles, num_axes_),
        absl::MakeConstSpan(to_local_, rank_), target_elements_, need_total);
    return {lacking.worst, need_total ? SaturatedInt64(lacking.total * element_bytes_) : -1,
            lacking.visits};
  }

  // The axes of c's dimension i of size above 1, as a mask.
  uint32_t AxesOf(const CType& c, int i) const {
    uint32_t mask = 0;
    for (int s = c.begin(i); s < c.end[i]; ++s) {
      if (size_[c.ax[s]] > 1) mask |= 1u << c.ax[s];
    }
    return mask;
  }

  // Whether an axis of `side`'s dimension i that `other` (a mask) lacks takes `side`'s block
  // index, with the rest fixed, over a range of at least `steps`: (|a| - 1) s >= steps, s its
  // stride in that mixed radix.
  bool MovesFar(const CType& side, int i, uint32_t other, int64_t steps) const {
    int64_t stride = 1;
    for (int s = side.end[i] - 1; s >= side.begin(i); --s) {
      const int a = side.ax[s];
      if (!((other >> a) & 1u) && (size_[a] - 1) * stride >= steps) return true;
      stride *= size_[a];
    }
    return false;
  }

  // Whether some device's current and target blocks in dimension i are disjoint because an
  // axis one side holds there and the other does not moves its side's block far enough with
  // the rest fixed (the other side's block does not depend on it). `held` is AxesOf(type, i),
  // `local` its local size there. Nested local sizes (one divides the other): block f of the
  // finer side lies in block floor(f / ratio) of the coarser, so any axis of the coarser side
  // misses with some value, and an axis of the finer side once it moves f by ratio. Otherwise
  // a side's axis puts its block (L elements) at starts spread over (|a| - 1) s L elements,
  // which no block of the other side (M elements) meets all of once the spread reaches L + M,
  // i.e. (|a| - 1) s >= 1 + ceil(M / L).
  bool MovingApart(const CType& type, int i, uint32_t held, int64_t local) const {
    const int64_t target = to_local_[i];
    if (local % target == 0 || target % local == 0) {
      const bool type_finer = local <= target;
      const int64_t ratio = type_finer ? target / local : local / target;
      return type_finer ? MovesFar(to_, i, held, 1) || MovesFar(type, i, to_held_[i], ratio)
                        : MovesFar(type, i, to_held_[i], 1) || MovesFar(to_, i, held, ratio);
    }
    auto spread = [](int64_t l, int64_t m) { return 1 + m / l + (m % l != 0); };
    return MovesFar(type, i, to_held_[i], spread(local, target)) ||
           MovesFar(to_, i, held, spread(target, local));
  }

  // Walk's maximum without the walk, where some dimension shows that a device holds none of
  // its target block or every dimension's blocks nest (nullopt otherwise: walk).
  // A dimension that both sides split over axes of their own (blocks nested or not) leaves
  // some device with nothing: the one at 0 on the first side's axes and last on the second's
  // holds the first block of one and the last of the other, each at most half the dimension.
  // Where dimension i's local sizes divide one another, a device's current and target blocks
  // there either nest or are disjoint: they are disjoint exactly when they fall into different
  // chunks of L = max(from_local, to_local) elements. Each side's chunk index is the
  // mixed-radix number of the major digits of that dimension whose sizes multiply to size / L:
  // its major axes, the last of them possibly cut to its major part (size-1 axes aside; none
  // when the sizes do not factor so). Two such numbers agree on every device exactly when they
  // read the same digits in the same order: otherwise some digit is read by one and not the
  // other (a cut axis's minor part is read by a side holding the whole axis and not by the cut
  // side), and the devices that differ in it alone differ in one number only. The side with L
  // as its local size holds whole axes multiplying to size / L, so a cut on the other side
  // means some device holds nothing. Where no prefix numbers the chunks, the axes may still
  // show a device with nothing (MovingApart). When
  // the chunks agree in every dimension, every device holds prod_i min(from_local, to_local)
  // target elements. So a comparison per axis slot replaces the pass over the devices.
  std::optional<int64_t> ClosedFormWorst(const CType& type, const int64_t* from_local) const {
    // The axes of c's dimension i, size-1 axes aside, up to a product of `chunks`; false when
    // no prefix has exactly that product, where `*cut` says whether one does once its last
    // axis is cut to its major part (of a size dividing that axis's).
    auto prefix = [&](const CType& c, int i, int64_t chunks, uint8_t* axes, int* count, bool* cut) {
      int64_t product = 1;
      *count = 0;
      *cut = false;
      for (int s = c.begin(i); s < c.end[i] && product < chunks; ++s) {
        const int64_t size = size_[c.ax[s]];
        if (size == 1) continue;
        if (chunks % product == 0 && product * size > chunks && size % (chunks / product) == 0) {
          *cut = true;
          return false;
        }
        axes[(*count)++] = c.ax[s];
        product *= size;
      }
      return product == chunks;
    };
    int64_t held = 1;
    bool unknown = false;
    // Whether dimension i shows a device with nothing without chunk prefixes: both sides split
    // it over axes of their own, or an axis moves apart. (Tried only where the prefixes do not
    // settle the dimension: where they do they say as much.)
    auto apart = [&](int i) {
      const uint32_t held = AxesOf(type, i);
      return (from_local[i] < dim_size_[i] && to_local_[i] < dim_size_[i] &&
              (held & to_held_[i]) == 0) ||
             MovingApart(type, i, held, from_local[i]);
    };
    for (int i = 0; i < rank_; ++i) {
      const int64_t a = from_local[i], b = to_local_[i];
      if (a % b != 0 && b % a != 0) {
        if (apart(i)) return target_elements_;
        unknown = true;
        continue;
      }
      held *= std::min(a, b);
      const int64_t chunks = dim_size_[i] / std::max(a, b);
      uint8_t mine[kMaxNibbles], target[kMaxNibbles];
      int m = 0, t = 0;
      bool mine_cut = false, target_cut = false;
      const bool mine_exact = prefix(type, i, chunks, mine, &m, &mine_cut);
      const bool target_exact = prefix(to_, i, chunks, target, &t, &target_cut);
      if (mine_exact && target_exact) {
        if (!std::equal(mine, mine + m, target, target + t)) return target_elements_;
      } else if ((mine_exact && target_cut) || (mine_cut && target_exact) || apart(i)) {
        return target_elements_;
      } else {
        unknown = true;
      }
    }
    if (unknown) return std::nullopt;
    return target_elements_ - held;
  }

  // Searcher::WithinBounds.
  bool WithinBounds(const Node& node) const {
    return WithinSearchBounds(options_, node.us, node.cost, node.h.us, node.h.bytes_floor);
  }

  using Floor = std::tuple<double, int64_t, int>;
  MiddleCache::Impl::Class* PermuteClass(const CType& s, const int64_t* local, bool* complete);
  // The axes a member of s's permute class may place (relevant, not partial in s), in mesh
  // order, with their sizes; returns how many.
  int ClassPool(const CType& s, uint8_t* pool, int64_t* pool_size) const;
  // The members of s's permute class in PermuteClass's order, `leaf(member)` for each while
  // the budget lasts. `skip(unsettled)` prunes the subtree below a placement that leaves its
  // dimension's common prefix with the target, given the product of the placed axes outside
  // those prefixes (GrowthBound's unsettled, which only grows below).
  template <typename Leaf, typename Skip>
  void EnumerateClass(const CType& s, const int64_t* local, Leaf leaf, Skip skip);
  // The keys of s's permute class in this search's classes_ (partial mask, local shape) and in
  // the shared cache (also the relevant axes, which differ between searches).
  std::pair<std::array<int64_t, kMaxRank + 1>, std::array<int64_t, kMaxRank + 2>> ClassKeys(
      const CType& s, const int64_t* local) const {
    std::pair<std::array<int64_t, kMaxRank + 1>, std::array<int64_t, kMaxRank + 2>> keys = {};
    keys.first[0] = s.partial;
    std::copy(local, local + rank_, keys.first.begin() + 1);
    keys.second[0] = relevant_mask_;
    std::copy(keys.first.begin(), keys.first.end(), keys.second.begin() + 1);
    return keys;
  }
  // The number of members PermuteClass enumerates, saturated at MaxPermuteClassSize + 1.
  int64_t CountPermuteClass(const CType& s, const int64_t* local) const;
  // Charges what PermuteClass's enumeration of `count` members charges (kTypeWork per member
  // while within budget; the whole budget past MaxPermuteClassSize members); false when that
  // enumeration is cut short (then the class yields no edge: the search is over budget).
  bool ChargeEnumeration(int64_t count);
  // The permute edges of `s` when every member is bounded (Searcher::MemberOutOfBounds): the
  // members of its class in PermuteClass's order, skipping subtrees of the enumeration whose
  // every member is out of bounds, so that large classes of which a few members qualify are
  // neither stored nor scanned. Same edges, order and work as Neighbors' loop over
  // PermuteClass.
  void WalkPermuteClass(const CType& s, const int64_t* local, int64_t pieces, int64_t in_bytes,
                        double path_us, double permute_us, const Floor& floor,
                        absl::FunctionRef<bool(const StateKey&, const Floor&)> improvable,
                        absl::FunctionRef<void(const CType&, int64_t)> add_permute);
  // `path`: (modeled time, bytes, steps) of the best path to `s`; `improvable` as in
  // Searcher::Neighbors, by state key.
  void Neighbors(const CType& s, int64_t in_bytes, bool after_permute, const Floor& path,
                 absl::FunctionRef<bool(const StateKey&, const Floor&)> improvable,
                 std::vector<Edge>& edges);
  absl::Status WorkExhausted() const {
    return absl::ResourceExhaustedError(
        absl::StrCat("plan search hit its work budget of ", options_.max_work, " units (", settled_,
                     " states settled on a mesh of ", mesh_.num_devices(),
                     " devices) before reaching ", ToText()));
  }

  const Mesh& mesh_;
  const SearchOptions& options_;
  MiddleCache::Impl& cache_;
  const bool shared_;
  int num_axes_ = 0;
  int64_t n_ = 0;
  int64_t size_[kMaxAxes] = {};
  int rank_ = 0;
  int64_t dim_size_[kMaxRank] = {};
  DistType template_;  // Element type and global shape; no axes.
  DistType from_text_, to_text_;  // Canonical, for messages (SearchOptions::describe_failures).
  std::string FromText() const { return FailureText(options_, from_text_, "the source"); }
  std::string ToText() const { return FailureText(options_, to_text_, "the target"); }
  uint32_t relevant_mask_ = 0;
  // The slice bound's sets S with the target's digits per dimension (SetUpSlices).
  struct Slices {
    SliceSet set;
    SliceDigits target[kMaxRank];
  };
  std::vector<Slices> slices_;
  uint32_t sized_ = 0;  // Axes of size above 1 (set up with slices_).
  std::vector<int> relevant_;
  CType from_, to_;
  uint64_t to_dims_key_ = 0;  // to_.DimsKey() and to_.DimsMask(), asked for every edge.
  uint32_t to_dims_mask_ = 0;
  int64_t to_local_[kMaxRank] = {};
  uint32_t to_held_[kMaxRank] = {};  // AxesOf(to_, i), asked for by every closed form.
  int64_t target_elements_ = 0;
  __int128 pending_unit_ = 0;
  int64_t element_bytes_ = 0;
  AxisCost fastest_;
  bool uniform_ = true;
  AxisCost axis_cost_[kMaxAxes];
  // From axis_cost_, for PermuteUs's greedy (non-uniform models); holds the changed devices
  // (scratch).
  mutable std::optional<LinkOrder> links_;
  // Non-uniform models: the Slower of every axis of size above 1, and the axes of size above 1
  // whose alpha or bandwidth is that bound's (the only ones PairingIsSlowest needs).
  AxisCost slowest_;
  uint32_t slowest_axes_ = 0;
  // SlowestOf of every mask, on meshes of up to kSlowestTableAxes axes under a non-uniform
  // model (permute pricing asks for it per edge).
  static constexpr int kSlowestTableAxes = 10;
  std::vector<std::optional<AxisCost>> slowest_of_;
  // PermuteUs's buffers, kept across calls.
  struct PermuteScratch {
    std::vector<uint64_t> codes;  // DeviceCodes.
    uint64_t field[kMaxAxes] = {};
    std::vector<int64_t> changed, have, need, hold_start, need_start, holders, needers, sources;
  };
  mutable PermuteScratch scratch_;
  // As Searcher's: permute edges relaxed per class only from its members of least time.
  bool once_per_class_ = false;
  absl::flat_hash_map<std::array<int64_t, kMaxRank + 1>, double> permuted_at_;
  bool permutes_move_ = false;  // As Searcher's.
  MiddleGrowthBound* growth_ = nullptr;  // In cache_.
  // Searcher::classes_: this search's classes by (partial mask, local shape).
  absl::flat_hash_map<std::array<int64_t, kMaxRank + 1>, MiddleCache::Impl::Class*> classes_;
  MiddleCache::Impl::Class partial_class_;
  int64_t settled_ = 0;
  int64_t generated_ = 0;
  int64_t work_ = 0;
};

// Searcher::PermuteClass. `complete` is false for a class cut short by the budget (not
// cached, no memo of counts).
MiddleCache::Impl::Class* Compact::PermuteClass(const CType& s, const int64_t* local,
                                                bool* complete) {
  const auto [own_key, shared_key] = ClassKeys(s, local);
  *complete = true;
  auto it = classes_.find(own_key);
  if (it != classes_.end()) return it->second;
  auto shared = cache_.classes.find(shared_key);
  if (shared != cache_.classes.end() && shared->second->enumerated &&
      shared->second->members.size() <= MaxPermuteClassSize(timed()) &&
      work_ + static_cast<int64_t>(shared->second->members.size()) * kTypeWork <=
          options_.max_work) {
    work_ += static_cast<int64_t>(shared->second->members.size()) * kTypeWork;
    return classes_.emplace(own_key, shared->second.get()).first->second;
  }

  std::vector<CType> members;
  const size_t max_members = MaxPermuteClassSize(timed());
  EnumerateClass(
      s, local,
      [&](const CType& t) {
        Charge(kTypeWork);
        members.push_back(t);
        if (members.size() > max_members) work_ = options_.max_work + 1;
      },
      [](int64_t) { return false; });
  auto fill = [&](MiddleCache::Impl::Class& c) {
    c.members = std::move(members);
    c.keys.resize(c.members.size());
    c.weights.clear();  // Sized on the class's first count: most classes are never counted.
    for (size_t m = 0; m < c.members.size(); ++m) c.keys[m] = c.members[m].DimsKey();
  };
  if (OverBudget()) {
    fill(partial_class_);
    partial_class_.moved.clear();
    partial_class_.key_bytes.clear();
    partial_class_.counted.clear();
    *complete = false;
    return &partial_class_;
  }
  auto& slot = cache_.classes[shared_key];
  if (slot == nullptr) slot = std::make_unique<MiddleCache::Impl::Class>();  // Else sized only.
  fill(*slot);
  slot->size = static_cast<int64_t>(slot->members.size());
  slot->enumerated = true;
  return classes_.emplace(own_key, slot.get()).first->second;
}

int Compact::ClassPool(const CType& s, uint8_t* pool, int64_t* pool_size) const {
  int count = 0;
  for (int a : relevant_) {
    if (!(s.partial & (1u << a))) {
      pool[count] = static_cast<uint8_t>(a);
      pool_size[count++] = size_[a];
    }
  }
  return count;
}

int64_t Compact::CountPermuteClass(const CType& s, const int64_t* local) const {
  uint8_t pool[kMaxAxes];
  int64_t pool_size[kMaxAxes];
  const int pool_count = ClassPool(s, pool, pool_size);
  const int64_t cap = static_cast<int64_t>(MaxPermuteClassSize(timed())) + 1;
  // A member puts, in each dimension d, some set of unused pool axes whose sizes multiply to
  // d's quotient, in any of its |set|! orders (every prefix of such an order divides the
  // quotient, so the enumeration reaches them all). Axes of one size are interchangeable, so
  // count by dimension over how many axes of each size are used so far: placing n of the r
  // unused axes of a size has C(r, n) choices. (Over the sets of axes used, one state per
  // subset, a mesh of twelve size-2 atoms had 4 096 states where this has 13.)
  int64_t group_size[kMaxAxes];
  int group_count[kMaxAxes];
  int groups = 0;
  for (int i = 0; i < pool_count; ++i) {
    const int at =
        static_cast<int>(std::find(group_size, group_size + groups, pool_size[i]) - group_size);
    if (at == groups) {
      group_size[groups] = pool_size[i];
      group_count[groups++] = 0;
    }
    ++group_count[at];
  }
  // A state numbers the used counts u (0 <= u_j <= count_j) in mixed radix.
  int64_t stride[kMaxAxes + 1] = {1};
  for (int j = 0; j < groups; ++j) stride[j + 1] = stride[j] * (group_count[j] + 1);
  int64_t binomial[kMaxAxes + 1][kMaxAxes + 1] = {};
  for (int r = 0; r <= kMaxAxes; ++r) {
    binomial[r][0] = 1;
    for (int n = 1; n <= r; ++n) binomial[r][n] = binomial[r - 1][n - 1] + binomial[r - 1][n];
  }
  int64_t factorial[kMaxAxes + 1] = {1};
  for (int k = 1; k <= kMaxAxes; ++k) factorial[k] = factorial[k - 1] * k;
  // Counts are capped sums of positive products, each factor at least 1: saturating every
  // step at `cap` gives min(cap, exact count). A capped count times a factor up to 15! fits.
  auto times = [&](int64_t count, int64_t factor) {
    return static_cast<int64_t>(std::min<__int128>(__int128{count} * factor, cap));
  };
  absl::InlinedVector<int64_t, 64> ways(stride[groups], 0), next(stride[groups], 0);
  ways[0] = 1;
  absl::InlinedVector<std::array<int, kMaxAxes>, 8> choices;  // Per dimension: n per group.
  std::array<int, kMaxAxes> n = {};
  for (int d = 0; d < rank_; ++d) {
    const int64_t quotient = dim_size_[d] / local[d];
    choices.clear();
    auto choose = [&](auto& self, int j, int64_t product) -> void {
      if (j == groups) {
        if (product == quotient) choices.push_back(n);
        return;
      }
      for (n[j] = 0; n[j] <= group_count[j]; ++n[j]) {
        self(self, j + 1, product);
        if (quotient / product < group_size[j] || quotient % (product * group_size[j]) != 0) {
          break;
        }
        product *= group_size[j];
      }
      n[j] = 0;
    };
    choose(choose, 0, 1);
    std::fill(next.begin(), next.end(), 0);
    for (int64_t state = 0; state < stride[groups]; ++state) {
      if (ways[state] == 0) continue;
      for (const std::array<int, kMaxAxes>& pick : choices) {
        int64_t count = ways[state], to = state;
        int placed = 0;
        for (int j = 0; j < groups && count != 0; ++j) {
          const int used = static_cast<int>(state / stride[j] % (group_count[j] + 1));
          const int unused = group_count[j] - used;
          count = pick[j] > unused ? 0 : times(count, binomial[unused][pick[j]]);
          to += pick[j] * stride[j];
          placed += pick[j];
        }
        if (count == 0) continue;
        next[to] = std::min(cap, next[to] + times(count, factorial[placed]));
      }
    }
    std::swap(ways, next);
  }
  int64_t total = 0;
  for (int64_t count : ways) total = std::min(cap, total + count);
  return total;
}

bool Compact::ChargeEnumeration(int64_t count) {
  const int64_t max_work = options_.max_work;
  if (work_ > max_work) return false;
  // The enumeration stops before the first member that finds the budget spent, and right
  // after the member that exceeds MaxPermuteClassSize, which spends it.
  const int64_t within_budget = (max_work - work_) / kTypeWork + 1;
  const int64_t too_many = static_cast<int64_t>(MaxPermuteClassSize(timed())) + 1;
  const int64_t pushed = std::min({count, within_budget, too_many});
  work_ += pushed * kTypeWork;
  if (pushed == too_many) work_ = max_work + 1;
  return work_ <= max_work;
}

void Compact::WalkPermuteClass(const CType& s, const int64_t* local, int64_t pieces,
                               int64_t in_bytes, double path_us, double permute_us,
                               const Floor& floor,
                               absl::FunctionRef<bool(const StateKey&, const Floor&)> improvable,
                               absl::FunctionRef<void(const CType&, int64_t)> add_permute) {
  const auto [own_key, shared_key] = ClassKeys(s, local);
  MiddleCache::Impl::Class* info = nullptr;
  if (auto it = classes_.find(own_key); it != classes_.end()) {
    info = it->second;  // Charged when this search first met the class, as PermuteClass.
  } else {
    auto& slot = cache_.classes[shared_key];
    if (slot == nullptr) slot = std::make_unique<MiddleCache::Impl::Class>();
    if (slot->size < 0) slot->size = CountPermuteClass(s, local);
    if (!ChargeEnumeration(slot->size)) return;  // PermuteClass's class would be cut short.
    info = classes_.emplace(own_key, slot.get()).first->second;
  }
  const uint64_t key = s.DimsKey();
  bool have_in = false;
  int64_t w_in[kMaxAxes];
  // Members whose bound exceeds this are out of bounds (Searcher::MemberOutOfBounds). A
  // subtree is skipped when a lower bound on its members' bounds exceeds it by more than
  // rounding: every member below has a bound of at least Order(pieces, /*same_axes=*/true,
  // unsettled) (the smaller of its two cases), which only grows as axes are placed (g is
  // monotone, unsettled only gains factors). Every member visited is then tested exactly.
  const double limit = options_.max_cost_us - path_us - permute_us;
  const double slack = 1e-9 * std::max(1.0, std::abs(options_.max_cost_us));
  // Whether members whose unsettled product is at least `unsettled` may all be skipped; the
  // few distinct products are remembered.
  std::pair<int64_t, bool> seen[16];
  int num_seen = 0;
  auto out_of_bounds = [&](int64_t unsettled) {
    for (int k = 0; k < num_seen; ++k) {
      if (seen[k].first == unsettled) return seen[k].second;
    }
    const bool out = growth_->Order(pieces, true, unsettled) > limit + slack;
    if (num_seen < 16) seen[num_seen++] = {unsettled, out};
    return out;
  };
  if (out_of_bounds(1)) return;
  EnumerateClass(
      s, local,
      [&](const CType& t) {
        const uint64_t member = t.DimsKey();
        if (member == key) return;
        if (path_us + permute_us + GrowthBound(t, pieces) > options_.max_cost_us) return;
        if (once_per_class_ && !improvable(StateKey{member, s.partial}, floor)) return;
        auto [memo, fresh] = info->moved_by_key.try_emplace({key, member});
        if (fresh) {
          if (!have_in) {
            KeyWeights(s, w_in);
            have_in = true;
          }
          int64_t w_out[kMaxAxes];
          KeyWeights(t, w_out);
          int64_t steps = 0;
          const int64_t moved = Moved(w_in, w_out, &steps);
          memo->second = {moved, steps};
        }
        Charge(memo->second.second * kCountStepWork);
        add_permute(t, memo->second.first * in_bytes);
      },
      out_of_bounds);
}

template <typename Leaf, typename Skip>
void Compact::EnumerateClass(const CType& s, const int64_t* local, Leaf leaf, Skip skip) {
  uint8_t pool[kMaxAxes];
  int64_t pool_size[kMaxAxes];
  const int pool_count = ClassPool(s, pool, pool_size);
  uint32_t used = 0;  // Bit i: pool[i] is placed.
  CType t;
  t.rank = static_cast<uint8_t>(rank_);
  t.partial = s.partial;
  int count = 0;
  // Fill dimension `dim` until its axes' product is exactly its size / local size (the
  // enumeration of Searcher::PermuteClass, in the same order). `unsettled` is the product of
  // the placed axes outside the common prefix of their dimension with the target's,
  // `matching` whether the current dimension is still in it.
  auto rec = [&](auto& self, int dim, int64_t remaining, int64_t unsettled,
                 bool matching) -> void {
    if (OverBudget()) return;
    if (dim == rank_) {
      leaf(t);
      return;
    }
    if (remaining == 1) {
      t.end[dim] = static_cast<uint8_t>(count);
      const int next = dim + 1;
      self(self, next, next < rank_ ? dim_size_[next] / local[next] : 1, unsettled, true);
    }
    const int target_slot = to_.begin(dim) + count - t.begin(dim);
    // The unplaced pool entries in ascending order; a size above `remaining` cannot divide it.
    for (uint32_t free = ~used & ((1u << pool_count) - 1); free != 0; free &= free - 1) {
      const int i = std::countr_zero(free);
      const int64_t size = pool_size[i];
      if (size > remaining || remaining % size != 0) continue;
      const bool still = matching && target_slot < to_.end[dim] &&
                         to_.ax[target_slot] == pool[i];
      if (!still && skip(unsettled * size)) continue;  // The whole subtree.
      used |= 1u << i;
      t.ax[count++] = pool[i];
      self(self, dim, remaining / size, still ? unsettled : unsettled * size, still);
      --count;
      used &= ~(1u << i);
    }
  };
  rec(rec, 0, dim_size_[0] / local[0], 1, true);
}

// Searcher::Neighbors, in the same order.
void Compact::Neighbors(const CType& s, int64_t in_bytes, bool after_permute, const Floor& path,
                        absl::FunctionRef<bool(const StateKey&, const Floor&)> improvable,
                        std::vector<Edge>& edges) {
  const auto& [path_us, path_bytes, path_steps] = path;
  edges.clear();
  // `us`: the collective's modeled time (time mode); permutes are priced later (-1).
  auto add = [&](const Op& op, const CType& next, int64_t cost, double us) {
    Charge(kTypeWork);
    edges.push_back(Edge{op, next, cost, timed() ? (op.kind == Kind::kPermute ? -1 : us) : 0});
  };
  int64_t local[kMaxRank];
  for (int j = 0; j < rank_; ++j) local[j] = LocalDim(s, j);

  const uint32_t taken = s.DimsMask() | s.partial;
  uint8_t unused[kMaxAxes], reducible[kMaxAxes];
  int num_unused = 0, num_reducible = 0;
  for (int a : relevant_) {
    if (!(taken & (1u << a))) unused[num_unused++] = static_cast<uint8_t>(a);
  }
  for (int a = 0; a < num_axes_; ++a) {
    if ((s.partial & ~to_.partial) & (1u << a)) {
      reducible[num_reducible++] = static_cast<uint8_t>(a);
    }
  }
  // ForEachOrderedTuple of search.cc: every ordered tuple of distinct pool elements, by depth
  // first extension while `visit` returns true, checking the budget before each extension.
  auto for_each_tuple = [&](const uint8_t* pool, int size, auto visit) {
    uint8_t tuple[kMaxAxes];
    uint32_t used = 0;
    auto rec = [&](auto& self, int len) -> void {
      for (int i = 0; i < size && !OverBudget(); ++i) {
        if (used & (1u << i)) continue;
        used |= 1u << i;
        tuple[len] = pool[i];
        if (visit(tuple, len + 1)) self(self, len + 1);
        used &= ~(1u << i);
      }
    };
    rec(rec, 0);
  };

  if (options_.allow_all_slice && num_unused > 0) {
    for_each_tuple(unused, num_unused, [&](const uint8_t* axes, int count) {
      int64_t k = 1;
      for (int t = 0; t < count; ++t) k *= size_[axes[t]];
      bool any = false;  // As search.cc: no edge here means none for any extension.
      for (int dim = 0; dim < rank_; ++dim) {
        if (local[dim] % k != 0) continue;
        any = true;
        add(Op{Kind::kSlice, static_cast<uint8_t>(dim), static_cast<uint8_t>(count), 0},
            Rearranged(s, -1, 0, dim, axes, count), 0, 0);
      }
      return any;
    });
  }
  if (options_.allow_reduce_scatter && num_reducible > 0) {
    for_each_tuple(reducible, num_reducible, [&](const uint8_t* axes, int count) {
      int64_t k = 1;
      uint32_t mask = 0;
      for (int t = 0; t < count; ++t) {
        k *= size_[axes[t]];
        mask |= 1u << axes[t];
      }
      bool any = false;
      for (int dim = 0; dim < rank_; ++dim) {
        if (local[dim] % k != 0) continue;
        any = true;
        CType next = Rearranged(s, -1, 0, dim, axes, count);
        next.partial &= ~mask;
        add(Op{Kind::kReduceScatter, static_cast<uint8_t>(dim), static_cast<uint8_t>(count), 0},
            next, n_ * ((k - 1) * (in_bytes / k)),
            timed() ? StepUs(Kind::kReduceScatter, axes, count, in_bytes) : 0);
      }
      return any;
    });
  }
  if (options_.allow_all_reduce && num_reducible > 0) {
    // Subsets in mesh order.
    for (uint64_t subset = 1; subset < (uint64_t{1} << num_reducible) && !OverBudget(); ++subset) {
      uint8_t axes[kMaxAxes];
      int count = 0;
      int64_t k = 1;
      CType next = s;
      for (int i = 0; i < num_reducible; ++i) {
        if (!(subset & (uint64_t{1} << i))) continue;
        axes[count++] = reducible[i];
        k *= size_[reducible[i]];
        next.partial &= ~(1u << reducible[i]);
      }
      const int64_t received =
          static_cast<int64_t>((__int128{2} * (k - 1) * in_bytes + k - 1) / k);
      add(Op{Kind::kAllReduce}, next, n_ * received,
          timed() ? StepUs(Kind::kAllReduce, axes, count, in_bytes) : 0);
    }
  }
  for (int i = 0; i < rank_; ++i) {
    const int b = s.begin(i), e = s.end[i];
    int64_t k = 1;
    for (int len = 1; len <= e - b; ++len) {
      k *= size_[s.ax[e - len]];
      const uint8_t* suffix = s.ax + e - len;
      if (options_.allow_all_gather) {
        add(Op{Kind::kGather, static_cast<uint8_t>(i), static_cast<uint8_t>(len), 0},
            Rearranged(s, i, len, -1, nullptr, 0), n_ * ((k - 1) * in_bytes),
            timed() ? StepUs(Kind::kGather, suffix, len, in_bytes) : 0);
      }
      if (options_.allow_all_to_all) {
        // The same for every destination j: it depends on the moved axes only.
        const double us = timed() ? StepUs(Kind::kAllToAll, suffix, len, in_bytes) : 0;
        const int64_t cost = n_ * ((k - 1) * (in_bytes / k));
        for (int j = 0; j < rank_; ++j) {
          if (j == i || local[j] % k != 0) continue;
          add(Op{Kind::kAllToAll, static_cast<uint8_t>(i), static_cast<uint8_t>(len),
                 static_cast<uint8_t>(j)},
              Rearranged(s, i, len, j, suffix, len), cost, us);
        }
      }
    }
  }
  // As SearchPlan: no permute right after a permute (bytes mode, uniform models).
  if (options_.allow_permute && !(after_permute && (!timed() || uniform_))) {
    int64_t pieces = 0;  // As Searcher's.
    if (permutes_move_) {
      pieces = PiecesNeeded(absl::MakeConstSpan(local, rank_),
                            absl::MakeConstSpan(to_local_, rank_), Pending(s));
      if (PermuteClassOutOfBounds(options_, fastest_, growth_, pieces, path_us, path_bytes,
                                  in_bytes)) {
        return;
      }
    }
    if (once_per_class_) {
      std::array<int64_t, kMaxRank + 1> class_key = {};
      class_key[0] = s.partial;
      std::copy(local, local + rank_, class_key.begin() + 1);
      auto [at, first] = permuted_at_.try_emplace(class_key, path_us);
      if (!first && path_us > at->second) return;
      at->second = std::min(at->second, path_us);
    }
    const double permute_us =
        fastest_.alpha_us + fastest_.TransferUs(static_cast<double>(in_bytes));
    const Floor floor{path_us + permute_us, path_bytes + in_bytes, path_steps + 1};
    // Searcher::MemberOutOfBounds applies: every member is bounded, so the class is walked.
    if (growth_ && permutes_move_ && options_.use_heuristic) {
      WalkPermuteClass(s, local, pieces, in_bytes, path_us, permute_us, floor, improvable,
                       [&](const CType& member, int64_t cost) {
                         add(Op{Kind::kPermute}, member, cost, -1);
                       });
      return;
    }
    bool complete = false;
    MiddleCache::Impl::Class* info = PermuteClass(s, local, &complete);
    std::vector<std::pair<int64_t, int64_t>>* memo = nullptr;
    const uint64_t key = s.DimsKey();
    // Per source state: only searches sharing the cache expand a state again (one search
    // settles each state once), and a class of thousands of members made this memo most of
    // the time of `optimal`'s searches on 6-atom refinements.
    if (complete && shared_) {
      memo = &info->moved[key];
      if (memo->empty()) memo->assign(info->members.size(), {-1, 0});
    }
    bool have_in = false;
    int64_t w_in[kMaxAxes];
    const bool by_bytes = n_ <= kKeyByteDevices;
    std::vector<uint8_t> in_key_bytes;  // With by_bytes, built on the first count.
    for (size_t m = 0; m < info->members.size(); ++m) {
      if (info->keys[m] == key || OverBudget()) continue;
      if (once_per_class_ && !improvable(StateKey{info->keys[m], s.partial}, floor)) continue;
      int64_t steps = 0;
      int64_t moved = 0;
      if (memo != nullptr && (*memo)[m].first >= 0) {
        std::tie(moved, steps) = (*memo)[m];
      } else {
        if (!have_in) {
          KeyWeights(s, w_in);
          have_in = true;
        }
        if (info->weights.empty()) info->weights.assign(info->members.size(), {-1});
        if (info->weights[m][0] < 0) KeyWeights(info->members[m], info->weights[m].data());
        if (by_bytes && info->counted.empty()) {
          info->counted.assign(info->members.size(), 0);
          info->key_bytes.resize(info->members.size());
        }
        if (by_bytes && info->counted[m]) {
          // The same count and work as Moved (charged as a walk over the devices).
          if (in_key_bytes.empty()) in_key_bytes = KeyBytes(w_in);
          if (info->key_bytes[m].empty()) info->key_bytes[m] = KeyBytes(info->weights[m].data());
          moved = CountDifferentBytes(in_key_bytes, info->key_bytes[m]);
          steps = n_;
        } else {
          moved = Moved(w_in, info->weights[m].data(), &steps);
          if (by_bytes) info->counted[m] = 1;
        }
        if (memo != nullptr) (*memo)[m] = {moved, steps};
      }
      Charge(steps * kCountStepWork);
      add(Op{Kind::kPermute}, info->members[m], moved * in_bytes, -1);
      if (!info->weights.empty() && info->weights[m][0] >= 0) {
        edges.back().weights = info->weights[m].data();
      }
    }
  }
}

// Searcher::Run.
absl::StatusOr<std::vector<Step>> Compact::Run(MiddlePath* out) {
  if (LocalBytes(from_) > options_.max_local_bytes) {
    return absl::NotFoundError(absl::StrCat("the source ", FromText(), " has ", LocalBytes(from_),
                                            " local bytes, above the bound of ",
                                            options_.max_local_bytes));
  }
  const StateKey target = to_.Key();
  const Bound source_bound = Heuristic(from_);
  generated_ = 1;
  if (SourceOutOfBounds(options_, source_bound)) {
    return absl::NotFoundError(absl::StrCat("no plan from ", FromText(), " to ", ToText(),
                                            SourceOutOfBoundsReason(options_)));
  }
  // Past the source, a search generates dozens of states and expands states of dozens of
  // edges: its containers start at that size rather than double their way there.
  constexpr size_t kReserved = 64;
  std::vector<Node> nodes;
  nodes.reserve(kReserved);
  absl::flat_hash_map<StateKey, int> index;
  index.reserve(kReserved);
  using Entry = std::tuple<double, int64_t, int, int>;
  std::vector<Entry> entries;
  entries.reserve(kReserved);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue(std::greater<Entry>(),
                                                                            std::move(entries));
  nodes.push_back(Node{from_, 0, 0, -1, Op{}, false, 0, source_bound, 0});
  index.emplace(from_.Key(), 0);
  queue.emplace(nodes[0].h.us, nodes[0].h.bytes, 0, 0);
  std::vector<Edge> edges;
  edges.reserve(kReserved);
  while (!queue.empty()) {
    auto [f, f_bytes, steps, id] = queue.top();
    queue.pop();
    if (nodes[id].settled || f_bytes != nodes[id].cost + nodes[id].h.bytes ||
        steps != nodes[id].steps || f != nodes[id].us + nodes[id].h.us) {
      continue;
    }
    const int64_t cost = nodes[id].cost;
    if (!CanBeatIncumbent(options_, f, f_bytes)) {
      return absl::NotFoundError(absl::StrCat("no plan from ", FromText(), " to ", ToText(),
                                              " is cheaper than the one held"));
    }
    nodes[id].settled = true;
    if (nodes[id].type.Key() == target) {
      std::vector<int> path;
      for (int n = id; n > 0; n = nodes[n].parent) path.push_back(n);
      std::reverse(path.begin(), path.end());
      if (out != nullptr) {
        out->known = true;
        out->bytes = nodes[id].cost;
        out->step_us.clear();
        for (int n : path) out->step_us.push_back(nodes[n].edge_us);
      }
      std::vector<Step> result;
      for (int n : path) {
        const Node& node = nodes[n];
        const CType& parent = nodes[node.parent].type;
        DistType type = Decode(node.type);
        Collective op;
        if (node.op.kind == Kind::kPermute && options_.fill_permute_pairs) {
          op = MinimalPermute(mesh_, Decode(parent), type, options_.cost_model);
        } else {
          op = ToCollective(parent, node.type, node.op);
        }
        result.push_back(Step{std::move(op), std::move(type)});
      }
      return result;
    }
    if (++settled_ > options_.max_states) {
      return absl::ResourceExhaustedError(absl::StrCat("plan search hit its cap of ",
                                                       options_.max_states,
                                                       " states before reaching ", ToText()));
    }
    const CType current = nodes[id].type;
    const double us = nodes[id].us;
    auto improvable = [&](const StateKey& key, const Floor& floor) {
      auto it = index.find(key);
      if (it == index.end()) return true;
      const Node& node = nodes[it->second];
      return !node.settled && !(Floor{node.us, node.cost, node.steps} <= floor);
    };
    const int64_t current_bytes = LocalBytes(current);
    std::optional<PricedInput> priced;  // Priced(current), on its first exact permute price.
    Neighbors(current, current_bytes, id > 0 && nodes[id].op.kind == Kind::kPermute,
              Floor{us, cost, steps}, improvable, edges);
    if (OverBudget()) return WorkExhausted();
    for (Edge& edge : edges) {
      const int64_t new_cost = cost + edge.cost;
      if (new_cost > options_.max_cost) continue;
      // all_to_all and permutes keep the local size.
      if (edge.op.kind != Kind::kAllToAll && edge.op.kind != Kind::kPermute &&
          LocalBytes(edge.type) > options_.max_local_bytes) {
        continue;
      }
      const int new_steps = steps + 1;
      const StateKey key = edge.type.Key();
      auto it = index.find(key);
      const int existing = it == index.end() ? -1 : it->second;
      if (existing >= 0 && nodes[existing].settled) continue;
      if (timed() && edge.us < 0) {
        const double optimistic =
            edge.cost > 0
                ? fastest_.alpha_us + fastest_.TransferUs(static_cast<double>(current_bytes))
                : 0;
        if (existing >= 0 && std::make_tuple(us + optimistic, new_cost, new_steps) >=
                                 std::make_tuple(nodes[existing].us, nodes[existing].cost,
                                                 nodes[existing].steps)) {
          continue;
        }
        if (!uniform_ && edge.cost > 0) {
          if (!priced) priced = Priced(current);
          // The same charge as SearchPlan's, so both stop at the same point.
          if (!Charge(PermutePricingWork(mesh_, priced->holders))) return WorkExhausted();
          edge.us = PermuteUs(*priced, current, edge.type, edge.weights);
        } else {
          edge.us = optimistic;
        }
      }
      const double new_us = us + edge.us;
      if (timed() && new_us > options_.max_cost_us) continue;
      if (existing < 0) {
        const int node_id = static_cast<int>(nodes.size());
        index.emplace(key, node_id);
        const Bound h = Heuristic(edge.type);
        if (OverBudget()) return WorkExhausted();
        nodes.push_back(
            Node{edge.type, new_cost, new_steps, id, edge.op, false, new_us, h, edge.us});
        ++generated_;
        if (WithinBounds(nodes.back())) {
          queue.emplace(new_us + h.us, new_cost + h.bytes, new_steps, node_id);
        }
      } else {
        Node& node = nodes[existing];
        if (std::make_tuple(new_us, new_cost, new_steps) >=
            std::make_tuple(node.us, node.cost, node.steps)) {
          continue;
        }
        node.cost = new_cost;
        node.steps = new_steps;
        node.us = new_us;
        node.parent = id;
        node.op = edge.op;
        node.edge_us = edge.us;
        if (WithinBounds(node)) {
          queue.emplace(new_us + node.h.us, new_cost + node.h.bytes, new_steps, existing);
        }
      }
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "no plan from ", FromText(), " to ", ToText(), " keeps every step within ",
      options_.max_local_bytes, " local bytes with whole-axis collectives (exhaustive search of ",
      settled_, " reachable types)"));
}

}  // namespace

std::optional<absl::StatusOr<std::vector<Step>>> CompactSearch(
    const Mesh& mesh, const DistType& from, const DistType& to, const SearchOptions& options,
    MiddleCache* cache, SearchStats* stats, MiddlePath* path) {
  RESHARD_CHECK(options.class_cache == nullptr) << "CompactSearch keeps its own class cache";
  if (path != nullptr) *path = MiddlePath{};
  if (!Compact::Encodable(mesh, from, to)) return std::nullopt;
  MiddleCache own;
  Compact search(mesh, from, to, options, cache != nullptr ? cache->impl() : own.impl(),
                 cache != nullptr);
  absl::StatusOr<std::vector<Step>> steps = search.Run(path);
  if (stats != nullptr) {
    stats->states_settled = search.settled();
    stats->states_generated = search.generated();
    stats->work = search.work();
  }
  if (steps.ok() && !steps->empty()) steps->back().type = to;
  return steps;
}

absl::StatusOr<std::vector<Step>> MiddleSearch(const Mesh& mesh, const DistType& from,
                                               const DistType& to, const SearchOptions& options,
                                               MiddleCache& cache, SearchStats* stats,
                                               MiddlePath* path) {
  RESHARD_CHECK(!options.allow_all_slice && !options.allow_all_gather &&
                !options.allow_all_reduce && !options.allow_reduce_scatter &&
                options.allow_all_to_all && !options.fill_permute_pairs &&
                options.class_cache == nullptr)
      << "MiddleSearch is the all_to_all/permute search";
  std::optional<absl::StatusOr<std::vector<Step>>> steps =
      CompactSearch(mesh, from, to, options, &cache, stats, path);
  if (!steps) {
    SearchOptions fallback = options;
    fallback.class_cache = &cache.impl().fallback;
    return SearchPlan(mesh, from, to, fallback, stats);
  }
  return *std::move(steps);
}

}  // namespace reshard::internal
