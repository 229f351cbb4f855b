// middle.cc — SearchPlan's all_to_all/permute search on compact types (see middle.h).
//
// Every step below mirrors a step of Searcher in search.cc; the comments name the
// counterpart. A type is CType: the mesh-axis indices of its dimensions, concatenated, with
// the end of each dimension. Element type, global shape and partial axes are the same for
// every state of a middle (all_to_all and permutes keep them), so they live in the context.

#include "synth/middle.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "synth/placement.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/cost_model.h"

namespace reshard::internal {
namespace {

// The same constants as search.cc and placement.cc (work units, device walk).
constexpr int64_t kTypeWork = 256;
constexpr int64_t kCountStepWork = 16;
constexpr int64_t kWalkDevices = 4096;
// Encoding limits: axis index + 1 fits a nibble, and a key holds 16 nibbles (one per axis
// slot and one terminating each dimension).
constexpr int kMaxAxes = 15;
constexpr int kMaxRank = 8;
constexpr int kMaxNibbles = 16;

struct CType {
  uint8_t rank = 0;
  uint8_t end[kMaxRank] = {};  // Dimension i holds ax[begin(i), end[i]).
  uint8_t ax[kMaxNibbles] = {};

  int begin(int i) const { return i == 0 ? 0 : end[i - 1]; }
  int slots() const { return rank == 0 ? 0 : end[rank - 1]; }
  // Axis indices + 1 per dimension, each dimension closed by a 0 nibble. Unique within one
  // rank (the number of 0 nibbles is the rank, so dropped leading zeros cannot collide).
  uint64_t Key() const {
    uint64_t key = 0;
    int pos = 0;
    int slot = 0;
    for (int i = 0; i < rank; ++i) {
      for (; slot < end[i]; ++slot) key |= uint64_t{ax[slot] + 1u} << (4 * pos++);
      ++pos;
    }
    return key;
  }
};

// The operation of an edge: an all_to_all of the last `len` axes of dimension i onto j, or a
// permute.
struct Op {
  bool permute = false;
  uint8_t i = 0, len = 0, j = 0;
};

}  // namespace

struct MiddleCache::Impl {
  struct Class {
    std::vector<CType> members;
    std::vector<uint64_t> keys;                                 // members[m].Key()
    std::vector<std::array<int64_t, kMaxAxes>> weights;         // Placement-key weights.
    // Per source state key: MovedDevices to each member and its work (-1: not computed).
    absl::flat_hash_map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> moved;
  };
  // Keyed by (relevant-axes mask, partial mask, local shape...).
  absl::flat_hash_map<std::array<int64_t, kMaxRank + 2>, std::unique_ptr<Class>> classes;
  // The heuristic's per-device maximum of lacking elements, by (target key, state key).
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, int64_t> lacking;
  PermuteClassCache fallback;  // For middles handed to SearchPlan.
};

MiddleCache::MiddleCache() : impl_(std::make_unique<Impl>()) {}
MiddleCache::~MiddleCache() = default;

namespace {

class Middle {
 public:
  Middle(const Mesh& mesh, const DistType& from, const DistType& to, const SearchOptions& options,
         MiddleCache::Impl& cache)
      : mesh_(mesh), to_text_(to), options_(options), cache_(cache) {
    num_axes_ = mesh.num_axes();
    n_ = mesh.num_devices();
    for (int a = 0; a < num_axes_; ++a) size_[a] = mesh.axes()[a].size;
    rank_ = from.rank();
    for (int i = 0; i < rank_; ++i) dim_size_[i] = from.dims[i].size;
    template_ = from;
    template_.partial = PartialInMeshOrder(mesh, from);  // Canonical, as Searcher's from_.
    for (const std::string& axis : from.partial) partial_mask_ |= 1u << mesh.AxisIndex(axis);
    from_ = Encode(from);
    to_ = Encode(to);
    to_key_ = to_.Key();
    bytes_ = LocalBytes(mesh, from);
    element_bytes_ = ElementBytes(from.element_type);
    bool size_one = false;
    for (int a = 0; a < num_axes_; ++a) {
      const std::string& name = mesh.axes()[a].name;
      if (size_[a] > 1 || AxisUse(from, name) != kUnused || AxisUse(to, name) != kUnused) {
        relevant_.push_back(a);
        relevant_mask_ |= 1u << a;
        size_one |= size_[a] == 1;
      }
    }
    if (options_.cost_model != nullptr) {
      fastest_ = options_.cost_model->Fastest(mesh);
      uniform_ = IsUniform(mesh, *options_.cost_model);
      once_per_class_ = uniform_ && !size_one;
      growth_ = MiddleGrowthBound(fastest_.alpha_us, fastest_.TransferUs(1.0),
                                  static_cast<double>(bytes_));
      for (int a = 0; a < num_axes_; ++a) axis_cost_[a] = options_.cost_model->Axis(mesh.axes()[a].name);
      target_elements_ = LocalElements(mesh, to);
    }
  }

