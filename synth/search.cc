// search.cc — Dijkstra over distributed types (see search.h for the state space).

#include "synth/search.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "synth/compact_search.h"
#include "synth/placement.h"
#include "synth/search_bounds.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

// Partial axes in mesh order, so that equal types have equal keys.
DistType Canonical(const Mesh& mesh, DistType type) {
  type.partial = PartialInMeshOrder(mesh, type);
  return type;
}

// Local size of dimension `dim` of a valid type.
int64_t LocalDim(const Mesh& mesh, const DistType& type, int dim) {
  return type.dims[dim].size / mesh.GroupSize(type.dims[dim].axes);
}

// The slice bound (search_bounds.h) of `type` toward `to`: the largest SliceTransferUs over
// the sets of SliceSets; 0 where the partial axes of size >= 2 of the two types differ (a
// pending reduction, or a dead end), and under a uniform `model` (no sets; callers skip the
// call there). Compact::SliceBound is the same loop on compact types. Adds the counting work
// to `*work`.
double SliceBoundUs(const Mesh& mesh, const CostModel& model, const DistType& type,
                    const DistType& to, int64_t* work) {
  int64_t layers = 1;  // Summand layers: the product of the partial axes' sizes.
  for (const AxisName& axis : type.partial) {
    const int64_t size = mesh.AxisSize(axis);
    if (size > 1 && !ContainsAxis(to.partial, axis)) return 0;
    layers *= size;
  }
  for (const AxisName& axis : to.partial) {
    if (mesh.AxisSize(axis) > 1 && !ContainsAxis(type.partial, axis)) return 0;
  }
  const int k = mesh.num_axes();
  std::vector<double> gbps(k);
  std::vector<int64_t> sizes(k);
  std::vector<bool> eligible(k);  // Of size >= 2 and not partial: may be in S.
  for (int a = 0; a < k; ++a) {
    gbps[a] = model.Axis(mesh.axes()[a].name).gbps;
    sizes[a] = mesh.axes()[a].size;
    eligible[a] = sizes[a] > 1 && !ContainsAxis(type.partial, mesh.axis_name(a));
  }
  std::vector<internal::SliceDim> dims(type.rank());
  std::vector<internal::SliceDigits> type_digits(type.rank()), target_digits(type.rank());
  double most = 0;
  for (const internal::SliceSet& set : internal::SliceSets(
           gbps, sizes, eligible, model.Fastest(mesh).gbps, mesh.num_devices(), layers)) {
    auto digits = [&](const AxisList& axes, internal::SliceDigits& out) {
      out.count = 0;
      for (const AxisName& axis : axes) {
        const int a = mesh.WholeAxisIndex(axis);
        if (sizes[a] > 1) out.Add(sizes[a], set.slot[a]);
      }
    };
    for (int i = 0; i < type.rank(); ++i) {
      digits(type.dims[i].axes, type_digits[i]);
      digits(to.dims[i].axes, target_digits[i]);
      dims[i] = {type.dims[i].size, &type_digits[i], &target_digits[i]};
    }
    const int64_t lacking = internal::MoreLackingSlice(
        dims.data(), type.rank(), set.sizes.data(), static_cast<int>(set.sizes.size()), work);
    most = std::max(most, internal::SliceTransferUs(set.gbps, lacking,
                                                    ElementBytes(to.element_type), set.devices));
  }
  return most;
}

// Calls `visit` on every ordered tuple of distinct elements of `pool` (length >= 1) until
// `stop()` returns true, extending a tuple only while `visit` returns true for it (with many
// axes the tuples are exponentially many: the work budget must be able to cut the enumeration
// short, and tuples that can only lead to more tuples without edges must not be enumerated).
void ForEachOrderedTuple(const AxisList& pool, const std::function<bool(const AxisList&)>& visit,
                         const std::function<bool()>& stop) {
  AxisList tuple;
  std::vector<bool> used(pool.size(), false);
  std::function<void()> rec = [&]() {
    for (size_t i = 0; i < pool.size() && !stop(); ++i) {
      if (used[i]) continue;
      used[i] = true;
      tuple.push_back(pool[i]);
      if (visit(tuple)) rec();
      tuple.pop_back();
      used[i] = false;
    }
  };
  rec();
}

struct Edge {
  Collective op;  // For permutes, the pairs are filled in only on the returned path.
  DistType type;  // Empty when `member` is set.
  // A permute's result: a member of the permute class, borrowed (the class outlives the
  // edges) so that the many permute edges of a state copy no type until one becomes a node.
  const DistType* member = nullptr;
  const DistType& result() const { return member != nullptr ? *member : type; }
  int64_t cost = 0;  // Total bytes received.
  double us = 0;     // Modeled time (time mode); -1 for a permute not priced yet.
  // The member's TypeKey, borrowed from its class like `member`; null: compute it.
  const std::string* key = nullptr;
};

// Work units (SearchOptions::max_work) are calibrated to roughly a nanosecond: a device visit
// is one unit, building a type (an edge, a permute class member) costs about this many, and
// one step of MovedDevices' count (a hash-map update) this many.
constexpr int64_t kTypeWork = 256;
constexpr int64_t kCountStepWork = 16;
// The DistType search spends about this many times as long per unit as the compact one on
// the meshes it stands in for it (SearchPlan, below).
constexpr int64_t kDistTypeWorkFactor = 8;