  // Whether the types fit the encoding (else the caller uses SearchPlan).
  static bool Encodable(const Mesh& mesh, const DistType& from, const DistType& to) {
    if (mesh.num_axes() > kMaxAxes || from.rank() == 0 || from.rank() > kMaxRank) return false;
    // Every state uses at most the non-partial axes.
    int pool = 0;
    for (const MeshAxis& axis : mesh.axes()) {
      if (AxisUse(from, axis.name) != kPartial) ++pool;
    }
    if (pool + from.rank() > kMaxNibbles) return false;
    // Same partial axes (a valley's middle always has them; SearchPlan handles the rest).
    if (PartialInMeshOrder(mesh, from) != PartialInMeshOrder(mesh, to)) return false;
    return true;
  }

  absl::StatusOr<std::vector<Step>> Run(MiddlePath* path);
  int64_t settled() const { return settled_; }
  int64_t generated() const { return generated_; }
  int64_t work() const { return work_; }

 private:
  struct Edge {
    Op op;
    CType type;
    int64_t cost = 0;
    double us = 0;
  };
  struct Node {
    CType type;
    int64_t cost = 0;
    int steps = 0;
    int parent = -1;
    Op op;
    bool settled = false;
    double us = 0;
    double h = 0;
    double edge_us = 0;  // The us of the edge from `parent` (time mode).
  };

  CType Encode(const DistType& type) const {
    CType c;
    c.rank = static_cast<uint8_t>(type.rank());
    int slot = 0;
    for (int i = 0; i < type.rank(); ++i) {
      for (const std::string& axis : type.dims[i].axes) {
        c.ax[slot++] = static_cast<uint8_t>(mesh_.AxisIndex(axis));
      }
      c.end[i] = static_cast<uint8_t>(slot);
    }
    return c;
  }
  DistType Decode(const CType& c) const {
    DistType type = template_;
    for (int i = 0; i < rank_; ++i) {
      std::vector<std::string>& axes = type.dims[i].axes;
      axes.clear();
      for (int s = c.begin(i); s < c.end[i]; ++s) axes.push_back(mesh_.axes()[c.ax[s]].name);
    }
    return type;
  }
  std::vector<std::string> Names(const uint8_t* ax, int count) const {
    std::vector<std::string> names;
    names.reserve(count);
    for (int s = 0; s < count; ++s) names.push_back(mesh_.axes()[ax[s]].name);
    return names;
  }
  int64_t Group(const CType& c, int i) const {
    int64_t k = 1;
    for (int s = c.begin(i); s < c.end[i]; ++s) k *= size_[c.ax[s]];
    return k;
  }
  int64_t LocalDim(const CType& c, int i) const { return dim_size_[i] / Group(c, i); }

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
      if (partial_mask_ & (1u << a)) {
        partial_stride[a] = factor;
        factor *= size_[a];
      }
    }
    for (int i = rank_ - 1; i >= 0; --i) {
      scale[i] = factor;
      factor *= Group(c, i);
    }
    for (int a = 0; a < num_axes_; ++a) {
      if (partial_mask_ & (1u << a)) weight[a] = partial_stride[a];
    }
    for (int i = 0; i < c.rank; ++i) {
      int64_t stride = 1;
      for (int s = c.end[i] - 1; s >= c.begin(i); --s) {
        weight[c.ax[s]] = stride * scale[i];
        stride *= size_[c.ax[s]];
      }
    }
  }
  // MovedDevices (same count, same work) from key weights.
  int64_t Moved(const int64_t* w_in, const int64_t* w_out, int64_t* work) const {
    if (n_ > kWalkDevices) {
      std::vector<AxisRole> in(num_axes_), out(num_axes_);
      for (int a = 0; a < num_axes_; ++a) {
        in[a] = AxisRole{0, w_in[a]};
        out[a] = AxisRole{0, w_out[a]};
      }
      return MovedDevicesFromRoles(mesh_, in, out, work);
    }
    *work = n_;  // As MovedDevicesFromRoles: the same count, charged as a device walk.
    return CountMovedByWeights(absl::MakeConstSpan(size_, num_axes_),
                               absl::MakeConstSpan(w_in, num_axes_),
                               absl::MakeConstSpan(w_out, num_axes_), n_);
  }