class Searcher {
 public:
  Searcher(const Mesh& mesh, const DistType& from, const DistType& to, const SearchOptions& options)
      : mesh_(mesh), from_(Canonical(mesh, from)), to_(Canonical(mesh, to)), options_(options) {
    if (options_.cost_model != nullptr) {
      fastest_ = options_.cost_model->Fastest(mesh);
      uniform_ = options_.cost_model->UniformOn(mesh);
    }
    bool size_one = false;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      const MeshAxis& axis = mesh.axes()[a];
      const AxisName& name = mesh.axis_name(a);
      if (axis.size > 1 || AxisUse(from_, name) != kUnused || AxisUse(to_, name) != kUnused) {
        relevant_axes_.push_back(name);
        size_one |= axis.size == 1;
      }
    }
    once_per_class_ = timed() && uniform_ && !size_one;
    permutes_move_ = !size_one;
    // Restricted to a valley's middle (all_to_all and permutes keep the local size): the
    // stronger bound of MiddleGrowthBound holds too, as in synth/compact_search.cc.
    if (timed() && !options_.allow_all_slice && !options_.allow_all_gather &&
        !options_.allow_all_reduce && !options_.allow_reduce_scatter) {
      growth_.emplace(fastest_.alpha_us, fastest_.TransferUs(1.0),
                      static_cast<double>(LocalBytes(mesh_, from_)));
    }
  }

  absl::StatusOr<std::vector<Step>> Run();
  absl::Status WorkExhausted() const;
  // The types as failure messages name them (SearchOptions::describe_failures).
  std::string FromText() const { return internal::FailureText(options_, from_, "the source"); }
  std::string ToText() const { return internal::FailureText(options_, to_, "the target"); }
  int64_t settled() const { return settled_; }
  int64_t work() const { return work_; }
  int64_t generated() const { return generated_; }

 private:
  using Bound = internal::RestBound;
  struct Node {
    DistType type;
    int64_t cost = 0;
    int steps = 0;
    int parent = -1;
    Collective op;
    bool settled = false;
    double us = 0;  // Time mode: modeled time of the best path so far.
    Bound h;        // Lower bounds of the rest of the way (A*).
  };
  bool timed() const { return options_.cost_model != nullptr; }
  // The devices holding each placement of `type`: the product of its replicated axes' sizes.
  int64_t Holders(const DistType& type) const {
    int64_t used = mesh_.GroupSize(type.partial);
    for (const Dim& dim : type.dims) used *= mesh_.GroupSize(dim.axes);
    return mesh_.num_devices() / used;
  }
  Bound Heuristic(const DistType& type) {
    const bool time_bound = timed() && options_.use_heuristic;
    // In time mode bytes only break ties; the byte bound would reorder equally fast paths
    // (same optimum, another of the tied plans), so it guides bytes mode only.
    const bool bytes_bound = !timed() && options_.bytes_bound;
    if (!time_bound && !bytes_bound) return Bound{};
    Charge(mesh_.num_devices());  // One pass over the devices.
    const internal::LowerBounds bounds = bounds_to_(type);
    const int64_t total =
        internal::PendingBytesBound(bounds.bytes_total, bounds.pending, pending_unit_);
    double us = 0;
    if (time_bound) {
      int64_t slice_work = 0;
      const double slice_us =
          uniform_ || !options_.slice_bound
              ? 0.0
              : SliceBoundUs(mesh_, *options_.cost_model, type, to_, &slice_work);
      Charge(slice_work);
      us = internal::TimeBoundUs(
          fastest_, bounds.max_lacking_elements, ElementBytes(to_.element_type), total,
          mesh_.num_devices(), bounds.pieces,
          internal::CrossingAlphaUs(mesh_, *options_.cost_model, type, to_), slice_us);
      if (growth_) us = std::max(us, GrowthBound(type, bounds.pieces));
    }
    return Bound{us, bytes_bound ? total : 0, options_.bytes_bound ? total : 0};
  }
  // The middle's bound (MiddleGrowthBound, with its order term when permutes move devices).
  double GrowthBound(const DistType& type, int64_t pieces) {
    if (!permutes_move_) return (*growth_)(pieces);
    AxisList axes, target_axes;
    int64_t unsettled = 1;
    for (int i = 0; i < type.rank(); ++i) {
      const AxisList& have = type.dims[i].axes;
      const AxisList& want = to_.dims[i].axes;
      size_t common = 0;
      while (common < have.size() && common < want.size() && have[common] == want[common]) {
        ++common;
      }
      for (size_t p = common; p < have.size(); ++p) unsettled *= mesh_.AxisSize(have[p]);
      axes.insert(axes.end(), have.begin(), have.end());
      target_axes.insert(target_axes.end(), want.begin(), want.end());
    }
    std::sort(axes.begin(), axes.end());
    std::sort(target_axes.begin(), target_axes.end());
    return growth_->Order(pieces, axes == target_axes, unsettled);
  }
  // Whether the permute edge to class member `member` (PiecesNeeded `pieces`) would make a
  // node never queued for max_cost_us: in a middle whose permutes move devices, the edge
  // costs at least `permute_us` (the cheapest permute) and the member's heuristic is at least
  // its GrowthBound, which needs no walk over the devices. Such edges are not built.
  bool MemberOutOfBounds(const DistType& member, int64_t pieces, double path_us,
                         double permute_us) {
    if (!growth_ || !permutes_move_ || !options_.use_heuristic) return false;
    return path_us + permute_us + GrowthBound(member, pieces) > options_.max_cost_us;
  }
  // Adds to the work done; false once the budget is spent.
  bool Charge(int64_t units) {
    work_ += units;
    return work_ <= options_.max_work;
  }
  bool OverBudget() const { return work_ > options_.max_work; }
  // Branch and bound (internal::WithinSearchBounds): whether a plan through `node` (its path
  // so far plus its bounds) can still stay within the cost bounds and beat the incumbent, with
  // the byte floor deciding among paths as fast as the incumbent (its plateau of ties is where
  // such searches spend their time when the incumbent is optimal).
  bool WithinBounds(const Node& node) const {
    return internal::WithinSearchBounds(options_, node.us, node.cost, node.h.us,
                                        node.h.bytes_floor);
  }
  // A compact identity of a canonical state: element type and global shape are fixed within
  // one search, so the mesh axis indices of each dimension (a 0 ending the dimension) followed
  // by the partial axes' indices (canonical order) determine the type. Each index is written
  // as index + 1 in base-128 varint, which never contains a 0 byte.
  std::string TypeKey(const DistType& type) const {
    std::string key;
    key.reserve(mesh_.num_axes() + type.rank() + 1);
    auto put = [&key](uint64_t v) {
      for (; v >= 128; v >>= 7) key.push_back(static_cast<char>((v & 127) | 128));
      key.push_back(static_cast<char>(v));
    };
    for (const Dim& dim : type.dims) {
      for (const AxisName& axis : dim.axes) put(mesh_.AxisIndex(axis) + 1);
      key.push_back(0);
    }
    for (const AxisName& axis : type.partial) put(mesh_.AxisIndex(axis) + 1);
    return key;
  }

  // `path`: (modeled time, bytes, steps) of the best path to `s`. `improvable(key, floor)`:
  // whether a path whose (modeled time, bytes, steps) is at least `floor` could still improve
  // the state with that TypeKey (it is not settled and its best path is not <= floor); see
  // once_per_class_.
  // `in_bytes`: LocalBytes of `s`.
  using Floor = std::tuple<double, int64_t, int>;
  std::vector<Edge> Neighbors(const DistType& s, int64_t in_bytes, bool after_permute,
                              const Floor& path,
                              absl::FunctionRef<bool(const std::string&, const Floor&)> improvable);
  // The types one permute can reach from s (s included). Incomplete (and not cached) when
  // the work budget ran out while enumerating it.
  struct PermuteClassInfo {
    // Shared with SearchOptions::class_cache when there is one; never null once built.
    std::shared_ptr<const std::vector<DistType>> members;
    // Its key in SearchOptions::class_cache; empty without a cache or when incomplete.
    std::string shared_key;
    // Each member's placement-key roles and TypeKey, built on first use (every settled member
    // of the class counts moved devices to all the others and looks them up).
    mutable std::vector<std::vector<internal::AxisRole>> roles;
    mutable std::vector<std::string> keys;
    // On meshes of at most internal::kKeyByteDevices devices: each member's per-device
    // placement keys, so that a count is a byte comparison (internal::PlacementKeyBytes).
    mutable std::vector<std::vector<uint8_t>> key_bytes;
  };
  // `local`: LocalShape of `s`; `key`: its class's identity (partial axes and local shape).
  const PermuteClassInfo& PermuteClass(const DistType& s, const std::vector<int64_t>& local,
                                       const std::string& key);
  int64_t UniformCost(const DistType& in, const Collective& op) const {
    return mesh_.num_devices() * BytesReceived(mesh_, in, op, 0);
  }

  const Mesh& mesh_;
  DistType from_;
  DistType to_;
  internal::LowerBoundsTo bounds_to_{mesh_, to_};  // After mesh_ and to_.
  const __int128 pending_unit_ = internal::PendingUnit(mesh_, to_);  // After to_.
  SearchOptions options_;
  AxisList relevant_axes_;
  absl::flat_hash_map<std::string, PermuteClassInfo> classes_;
  PermuteClassInfo partial_class_;
  int64_t settled_ = 0;
  int64_t generated_ = 0;
  int64_t work_ = 0;
  AxisCost fastest_;
  bool uniform_ = true;
  // Time mode, uniform model, no size-1 axis in play: a permute costs alpha + B/bw to every
  // other member of the class (two distinct members differ in the block of some device unless
  // they differ only in size-1 axes), so the class's permute edges need to be relaxed only
  // from the settled members of least modeled time: from a member settled later at a strictly
  // larger time they reach every member strictly later than an earlier relaxation did.
  // Ties are still relaxed (their bytes may differ). `permuted_at_`: per class, the least
  // time at which its edges were relaxed. For the same reason a permute edge is not built at
  // all (Run would drop it, and building it counts the devices it moves) when its member is
  // settled or already has a path no worse than (path time + alpha + B/bw, path bytes + B,
  // path steps + 1): the edge costs exactly that time and moves at least one device.
  bool once_per_class_ = false;
  absl::flat_hash_map<std::string, double> permuted_at_;
  // No size-1 axis in play: a permute to any other member of a class moves a device, so it
  // receives at least the local bytes and costs at least the cheapest permute (see
  // internal::PermuteClassOutOfBounds).
  bool permutes_move_ = false;
  std::optional<internal::MiddleGrowthBound> growth_;
  std::optional<internal::PlacementKeyBytes> key_bytes_;  // Meshes of <= 256 devices.
};