  double StepUs(const CType& s, const CType& next, const Op& op) const {
    const double bytes = static_cast<double>(bytes_);
    if (op.permute) {
      const DistType in = Decode(s);
      return options_.cost_model->StepCostUs(
          mesh_, in, MinimalPermute(mesh_, in, Decode(next), options_.cost_model));
    }
    // CostModel::StepCostUs for an all_to_all over the moved suffix.
    const int first = s.end[op.i] - op.len;
    double k = 1;
    AxisCost group = axis_cost_[s.ax[first]];
    int64_t kk = 1;
    for (int t = first; t < s.end[op.i]; ++t) {
      const AxisCost& c = axis_cost_[s.ax[t]];
      group = AxisCost{std::max(group.alpha_us, c.alpha_us), std::min(group.gbps, c.gbps)};
      kk *= size_[s.ax[t]];
    }
    k = static_cast<double>(kk);
    return (k - 1) * group.alpha_us + group.TransferUs((k - 1) / k * bytes);
  }

  double Heuristic(const CType& type) {
    if (!timed() || !options_.use_heuristic) return 0.0;
    Charge(n_);
    // TimeLowerBoundUs(mesh, model, type, to): same partial axes, so ComputeLowerBounds' walk
    // decides. Remembered per call (the work above is charged either way).
    auto [it, inserted] = cache_.lacking.try_emplace({to_key_, type.Key()}, 0);
    if (inserted) it->second = MaxLacking(type);
    const int64_t worst = it->second;
    if (worst == 0) return 0;
    // PiecesNeeded with no pending summands (a middle keeps the partial axes).
    int64_t from_local[kMaxRank], to_local[kMaxRank];
    for (int i = 0; i < rank_; ++i) {
      from_local[i] = LocalDim(type, i);
      to_local[i] = LocalDim(to_, i);
    }
    const int64_t pieces = PiecesNeeded(absl::MakeConstSpan(from_local, rank_),
                                        absl::MakeConstSpan(to_local, rank_), 1);
    const int rounds = LatencyRounds(pieces);
    return std::max(fastest_.alpha_us * std::max(1, rounds) +
                        fastest_.TransferUs(static_cast<double>(worst * element_bytes_)),
                    growth_(pieces));
  }

  // ComputeLowerBounds(type, to).max_lacking_elements for a non-partial pair: the walk over
  // the devices of placement.cc, on fixed arrays.
  int64_t MaxLacking(const CType& type) const {
    int64_t from_local[kMaxRank], to_local[kMaxRank];
    int slot_from[kMaxAxes], slot_to[kMaxAxes];
    int64_t w_from[kMaxAxes], w_to[kMaxAxes];
    for (int a = 0; a < num_axes_; ++a) {
      slot_from[a] = slot_to[a] = -1;
      w_from[a] = w_to[a] = 0;
    }
    for (int i = 0; i < rank_; ++i) {
      from_local[i] = LocalDim(type, i);
      to_local[i] = LocalDim(to_, i);
      // Offsets (block * local size) grow by stride * local per unit of the coordinate.
      int64_t stride = from_local[i];
      for (int s = type.end[i] - 1; s >= type.begin(i); --s) {
        slot_from[type.ax[s]] = i;
        w_from[type.ax[s]] = stride;
        stride *= size_[type.ax[s]];
      }
      stride = to_local[i];
      for (int s = to_.end[i] - 1; s >= to_.begin(i); --s) {
        slot_to[to_.ax[s]] = i;
        w_to[to_.ax[s]] = stride;
        stride *= size_[to_.ax[s]];
      }
    }
    int64_t f[kMaxRank] = {}, t[kMaxRank] = {}, coord[kMaxAxes] = {};
    int64_t worst = 0;
    for (int64_t d = 0; d < n_; ++d) {
      int64_t held = 1;
      for (int i = 0; i < rank_ && held > 0; ++i) {
        const int64_t lo = std::max(f[i], t[i]);
        const int64_t hi = std::min(f[i] + from_local[i], t[i] + to_local[i]);
        held *= std::max<int64_t>(0, hi - lo);
      }
      worst = std::max(worst, target_elements_ - held);
      if (worst == target_elements_) break;  // Nothing held: the maximum possible.
      for (int a = num_axes_ - 1; a >= 0; --a) {
        if (++coord[a] < size_[a]) {
          if (slot_from[a] >= 0) f[slot_from[a]] += w_from[a];
          if (slot_to[a] >= 0) t[slot_to[a]] += w_to[a];
          break;
        }
        coord[a] = 0;
        if (slot_from[a] >= 0) f[slot_from[a]] -= w_from[a] * (size_[a] - 1);
        if (slot_to[a] >= 0) t[slot_to[a]] -= w_to[a] * (size_[a] - 1);
      }
    }
    return worst;
  }