const Searcher::PermuteClassInfo& Searcher::PermuteClass(const DistType& s,
                                                         const std::vector<int64_t>& local,
                                                         const std::string& key) {
  auto it = classes_.find(key);
  if (it != classes_.end()) return it->second;
  // The shared cache also depends on the axes this search may place (relevant_axes_) and,
  // for safety, on the global shape.
  std::string shared_key;
  if (options_.class_cache != nullptr) {
    std::vector<int64_t> sizes;
    for (const Dim& dim : s.dims) sizes.push_back(dim.size);
    shared_key = absl::StrCat(key, "|", JoinAxes(relevant_axes_, ","), "|",
                              absl::StrJoin(sizes, ","), "|", static_cast<int>(s.element_type));
    auto shared = options_.class_cache->classes.find(shared_key);
    // Charged exactly as the enumeration below would be (kTypeWork per member); when that
    // would exceed the budget, enumerate after all so the budget cuts it at the same point.
    if (shared != options_.class_cache->classes.end() &&
        shared->second->size() <= MaxPermuteClassSize(timed()) &&
        work_ + static_cast<int64_t>(shared->second->size()) * kTypeWork <= options_.max_work) {
      work_ += static_cast<int64_t>(shared->second->size()) * kTypeWork;
      PermuteClassInfo info;
      info.members = shared->second;  // Shared, not copied.
      info.shared_key = shared_key;
      return classes_.emplace(key, std::move(info)).first->second;
    }
  }

  std::vector<DistType> members;
  AxisList pool;
  for (const AxisName& axis : relevant_axes_) {
    if (!ContainsAxis(s.partial, axis)) pool.push_back(axis);
  }
  std::vector<bool> used(pool.size(), false);
  std::vector<int64_t> pool_size;  // Looked up by name once, not per recursion step.
  for (const AxisName& axis : pool) pool_size.push_back(mesh_.AxisSize(axis));
  DistType t = s;
  for (Dim& dim : t.dims) dim.axes.clear();
  // Fill dimension `dim` until its axes' product is exactly size / local size.
  std::function<void(int, int64_t)> rec = [&](int dim, int64_t remaining) {
    if (OverBudget()) return;
    if (dim == t.rank()) {
      Charge(kTypeWork);
      members.push_back(t);
      // Memory as much as time: with many equal-size axes a class has factorially many
      // members, each a full type.
      if (members.size() > MaxPermuteClassSize(timed())) work_ = options_.max_work + 1;
      return;
    }
    if (remaining == 1) {
      int next = dim + 1;
      rec(next, next < t.rank() ? t.dims[next].size / local[next] : 1);
    }
    for (size_t i = 0; i < pool.size(); ++i) {
      const int64_t size = pool_size[i];
      if (used[i] || remaining % size != 0) continue;
      used[i] = true;
      t.dims[dim].axes.push_back(pool[i]);
      rec(dim, remaining / size);
      t.dims[dim].axes.pop_back();
      used[i] = false;
    }
  };
  if (t.rank() == 0) {
    members.push_back(t);
  } else {
    rec(0, t.dims[0].size / local[0]);
  }
  PermuteClassInfo info;
  info.members = std::make_shared<const std::vector<DistType>>(std::move(members));
  if (OverBudget()) {
    partial_class_ = std::move(info);
    return partial_class_;
  }
  if (options_.class_cache != nullptr) {
    options_.class_cache->classes[shared_key] = info.members;
    info.shared_key = shared_key;
  }
  return classes_.emplace(key, std::move(info)).first->second;
}

std::vector<Edge> Searcher::Neighbors(
    const DistType& s, int64_t in_bytes, bool after_permute, const Floor& path,
    absl::FunctionRef<bool(const std::string&, const Floor&)> improvable) {
  const auto& [path_us, path_bytes, path_steps] = path;
  std::vector<Edge> edges;
  auto add = [&](Collective op, DistType next, int64_t cost, const DistType* member = nullptr,
                 const std::string* key = nullptr) {
    Charge(kTypeWork);
    double us = 0;
    if (timed()) {
      us = op.kind == CollectiveKind::kCollectivePermute
               ? -1
               : options_.cost_model->StepCostUs(mesh_, s, op);
    }
    edges.push_back(Edge{std::move(op), std::move(next), member, cost, us, key});
  };

  AxisList unused;
  for (const AxisName& axis : relevant_axes_) {
    if (AxisUse(s, axis) == kUnused) unused.push_back(axis);
  }
  AxisList reducible;
  for (const AxisName& axis : s.partial) {
    if (!ContainsAxis(to_.partial, axis)) reducible.push_back(axis);
  }

  if (options_.allow_all_slice && !unused.empty()) {
    // A tuple whose group size divides no dimension's local size has no edge, and neither has
    // any extension of it (its group size is a multiple).
    ForEachOrderedTuple(unused, [&](const AxisList& axes) {
      int64_t k = mesh_.GroupSize(axes);
      bool any = false;
      for (int dim = 0; dim < s.rank(); ++dim) {
        if (LocalDim(mesh_, s, dim) % k != 0) continue;
        any = true;
        DistType next = s;
        next.dims[dim].axes.insert(next.dims[dim].axes.end(), axes.begin(), axes.end());
        add(Collective::AllSlice(axes, dim), std::move(next), 0);
      }
      return any;
    }, [&] { return OverBudget(); });
  }
  if (options_.allow_reduce_scatter && !reducible.empty()) {
    ForEachOrderedTuple(reducible, [&](const AxisList& axes) {
      int64_t k = mesh_.GroupSize(axes);
      bool any = false;
      for (int dim = 0; dim < s.rank(); ++dim) {
        if (LocalDim(mesh_, s, dim) % k != 0) continue;
        any = true;
        DistType next = s;
        next.dims[dim].axes.insert(next.dims[dim].axes.end(), axes.begin(), axes.end());
        EraseAxesIf(next.partial, [&](const AxisName& a) { return ContainsAxis(axes, a); });
        Collective op = Collective::ReduceScatter(axes, dim);
        int64_t cost = UniformCost(s, op);
        add(std::move(op), std::move(next), cost);
      }
      return any;
    }, [&] { return OverBudget(); });
  }
  if (options_.allow_all_reduce && !reducible.empty()) {
    // Subsets in mesh order (s.partial is canonical). With many partial axes they are
    // exponentially many (each an edge, charged): the budget cuts them short. (Beyond 63
    // axes only subsets of the first 63 are reached before it does.)
    const size_t count = std::min<size_t>(reducible.size(), 63);
    for (uint64_t mask = 1; mask < (uint64_t{1} << count) && !OverBudget(); ++mask) {
      AxisList axes;
      for (size_t i = 0; i < count; ++i) {
        if (mask & (uint64_t{1} << i)) axes.push_back(reducible[i]);
      }
      DistType next = s;
      EraseAxesIf(next.partial, [&](const AxisName& a) { return ContainsAxis(axes, a); });
      Collective op = Collective::AllReduce(axes);
      int64_t cost = UniformCost(s, op);
      add(std::move(op), std::move(next), cost);
    }
  }
  for (int i = 0; i < s.rank(); ++i) {
    const AxisList& list = s.dims[i].axes;
    for (size_t len = 1; len <= list.size(); ++len) {
      AxisList suffix(list.end() - len, list.end());
      if (options_.allow_all_gather) {
        DistType next = s;
        next.dims[i].axes.resize(list.size() - len);
        Collective op = Collective::AllGather(suffix, i);
        int64_t cost = UniformCost(s, op);
        add(std::move(op), std::move(next), cost);
      }
      if (options_.allow_all_to_all) {
        int64_t k = mesh_.GroupSize(suffix);
        for (int j = 0; j < s.rank(); ++j) {
          if (j == i || LocalDim(mesh_, s, j) % k != 0) continue;
          DistType next = s;
          next.dims[i].axes.resize(list.size() - len);
          next.dims[j].axes.insert(next.dims[j].axes.end(), suffix.begin(), suffix.end());
          Collective op = Collective::AllToAll(suffix, i, j);
          int64_t cost = UniformCost(s, op);
          add(std::move(op), std::move(next), cost);
        }
      }
    }
  }
  // Two permutes in a row are never needed: one permute from the first's input moves at most
  // the devices either moves (a device both keep stays), so it receives no more bytes, and
  // under a uniform model it costs one alpha + B/bw instead of two. (Under a non-uniform model
  // the pairs' links matter, so there the rule is not applied.)
  if (options_.allow_permute && !(after_permute && (!timed() || uniform_))) {
    const std::vector<int64_t> local = LocalShape(mesh_, s);
    int64_t pieces = 0;  // PiecesNeeded, the same at every member (with permutes_move_).
    if (permutes_move_) {
      pieces = bounds_to_.PendingAndPieces(s, local).second;
      if (internal::PermuteClassOutOfBounds(options_, fastest_, growth_ ? &*growth_ : nullptr,
                                            pieces, path_us, path_bytes, in_bytes)) {
        return edges;
      }
    }
    const std::string class_key =
        absl::StrCat(JoinAxes(s.partial, ","), "|", absl::StrJoin(local, ","));
    if (once_per_class_) {
      auto [at, first] = permuted_at_.try_emplace(class_key, path_us);
      if (!first && path_us > at->second) return edges;
      at->second = std::min(at->second, path_us);
    }
    const PermuteClassInfo& info = PermuteClass(s, local, class_key);
    // Counts from s to each member, remembered across the searches sharing the cache (the
    // same states recur in the middle searches of different candidates). The work charged
    // is the same whether remembered or counted.
    std::vector<std::pair<int64_t, int64_t>>* memo = nullptr;
    if (!info.shared_key.empty()) {
      memo = &options_.class_cache->moved[absl::StrCat(info.shared_key, "#", TypeKey(s))];
      if (memo->empty()) memo->assign(info.members->size(), {-1, 0});
    }
    std::vector<internal::AxisRole> s_roles;  // Built on the first count.
    const bool by_bytes = mesh_.num_devices() <= internal::kKeyByteDevices;
    std::vector<uint8_t> s_key_bytes;  // Built on the first count, with by_bytes.
    // What Run prices such a permute at (uniform model: exact), for `improvable`.
    const double permute_us =
        fastest_.alpha_us + fastest_.TransferUs(static_cast<double>(in_bytes));
    const Floor floor{path_us + permute_us, path_bytes + in_bytes, path_steps + 1};
    if (info.keys.empty()) info.keys.resize(info.members->size());
    for (size_t m = 0; m < info.members->size(); ++m) {
      const DistType& member = (*info.members)[m];
      if (member == s || OverBudget()) continue;
      if (info.keys[m].empty()) info.keys[m] = TypeKey(member);
      if (MemberOutOfBounds(member, pieces, path_us, permute_us)) continue;
      if (once_per_class_ && !improvable(info.keys[m], floor)) continue;
      int64_t steps = 0;
      int64_t moved = 0;
      if (memo != nullptr && (*memo)[m].first >= 0) {
        std::tie(moved, steps) = (*memo)[m];
      } else {
        if (s_roles.empty()) s_roles = internal::KeyRoles(mesh_, s);
        if (info.roles.empty()) info.roles.resize(info.members->size());
        if (info.roles[m].empty()) info.roles[m] = internal::KeyRoles(mesh_, member);
        if (by_bytes) {
          // The same count and work as MovedDevicesFromRoles (a walk over the devices).
          if (!key_bytes_) key_bytes_.emplace(mesh_);
          if (s_key_bytes.empty()) s_key_bytes = (*key_bytes_)(s_roles);
          if (info.key_bytes.empty()) info.key_bytes.resize(info.members->size());
          if (info.key_bytes[m].empty()) info.key_bytes[m] = (*key_bytes_)(info.roles[m]);
          moved = internal::CountDifferentBytes(s_key_bytes, info.key_bytes[m]);
          steps = mesh_.num_devices();
        } else {
          moved = internal::MovedDevicesFromRoles(mesh_, s_roles, info.roles[m], &steps);
        }
        if (memo != nullptr) (*memo)[m] = {moved, steps};
      }
      Charge(steps * kCountStepWork);
      add(Collective::Permute({}), DistType{}, moved * in_bytes, &member, &info.keys[m]);
    }
  }
  return edges;
}