  MiddleCache::Impl::Class* PermuteClass(const CType& s, bool* complete);
  // `path`: (modeled time, bytes, steps) of the best path to `s`; `improvable` as in
  // Searcher::Neighbors, by state key.
  using Floor = std::tuple<double, int64_t, int>;
  void Neighbors(const CType& s, bool after_permute, const Floor& path,
                 absl::FunctionRef<bool(uint64_t, const Floor&)> improvable,
                 std::vector<Edge>& edges);
  absl::Status WorkExhausted() const {
    return absl::ResourceExhaustedError(absl::StrCat(
        "plan search hit its work budget of ", options_.max_work, " units (", settled_,
        " states settled on a mesh of ", mesh_.num_devices(), " devices) before reaching ",
        ToString(to_text_)));
  }

  const Mesh& mesh_;
  const DistType& to_text_;
  const SearchOptions& options_;
  MiddleCache::Impl& cache_;
  int num_axes_ = 0;
  int64_t n_ = 0;
  int64_t size_[kMaxAxes] = {};
  int rank_ = 0;
  int64_t dim_size_[kMaxRank] = {};
  DistType template_;
  uint32_t partial_mask_ = 0;
  uint32_t relevant_mask_ = 0;
  std::vector<int> relevant_;
  CType from_, to_;
  uint64_t to_key_ = 0;
  int64_t bytes_ = 0;
  int64_t element_bytes_ = 0;
  AxisCost fastest_;
  bool uniform_ = true;
  // Every middle type has local bytes bytes_: MiddleGrowthBound applies (time mode).
  MiddleGrowthBound growth_{0, 0, 0};
  // As Searcher's: permute edges relaxed per class only from its members of least time.
  bool once_per_class_ = false;
  absl::flat_hash_map<std::array<int64_t, kMaxRank>, double> permuted_at_;
  AxisCost axis_cost_[kMaxAxes];
  int64_t target_elements_ = 0;
  // Searcher::classes_: this search's classes by local shape (partial axes are fixed).
  absl::flat_hash_map<std::array<int64_t, kMaxRank>, MiddleCache::Impl::Class*> classes_;
  MiddleCache::Impl::Class partial_class_;
  int64_t settled_ = 0;
  int64_t generated_ = 0;
  int64_t work_ = 0;
};