absl::Status Searcher::WorkExhausted() const {
  return absl::ResourceExhaustedError(
      absl::StrCat("plan search hit its work budget of ", options_.max_work, " units (", settled_,
                   " states settled on a mesh of ", mesh_.num_devices(),
                   " devices) before reaching ", ToText()));
}

absl::StatusOr<std::vector<Step>> Searcher::Run() {
  if (LocalBytes(mesh_, from_) > options_.max_local_bytes) {
    return absl::NotFoundError(
        absl::StrCat("the source ", FromText(), " has ", LocalBytes(mesh_, from_),
                     " local bytes, above the bound of ", options_.max_local_bytes));
  }
  std::vector<Node> nodes;
  // Keyed by TypeKey, not ToString: printing every edge's type dominated the search.
  absl::flat_hash_map<std::string, int> index;
  // Min-heap on (time + its bound, bytes + their bound, steps, node id): A* on the
  // lexicographic cost (time, bytes, steps) in time mode (byte bound 0) and (bytes, steps) in
  // bytes mode (time terms 0). The bounds are consistent (a step's cost covers the drop of
  // the bound), so a settled node's path is optimal and ties still go to fewer steps.
  using Entry = std::tuple<double, int64_t, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  nodes.push_back(Node{from_, 0, 0, -1, Collective{}, false, 0, Heuristic(from_)});
  index.emplace(TypeKey(from_), 0);
  queue.emplace(nodes[0].h.us, nodes[0].h.bytes, 0, 0);
  generated_ = 1;
  if (internal::SourceOutOfBounds(options_, nodes[0].h)) {
    return absl::NotFoundError(absl::StrCat("no plan from ", FromText(), " to ", ToText(),
                                            internal::SourceOutOfBoundsReason(options_)));
  }
  int64_t& settled = settled_;
  while (!queue.empty()) {
    auto [f, f_bytes, steps, id] = queue.top();
    queue.pop();
    if (nodes[id].settled || f_bytes != nodes[id].cost + nodes[id].h.bytes ||
        steps != nodes[id].steps || f != nodes[id].us + nodes[id].h.us) {
      continue;
    }
    const int64_t cost = nodes[id].cost;
    if (!internal::CanBeatIncumbent(options_, f, f_bytes)) {
      return absl::NotFoundError(absl::StrCat("no plan from ", FromText(), " to ", ToText(),
                                              " is cheaper than the one held"));
    }
    nodes[id].settled = true;
    if (nodes[id].type == to_) {
      std::vector<int> path;
      for (int n = id; n > 0; n = nodes[n].parent) path.push_back(n);
      std::reverse(path.begin(), path.end());
      std::vector<Step> result;
      for (int n : path) {
        Collective op = nodes[n].op;
        if (op.kind == CollectiveKind::kCollectivePermute && options_.fill_permute_pairs) {
          op = MinimalPermute(mesh_, nodes[nodes[n].parent].type, nodes[n].type,
                              options_.cost_model);
        }
        result.push_back(Step{std::move(op), nodes[n].type});
      }
      return result;
    }
    if (++settled > options_.max_states) {
      return absl::ResourceExhaustedError(absl::StrCat("plan search hit its cap of ",
                                                       options_.max_states,
                                                       " states before reaching ", ToText()));
    }
    DistType current = nodes[id].type;
    const double us = nodes[id].us;
    auto improvable = [&](const std::string& key, const Floor& floor) {
      auto it = index.find(key);
      if (it == index.end()) return true;
      const Node& node = nodes[it->second];
      return !node.settled && !(Floor{node.us, node.cost, node.steps} <= floor);
    };
    // A permute's optimistic price (below, and in Neighbors) depends on these only.
    const int64_t current_bytes = LocalBytes(mesh_, current);
    std::vector<Edge> edges = Neighbors(
        current, current_bytes,
        nodes[id].op.kind == CollectiveKind::kCollectivePermute && id > 0,
        Floor{us, cost, steps}, improvable);
    if (OverBudget()) return WorkExhausted();
    for (Edge& edge : edges) {
      int64_t new_cost = cost + edge.cost;
      if (new_cost > options_.max_cost) continue;
      // all_to_all and permutes keep the local size (and `current` is within the bound), so
      // only the other kinds need the check, which builds the local shape.
      if (edge.op.kind != CollectiveKind::kAllToAll &&
          edge.op.kind != CollectiveKind::kCollectivePermute &&
          LocalBytes(mesh_, edge.result()) > options_.max_local_bytes) {
        continue;
      }
      int new_steps = steps + 1;
      std::string own_key;
      if (edge.key == nullptr) own_key = TypeKey(edge.result());
      const std::string& key = edge.key != nullptr ? *edge.key : own_key;
      auto it = index.find(key);
      Node* existing = it == index.end() ? nullptr : &nodes[it->second];
      if (existing != nullptr && existing->settled) continue;
      if (timed() && edge.us < 0) {
        // Price a permute: optimistically over the fastest link first, and exactly (with the
        // pairs MinimalPermute would pick) only when that could improve the neighbour.
        double optimistic =
            edge.cost > 0
                ? fastest_.alpha_us + fastest_.TransferUs(static_cast<double>(current_bytes))
                : 0;
        if (existing != nullptr &&
            std::make_tuple(us + optimistic, new_cost, new_steps) >=
                std::make_tuple(existing->us, existing->cost, existing->steps)) {
          continue;
        }
        if (!uniform_ && edge.cost > 0 && !Charge(PermutePricingWork(mesh_, Holders(current)))) {
          return WorkExhausted();
        }
        edge.us = uniform_ || edge.cost == 0
                      ? optimistic
                      : options_.cost_model->StepCostUs(
                            mesh_, current,
                            MinimalPermute(mesh_, current, edge.result(), options_.cost_model));
      }
      double new_us = us + edge.us;
      if (timed() && new_us > options_.max_cost_us) continue;
      if (existing == nullptr) {
        int node_id = static_cast<int>(nodes.size());
        index.emplace(key, node_id);
        Bound h = Heuristic(edge.result());
        if (OverBudget()) return WorkExhausted();
        DistType type = edge.member != nullptr ? *edge.member : std::move(edge.type);
        nodes.push_back(Node{std::move(type), new_cost, new_steps, id, std::move(edge.op),
                             false, new_us, h});
        ++generated_;
        if (WithinBounds(nodes.back())) {
          queue.emplace(new_us + h.us, new_cost + h.bytes, new_steps, node_id);
        }
      } else {
        if (std::make_tuple(new_us, new_cost, new_steps) >=
            std::make_tuple(existing->us, existing->cost, existing->steps)) {
          continue;
        }
        existing->cost = new_cost;
        existing->steps = new_steps;
        existing->us = new_us;
        existing->parent = id;
        existing->op = std::move(edge.op);
        if (WithinBounds(*existing)) {
          queue.emplace(new_us + existing->h.us, new_cost + existing->h.bytes, new_steps,
                        it->second);
        }
      }
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "no plan from ", FromText(), " to ", ToText(), " keeps every step within ",
      options_.max_local_bytes, " local bytes with whole-axis collectives (exhaustive search of ",
      settled, " reachable types)"));
}