// Searcher::PermuteClass. `complete` is false for a class cut short by the budget (not
// cached, no memo of counts).
MiddleCache::Impl::Class* Middle::PermuteClass(const CType& s, bool* complete) {
  std::array<int64_t, kMaxRank> local = {};
  for (int i = 0; i < rank_; ++i) local[i] = LocalDim(s, i);
  *complete = true;
  auto it = classes_.find(local);
  if (it != classes_.end()) return it->second;
  std::array<int64_t, kMaxRank + 2> shared_key = {};
  shared_key[0] = relevant_mask_;
  shared_key[1] = partial_mask_;
  std::copy(local.begin(), local.end(), shared_key.begin() + 2);
  auto shared = cache_.classes.find(shared_key);
  if (shared != cache_.classes.end() &&
      shared->second->members.size() <= MaxPermuteClassSize(timed()) &&
      work_ + static_cast<int64_t>(shared->second->members.size()) * kTypeWork <=
          options_.max_work) {
    work_ += static_cast<int64_t>(shared->second->members.size()) * kTypeWork;
    return classes_.emplace(local, shared->second.get()).first->second;
  }

  std::vector<CType> members;
  std::vector<int> pool;
  for (int a : relevant_) {
    if (!(partial_mask_ & (1u << a))) pool.push_back(a);
  }
  uint32_t used = 0;  // Bit i: pool[i] is placed.
  CType t;
  t.rank = static_cast<uint8_t>(rank_);
  int count = 0;
  // Fill dimension `dim` until its axes' product is exactly its size / local size (the
  // enumeration of Searcher::PermuteClass, in the same order).
  auto rec = [&](auto& self, int dim, int64_t remaining) -> void {
    if (OverBudget()) return;
    if (dim == rank_) {
      Charge(kTypeWork);
      members.push_back(t);
      if (members.size() > MaxPermuteClassSize(timed())) work_ = options_.max_work + 1;
      return;
    }
    if (remaining == 1) {
      t.end[dim] = static_cast<uint8_t>(count);
      int next = dim + 1;
      self(self, next, next < rank_ ? dim_size_[next] / local[next] : 1);
    }
    for (size_t i = 0; i < pool.size(); ++i) {
      const int64_t size = size_[pool[i]];
      if ((used & (1u << i)) || remaining % size != 0) continue;
      used |= 1u << i;
      t.ax[count++] = static_cast<uint8_t>(pool[i]);
      self(self, dim, remaining / size);
      --count;
      used &= ~(1u << i);
    }
  };
  rec(rec, 0, dim_size_[0] / local[0]);
  auto fill = [&](MiddleCache::Impl::Class& c) {
    c.members = std::move(members);
    c.keys.resize(c.members.size());
    c.weights.resize(c.members.size());
    for (size_t m = 0; m < c.members.size(); ++m) {
      c.keys[m] = c.members[m].Key();
      KeyWeights(c.members[m], c.weights[m].data());
    }
  };
  if (OverBudget()) {
    fill(partial_class_);
    partial_class_.moved.clear();
    *complete = false;
    return &partial_class_;
  }
  auto& slot = cache_.classes[shared_key];
  slot = std::make_unique<MiddleCache::Impl::Class>();
  fill(*slot);
  return classes_.emplace(local, slot.get()).first->second;
}