// The search places every axis `from` or `to` uses, size-1 axes included: they change no
// block, but each ordering of them is another state and another edge (reductions and slices
// over them cost nothing, so every ordered tuple of them is an edge), factorially many. Past
// this many the search refuses up front: its budget would be spent, slowly and with much
// memory, on their orders alone. (Synthesize's strategies search the mesh without its size-1
// axes; SearchPlan searches the mesh it is given.)
constexpr int kMaxSizeOneAxesInPlay = 16;

absl::Status CheckSearchable(const Mesh& mesh, const DistType& from, const DistType& to) {
  int size_one = 0;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const AxisName& name = mesh.axis_name(a);
    if (mesh.axes()[a].size == 1 &&
        (AxisUse(from, name) != kUnused || AxisUse(to, name) != kUnused)) {
      ++size_one;
    }
  }
  if (size_one <= kMaxSizeOneAxesInPlay) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the plan search would place ", size_one, " mesh axes of size 1 that ", ToString(from),
      " or ", ToString(to), " use; their orders alone multiply its states factorially (at most ",
      kMaxSizeOneAxesInPlay, " are searched)"));
}

// SearchPlanOnDistTypes without the preconditions check.
absl::StatusOr<std::vector<Step>> RunSearcher(const Mesh& mesh, const DistType& from,
                                              const DistType& to, const SearchOptions& options,
                                              SearchStats* stats) {
  Searcher searcher(mesh, from, to, options);
  absl::StatusOr<std::vector<Step>> steps = searcher.Run();
  if (stats != nullptr) {
    stats->states_settled = searcher.settled();
    stats->states_generated = searcher.generated();
    stats->work = searcher.work();
  }
  if (steps.ok() && !steps->empty()) steps->back().type = to;
  return steps;
}

}  // namespace