// Searcher::Neighbors with only all_to_all and permutes enabled, in the same order.
void Middle::Neighbors(const CType& s, bool after_permute, const Floor& path,
                       absl::FunctionRef<bool(uint64_t, const Floor&)> improvable,
                       std::vector<Edge>& edges) {
  const auto& [path_us, path_bytes, path_steps] = path;
  edges.clear();
  // `us`: the all_to_all's modeled time (time mode); permutes are priced later (-1).
  auto add = [&](const Op& op, const CType& next, int64_t cost, double us) {
    Charge(kTypeWork);
    edges.push_back(Edge{op, next, cost, timed() ? (op.permute ? -1 : us) : 0});
  };
  int64_t local[kMaxRank];
  for (int j = 0; j < rank_; ++j) local[j] = LocalDim(s, j);
  for (int i = 0; i < rank_; ++i) {
    const int b = s.begin(i), e = s.end[i];
    int64_t k = 1;
    for (int len = 1; len <= e - b; ++len) {
      k *= size_[s.ax[e - len]];
      // The same for every destination j: it depends on the moved axes only.
      const Op moved{false, static_cast<uint8_t>(i), static_cast<uint8_t>(len), 0};
      const double us = timed() ? StepUs(s, s, moved) : 0;
      for (int j = 0; j < rank_; ++j) {
        if (j == i || local[j] % k != 0) continue;
        // Move ax[e-len, e) to the end of dimension j.
        CType next;
        next.rank = s.rank;
        int slot = 0;
        for (int d = 0; d < rank_; ++d) {
          const int db = s.begin(d);
          const int de = d == i ? s.end[d] - len : s.end[d];
          for (int t = db; t < de; ++t) next.ax[slot++] = s.ax[t];
          if (d == j) {
            for (int t = e - len; t < e; ++t) next.ax[slot++] = s.ax[t];
          }
          next.end[d] = static_cast<uint8_t>(slot);
        }
        const int64_t cost = n_ * ((k - 1) * (bytes_ / k));  // BytesReceived of an all_to_all.
        add(Op{false, static_cast<uint8_t>(i), static_cast<uint8_t>(len),
               static_cast<uint8_t>(j)},
            next, cost, us);
      }
    }
  }
  // As SearchPlan: no permute right after a permute (bytes mode, uniform models).
  if (options_.allow_permute && !(after_permute && (!timed() || uniform_))) {
    if (once_per_class_) {
      std::array<int64_t, kMaxRank> class_key = {};
      for (int i = 0; i < rank_; ++i) class_key[i] = local[i];
      auto [at, first] = permuted_at_.try_emplace(class_key, path_us);
      if (!first && path_us > at->second) return;
      at->second = std::min(at->second, path_us);
    }
    bool complete = false;
    MiddleCache::Impl::Class* info = PermuteClass(s, &complete);
    std::vector<std::pair<int64_t, int64_t>>* memo = nullptr;
    const uint64_t key = s.Key();
    if (complete) {
      memo = &info->moved[key];
      if (memo->empty()) memo->assign(info->members.size(), {-1, 0});
    }
    bool have_in = false;
    int64_t w_in[kMaxAxes];
    const double permute_us =
        fastest_.alpha_us + fastest_.TransferUs(static_cast<double>(bytes_));
    const Floor floor{path_us + permute_us, path_bytes + bytes_, path_steps + 1};
    for (size_t m = 0; m < info->members.size(); ++m) {
      if (info->keys[m] == key || OverBudget()) continue;
      if (once_per_class_ && !improvable(info->keys[m], floor)) continue;
      int64_t steps = 0;
      int64_t moved = 0;
      if (memo != nullptr && (*memo)[m].first >= 0) {
        std::tie(moved, steps) = (*memo)[m];
      } else {
        if (!have_in) {
          KeyWeights(s, w_in);
          have_in = true;
        }
        moved = Moved(w_in, info->weights[m].data(), &steps);
        if (memo != nullptr) (*memo)[m] = {moved, steps};
      }
      Charge(steps * kCountStepWork);
      add(Op{true}, info->members[m], moved * bytes_, -1);
    }
  }
}