absl::Status ValidateEnds(const Mesh& mesh, const DistType& from, const DistType& to) {
  if (absl::Status s = Validate(mesh, from); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("source type: ", s.message()));
  }
  if (absl::Status s = Validate(mesh, to); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("target type: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status CheckReshardable(const Mesh& mesh, const DistType& from, const DistType& to) {
  if (absl::Status s = ValidateEnds(mesh, from, to); !s.ok()) return s;
  if (from.element_type != to.element_type) {
    return absl::InvalidArgumentError(
        absl::StrCat("element types differ: ", Absl(ElementTypeName(from.element_type)), " vs ",
                     Absl(ElementTypeName(to.element_type))));
  }
  bool same_shape = from.rank() == to.rank();
  for (int i = 0; same_shape && i < from.rank(); ++i) {
    same_shape = from.dims[i].size == to.dims[i].size;
  }
  if (!same_shape) {
    auto shape = [](const DistType& t) {
      std::vector<int64_t> sizes;
      for (const Dim& d : t.dims) sizes.push_back(d.size);
      return absl::StrCat("[", absl::StrJoin(sizes, ","), "]");
    };
    return absl::InvalidArgumentError(
        absl::StrCat("global shapes differ: ", shape(from), " vs ", shape(to)));
  }
  for (const AxisName& axis : to.partial) {
    if (!ContainsAxis(from.partial, axis)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the target is partial over ", Absl(axis),
                       " but the source is not: no collective creates a pending sum"));
    }
  }
  return absl::OkStatus();
}

namespace internal {

absl::StatusOr<std::vector<Step>> SearchPlanOnDistTypes(const Mesh& mesh, const DistType& from,
                                                        const DistType& to,
                                                        const SearchOptions& options,
                                                        SearchStats* stats) {
  if (absl::Status s = CheckReshardable(mesh, from, to); !s.ok()) return s;
  if (absl::Status s = CheckSearchable(mesh, from, to); !s.ok()) return s;
  return RunSearcher(mesh, from, to, options, stats);
}

}  // namespace internal

absl::StatusOr<std::vector<Step>> SearchPlan(const Mesh& mesh, const DistType& from,
                                             const DistType& to, const SearchOptions& options,
                                             SearchStats* stats) {
  if (HasSubAxes(mesh, from) || HasSubAxes(mesh, to)) {
    // The search is written for whole axes: it runs on the refinement the types need, and the
    // steps come back canonical on `mesh`. The refinement, not the spelling, decides which
    // partial axes the types share (`y:(1)4` contains `y:(1)2`), so the remaining checks run
    // there.
    if (absl::Status s = ValidateEnds(mesh, from, to); !s.ok()) return s;
    absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, SubAxisRefs(mesh, from, to));
    if (!r.ok()) return r.status();
    absl::StatusOr<std::vector<Step>> steps =
        SearchPlan(r->refined(), r->Refine(from), r->Refine(to), options, stats);
    if (!steps.ok()) return steps;
    for (Step& step : *steps) {
      step.op = Canonicalize(mesh, std::move(step.op));
      step.type = Canonicalize(mesh, std::move(step.type));
    }
    if (!steps->empty()) steps->back().type = to;
    return steps;
  }
  if (absl::Status s = CheckReshardable(mesh, from, to); !s.ok()) return s;
  if (absl::Status s = CheckSearchable(mesh, from, to); !s.ok()) return s;
  if (options.class_cache == nullptr) {
    std::optional<absl::StatusOr<std::vector<Step>>> steps =
        internal::CompactSearch(mesh, from, to, options, nullptr, stats);
    if (steps) return *std::move(steps);
  }
  // The types do not fit the compact encoding (more than 15 axes, or rank above 8): the same
  // search on DistTypes, which spends about 8 times as long per unit of work with that many
  // axes (bench/synth_latency, BM_SearchUnit), gets that fraction of the budget, so that
  // max_work bounds its time as it does the compact search's.
  SearchOptions scaled = options;
  scaled.max_work = options.max_work / kDistTypeWorkFactor;
  return RunSearcher(mesh, from, to, scaled, stats);
}

int64_t BytesLowerBound(const Mesh& mesh, const DistType& from, const DistType& to) {
  return OnWholeAxes(mesh, from, to, [](const Mesh& m, const DistType& f, const DistType& t) {
    const internal::LowerBounds bounds = internal::ComputeLowerBounds(m, f, t);
    return internal::PendingBytesBound(bounds.bytes_total, bounds.pending,
                                       internal::PendingUnit(m, t));
  });
}

double TimeLowerBoundUs(const Mesh& mesh, const CostModel& model, const DistType& from,
                        const DistType& to) {
  return OnWholeAxes(mesh, from, to, [&](const Mesh& m, const DistType& f, const DistType& t) {
    const internal::LowerBounds bounds = internal::ComputeLowerBounds(m, f, t);
    int64_t work = 0;  // Not budgeted here.
    return internal::TimeBoundOf(m, model, f, t, bounds,
                                 internal::PendingBytesBound(bounds.bytes_total, bounds.pending,
                                                             internal::PendingUnit(m, t)),
                                 model.UniformOn(m) ? 0.0 : SliceBoundUs(m, model, f, t, &work));
  });
}

}  // namespace reshard