absl::StatusOr<std::vector<Step>> Middle::Run(MiddlePath* out) {
  if (bytes_ > options_.max_local_bytes) {
    return absl::NotFoundError(absl::StrCat("the source ", ToString(template_), " has ", bytes_,
                                            " local bytes, above the bound of ",
                                            options_.max_local_bytes));
  }
  const uint64_t target = to_.Key();
  std::vector<Node> nodes;
  absl::flat_hash_map<uint64_t, int> index;
  using Entry = std::tuple<double, int64_t, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  nodes.push_back(Node{from_, 0, 0, -1, Op{}, false, 0, Heuristic(from_), 0});
  index.emplace(from_.Key(), 0);
  queue.emplace(nodes[0].h, 0, 0, 0);
  generated_ = 1;
  std::vector<Edge> edges;
  while (!queue.empty()) {
    auto [f, cost, steps, id] = queue.top();
    queue.pop();
    if (nodes[id].settled || cost != nodes[id].cost || steps != nodes[id].steps ||
        f != nodes[id].us + nodes[id].h) {
      continue;
    }
    nodes[id].settled = true;
    if (nodes[id].type.Key() == target) {
      std::vector<int> path;
      for (int n = id; n > 0; n = nodes[n].parent) path.push_back(n);
      std::reverse(path.begin(), path.end());
      std::vector<Step> result;
      if (out != nullptr) {
        out->known = true;
        out->bytes = nodes[id].cost;
        out->step_us.clear();
        for (int n : path) out->step_us.push_back(nodes[n].edge_us);
      }
      for (int n : path) {
        const Node& node = nodes[n];
        Collective op;
        if (node.op.permute) {
          op = Collective::Permute({});
        } else {
          const CType& parent = nodes[node.parent].type;
          op = Collective::AllToAll(Names(parent.ax + parent.end[node.op.i] - node.op.len,
                                          node.op.len),
                                    node.op.i, node.op.j);
        }
        result.push_back(Step{std::move(op), Decode(node.type)});
      }
      return result;
    }
    if (++settled_ > options_.max_states) {
      return absl::ResourceExhaustedError(absl::StrCat("plan search hit its cap of ",
                                                       options_.max_states,
                                                       " states before reaching ",
                                                       ToString(to_text_)));
    }
    const CType current = nodes[id].type;
    const double us = nodes[id].us;
    auto improvable = [&](uint64_t key, const Floor& floor) {
      auto it = index.find(key);
      if (it == index.end()) return true;
      const Node& node = nodes[it->second];
      return !node.settled && !(Floor{node.us, node.cost, node.steps} <= floor);
    };
    Neighbors(current, id > 0 && nodes[id].op.permute, Floor{us, cost, steps}, improvable,
              edges);
    if (OverBudget()) return WorkExhausted();
    for (Edge& edge : edges) {
      const int64_t new_cost = cost + edge.cost;
      if (new_cost > options_.max_cost) continue;
      const int new_steps = steps + 1;
      const uint64_t key = edge.type.Key();
      auto it = index.find(key);
      const int existing = it == index.end() ? -1 : it->second;
      if (existing >= 0 && nodes[existing].settled) continue;
      if (timed() && edge.us < 0) {
        const double optimistic =
            edge.cost > 0 ? fastest_.alpha_us + fastest_.TransferUs(static_cast<double>(bytes_))
                          : 0;
        if (existing >= 0 && std::make_tuple(us + optimistic, new_cost, new_steps) >=
                                 std::make_tuple(nodes[existing].us, nodes[existing].cost,
                                                 nodes[existing].steps)) {
          continue;
        }
        // The same charge as SearchPlan's, so both stop at the same point.
        if (!uniform_ && edge.cost > 0 && !Charge(PermutePricingWork(mesh_))) {
          return WorkExhausted();
        }
        edge.us = uniform_ || edge.cost == 0 ? optimistic : StepUs(current, edge.type, edge.op);
      }
      const double new_us = us + edge.us;
      if (timed() && new_us > options_.max_cost_us) continue;
      if (existing < 0) {
        const int node_id = static_cast<int>(nodes.size());
        index.emplace(key, node_id);
        const double h = Heuristic(edge.type);
        if (OverBudget()) return WorkExhausted();
        nodes.push_back(
            Node{edge.type, new_cost, new_steps, id, edge.op, false, new_us, h, edge.us});
        ++generated_;
        if (!timed() || new_us + h <= options_.max_cost_us) {
          queue.emplace(new_us + h, new_cost, new_steps, node_id);
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
        // As SearchPlan: kept but not queued when its bound already exceeds max_cost_us.
        if (!timed() || new_us + node.h <= options_.max_cost_us) {
          queue.emplace(new_us + node.h, new_cost, new_steps, existing);
        }
      }
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "no plan from ", ToString(template_), " to ", ToString(to_text_),
      " keeps every step within ", options_.max_local_bytes,
      " local bytes with all_to_all and permutes (exhaustive search of ", settled_,
      " reachable types)"));
}

}  // namespace

absl::StatusOr<std::vector<Step>> MiddleSearch(const Mesh& mesh, const DistType& from,
                                               const DistType& to, const SearchOptions& options,
                                               MiddleCache& cache, SearchStats* stats,
                                               MiddlePath* path) {
  RESHARD_CHECK(!options.allow_all_slice && !options.allow_all_gather &&
                !options.allow_all_reduce && !options.allow_reduce_scatter &&
                options.allow_all_to_all && !options.fill_permute_pairs &&
                !options.bytes_bound && !options.incumbent)
      << "MiddleSearch is the all_to_all/permute search, without byte bound or incumbent";
  if (path != nullptr) *path = MiddlePath{};
  if (!Middle::Encodable(mesh, from, to)) {
    SearchOptions fallback = options;
    fallback.class_cache = &cache.impl().fallback;
    return SearchPlan(mesh, from, to, fallback, stats);
  }
  Middle middle(mesh, from, to, options, cache.impl());
  absl::StatusOr<std::vector<Step>> steps = middle.Run(path);
  if (stats != nullptr) {
    stats->states_settled = middle.settled();
    stats->states_generated = middle.generated();
    stats->work = middle.work();
  }
  if (steps.ok() && !steps->empty()) steps->back().type = to;
  return steps;
}

}  // namespace reshard::internal
