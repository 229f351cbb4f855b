// placement.cc — block indices as linear functions of device coordinates (see placement.h),
// and MinimalPermute (declared in synth/search.h) built on them.

#include "synth/placement.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "synth/search.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace internal {
namespace {

// Below this device count MovedDevices simply walks the devices (cheaper than the count's
// hash map for small meshes).
constexpr int64_t kWalkDevices = 4096;

// How one mesh axis enters a linear index (placement.h).
using Role = AxisRole;

// Per mesh axis: its stride in the block index of its dimension (slot = dimension), or in the
// summand index (slot = rank; partial axes in mesh order, the last one least significant).
std::vector<Role> BlockRoles(const Mesh& mesh, const DistType& type) {
  std::vector<Role> roles(mesh.num_axes());
  for (int i = 0; i < type.rank(); ++i) {
    int64_t stride = 1;
    const AxisList& axes = type.dims[i].axes;
    for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
      const int index = mesh.WholeAxisIndex(*a);
      roles[index] = Role{i, stride};
      stride *= mesh.axes()[index].size;
    }
  }
  int64_t stride = 1;
  for (int a = mesh.num_axes() - 1; a >= 0; --a) {
    if (ContainsAxis(type.partial, mesh.axis_name(a))) {
      roles[a] = Role{type.rank(), stride};
      stride *= mesh.axes()[a].size;
    }
  }
  return roles;
}

// Number of placement keys (blocks times summands) of a valid type.
int64_t NumKeys(const Mesh& mesh, const DistType& type) {
  int64_t keys = NumSummands(mesh, type);
  for (const Dim& dim : type.dims) keys *= mesh.GroupSize(dim.axes);
  return keys;
}

// Visits every device in id order. Before visit(d), acc_a[s] (acc_b[s]) holds the sum of
// coord_axis(d) * weight over the axes whose role in `a` (`b`) has slot s: an odometer over
// the coordinates updates the sums, so no device id is decomposed.
template <typename Visit>
void WalkDevices(const Mesh& mesh, const std::vector<Role>& a, std::vector<int64_t>& acc_a,
                 const std::vector<Role>& b, std::vector<int64_t>& acc_b, Visit visit) {
  const int k = mesh.num_axes();
  std::vector<int64_t> size(k), coord(k, 0);
  for (int i = 0; i < k; ++i) size[i] = mesh.axes()[i].size;
  std::fill(acc_a.begin(), acc_a.end(), 0);
  std::fill(acc_b.begin(), acc_b.end(), 0);
  const int64_t n = mesh.num_devices();
  for (int64_t d = 0; d < n; ++d) {
    visit(d);
    for (int i = k - 1; i >= 0; --i) {
      if (++coord[i] < size[i]) {
        if (a[i].slot >= 0) acc_a[a[i].slot] += a[i].weight;
        if (b[i].slot >= 0) acc_b[b[i].slot] += b[i].weight;
        break;
      }
      coord[i] = 0;
      if (a[i].slot >= 0) acc_a[a[i].slot] -= a[i].weight * (size[i] - 1);
      if (b[i].slot >= 0) acc_b[b[i].slot] -= b[i].weight * (size[i] - 1);
    }
  }
}

// A dimension of size n read in the mixed radix of one type's axes (major to minor) and its
// local size: the indices whose fixed digits (SliceDigits) are the given coordinates.
class DigitPattern {
 public:
  DigitPattern(int64_t n, const SliceDigits& digits, const int64_t* coords)
      : n_(n), count_(digits.count) {
    int64_t stride = n;
    for (int j = 0; j < count_; ++j) stride /= digits.size[j];
    local_ = stride;
    int64_t completions = local_;
    for (int j = count_ - 1; j >= 0; --j) {
      size_[j] = digits.size[j];
      fixed_[j] = digits.slot[j] < 0 ? -1 : coords[digits.slot[j]];
      stride_[j] = stride;
      completions_[j] = completions;  // Matching indices per value of digits 0..j.
      stride *= size_[j];
      if (fixed_[j] < 0) completions *= size_[j];
      if (fixed_[j] >= 0 && last_ < 0) last_ = j;
    }
    total_ = completions;
  }
  int64_t total() const { return total_; }
  // Matching indices below t (0 <= t <= n): a walk down t's digits.
  int64_t Below(int64_t t) const {
    if (t >= n_) return total_;
    int64_t count = 0;
    for (int j = 0; j < count_; ++j) {
      const int64_t digit = t / stride_[j] % size_[j];
      if (fixed_[j] < 0) {
        count += digit * completions_[j];
      } else if (digit != fixed_[j]) {
        // Below t exactly when the fixed digit is below t's.
        return digit > fixed_[j] ? count + completions_[j] : count;
      }
    }
    return count + t % local_;
  }
  // The matching indices as intervals, one per value of the free digits above the most minor
  // fixed digit, as long as that digit's stride (none fixed: the whole dimension).
  int64_t Intervals() const {
    int64_t intervals = 1;
    for (int j = 0; j < last_; ++j) {
      if (fixed_[j] < 0) intervals *= size_[j];
    }
    return intervals;
  }
  // Calls visit(start, length) on each of the Intervals().
  template <typename Visit>
  void ForEachInterval(Visit visit) const {
    if (last_ < 0) {
      visit(int64_t{0}, n_);
      return;
    }
    int64_t digit[kMaxSliceDigits];  // An odometer over the free digits above last_.
    for (int j = 0; j <= last_; ++j) digit[j] = fixed_[j] < 0 ? 0 : fixed_[j];
    while (true) {
      int64_t start = 0;
      for (int j = 0; j <= last_; ++j) start += digit[j] * stride_[j];
      visit(start, stride_[last_]);
      int j = last_ - 1;
      for (; j >= 0; --j) {
        if (fixed_[j] >= 0) continue;
        if (++digit[j] < size_[j]) break;
        digit[j] = 0;
      }
      if (j < 0) return;
    }
  }

 private:
  int64_t n_, local_ = 1, total_ = 0;
  int count_, last_ = -1;
  int64_t size_[kMaxSliceDigits], stride_[kMaxSliceDigits], completions_[kMaxSliceDigits];
  int64_t fixed_[kMaxSliceDigits];  // The slice's coordinate, or -1 for a free digit.
};

// An axis that splits a dimension in at least one of two types: its dimension in each (-1:
// none), its size, and how far one unit of its coordinate moves the block offset in each.
struct WalkedAxis {
  int from_dim, to_dim;
  int64_t size, from_step, to_step;
};

// LackingElements' kFixedTuples walk per fixed tuple, in units of kEveryTuple's visit of one
// tuple: per dimension a constant part, plus CommonIndices' walk over the intervals of one
// type's free digits, each counted on the other type's digits. kCheaper takes the walk with
// the smaller estimate.
constexpr int64_t kFixedDimCost = 12;
int64_t FixedTupleCost(absl::Span<const WalkedAxis> used, int rank) {
  // An axis as one type sees it: its dimension there, its dimension in the other type, and
  // its offset step there.
  struct Seen {
    int dim, other;
    int64_t step;
  };
  auto seen = [](const WalkedAxis& a, int side) {
    return side == 0 ? Seen{a.from_dim, a.to_dim, a.from_step}
                     : Seen{a.to_dim, a.from_dim, a.to_step};
  };
  int64_t per_tuple = 0;
  for (int i = 0; i < rank; ++i) {
    // Per type: its digits in dimension i, and the product of its free digits more major than
    // its most minor fixed one (the intervals CommonIndices walks; 0 without a fixed digit).
    int64_t digits[2] = {0, 0}, intervals[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      int64_t minor_fixed = std::numeric_limits<int64_t>::max();
      for (const WalkedAxis& a : used) {
        const Seen v = seen(a, side);
        if (v.dim != i) continue;
        ++digits[side];
        if (v.other >= 0) minor_fixed = std::min(minor_fixed, v.step);
      }
      if (minor_fixed == std::numeric_limits<int64_t>::max()) continue;
      intervals[side] = 1;
      for (const WalkedAxis& a : used) {
        const Seen v = seen(a, side);
        if (v.dim == i && v.other < 0 && v.step > minor_fixed) intervals[side] *= a.size;
      }
    }
    per_tuple += kFixedDimCost;
    if (intervals[0] > 0 && intervals[1] > 0) {
      per_tuple +=
          intervals[0] <= intervals[1] ? intervals[0] * digits[1] : intervals[1] * digits[0];
    }
  }
  return per_tuple;
}

// Lacking from a walk's least held elements and (with need_total) the sum of held over the
// walked tuples, each standing for `alike` of the `devices`.
Lacking LackingFrom(int64_t target_elements, int64_t least_held, __int128 held_sum, int64_t devices,
                    int64_t alike, bool need_total, int64_t visits) {
  Lacking lacking{target_elements - least_held, -1, visits};
  if (need_total) lacking.total = __int128{devices} * target_elements - held_sum * alike;
  return lacking;
}

// LackingElements by visiting every tuple of the coordinates of `used` (each tuple standing
// for `alike` of the `devices`), with the block offsets kept by an odometer.
Lacking WalkUsedAxes(absl::Span<const WalkedAxis> used, int64_t devices, int64_t alike,
                     absl::Span<const int64_t> from_local, absl::Span<const int64_t> to_local,
                     int64_t target_elements, bool need_total) {
  const int rank = static_cast<int>(to_local.size());
  // The largest axis runs innermost, in its own loop: along it only its one or two
  // dimensions' overlaps change, the product of the others' is taken once per outer tuple.
  absl::InlinedVector<WalkedAxis, 16> outer(used.begin(), used.end());
  WalkedAxis inner{-1, -1, 1, 0, 0};
  if (!outer.empty()) {
    auto largest =
        std::max_element(outer.begin(), outer.end(),
                         [](const WalkedAxis& x, const WalkedAxis& y) { return x.size < y.size; });
    inner = *largest;
    outer.erase(largest);
  }
  const int k = static_cast<int>(outer.size());
  const WalkedAxis* const outer_axes = outer.data();
  absl::InlinedVector<int64_t, 8> f_offsets(rank, 0), t_offsets(rank, 0);
  absl::InlinedVector<int64_t, 16> coords(k, 0);
  int64_t* const f = f_offsets.data();
  int64_t* const t = t_offsets.data();
  int64_t* const coord = coords.data();
  const int64_t* const l = from_local.data();
  const int64_t* const m = to_local.data();
  auto overlap = [&](int i, int64_t fi, int64_t ti) {
    return std::max<int64_t>(0, std::min(fi + l[i], ti + m[i]) - std::max(fi, ti));
  };
  // The dimensions the inner axis moves (one or two; the second -1 when it is the first).
  const int d1 = inner.from_dim >= 0 ? inner.from_dim : inner.to_dim;
  const int d2 = inner.to_dim >= 0 && inner.to_dim != d1 ? inner.to_dim : -1;
  auto at = [&](int d, int64_t c) {
    return overlap(d, f[d] + (inner.from_dim == d ? c * inner.from_step : 0),
                   t[d] + (inner.to_dim == d ? c * inner.to_step : 0));
  };
  int64_t least_held = std::numeric_limits<int64_t>::max();
  __int128 held_sum = 0;
  int64_t visits = 0;
  while (true) {
    int64_t rest = 1;
    for (int i = 0; i < rank && rest > 0; ++i) {
      if (i != d1 && i != d2) rest *= overlap(i, f[i], t[i]);
    }
    if (rest == 0 || d1 < 0) {
      ++visits;
      least_held = std::min(least_held, rest);
      held_sum += __int128{rest} * inner.size;
    } else {
      visits += inner.size;
      for (int64_t c = 0; c < inner.size; ++c) {
        const int64_t held = rest * at(d1, c) * (d2 < 0 ? 1 : at(d2, c));
        least_held = std::min(least_held, held);
        held_sum += held;
      }
    }
    if (!need_total && least_held == 0) break;  // Nothing held: the most lacking.
    int q = k - 1;
    for (; q >= 0; --q) {
      const WalkedAxis& a = outer_axes[q];
      if (++coord[q] < a.size) {
        if (a.from_dim >= 0) f[a.from_dim] += a.from_step;
        if (a.to_dim >= 0) t[a.to_dim] += a.to_step;
        break;
      }
      coord[q] = 0;
      if (a.from_dim >= 0) f[a.from_dim] -= a.from_step * (a.size - 1);
      if (a.to_dim >= 0) t[a.to_dim] -= a.to_step * (a.size - 1);
    }
    if (q < 0) break;
  }
  return LackingFrom(target_elements, least_held, held_sum, devices, alike, need_total, visits);
}

// The axes of `used` as kByDimension splits them: those that link two dimensions (a dimension
// of each type, different ones) and, per dimension, those that touch only it.
struct DimensionSplit {
  absl::InlinedVector<WalkedAxis, 16> linking;
  absl::InlinedVector<absl::InlinedVector<WalkedAxis, 8>, 4> local;
  absl::InlinedVector<bool, 4> linked;  // Whether a linking axis touches the dimension.
  int64_t linking_tuples = 1;
  absl::InlinedVector<int64_t, 4> local_tuples;
};

DimensionSplit SplitByDimension(absl::Span<const WalkedAxis> used, int rank) {
  DimensionSplit split;
  split.local.resize(rank);
  split.linked.assign(rank, false);
  split.local_tuples.assign(rank, 1);
  for (const WalkedAxis& a : used) {
    if (a.from_dim >= 0 && a.to_dim >= 0 && a.from_dim != a.to_dim) {
      split.linking.push_back(a);
      split.linked[a.from_dim] = split.linked[a.to_dim] = true;
      split.linking_tuples *= a.size;
    } else {
      const int d = a.from_dim >= 0 ? a.from_dim : a.to_dim;
      split.local[d].push_back(a);
      split.local_tuples[d] *= a.size;
    }
  }
  return split;
}

// kByDimension's visits, in units of kEveryTuple's visit of one tuple: per tuple of the
// linking axes, each linked dimension's tuples; the other dimensions' once.
int64_t ByDimensionCost(const DimensionSplit& split) {
  int64_t linked = 0, unlinked = 0;
  for (size_t d = 0; d < split.local.size(); ++d) {
    (split.linked[d] ? linked : unlinked) += split.local_tuples[d];
  }
  return split.linking_tuples * std::max<int64_t>(linked, 1) + unlinked;
}

// LackingElements by dimensions: a device holds prod_i overlap_i, and overlap_i depends only
// on the axes that touch dimension i (in either type). Given the coordinates of the axes that
// link two dimensions, the dimensions are independent, so the held elements summed over the
// tuples of the other axes are the product of each dimension's sum over its own axes' tuples,
// and their least is the product of each dimension's least (overlaps are never negative).
// Visits linking tuples times the sum, not the product, of the dimensions' tuples.
// A dimension's overlaps depend on its two block offsets only through their difference, so
// a linked dimension's sums are computed once per difference (linking tuples often repeat
// few of them); `visits` still counts every recomputation they stand for, as the searches
// charge by it.
Lacking WalkByDimension(const DimensionSplit& split, int64_t devices, int64_t alike,
                        absl::Span<const int64_t> from_local, absl::Span<const int64_t> to_local,
                        int64_t target_elements, bool need_total) {
  const int rank = static_cast<int>(to_local.size());
  struct Sums {
    __int128 sum = 0;
    int64_t least = std::numeric_limits<int64_t>::max();
    int64_t visits = 0;  // Of the walk that computed them.
  };
  // Dimension d's sum and least overlap over the tuples of its own axes, its blocks starting
  // at `f` and `t` (offsets from the linking axes).
  // (Raw pointers in the loops: Debian's hardened Abseil checks every InlinedVector index.)
  auto dimension = [&](int d, int64_t f, int64_t t) {
    const WalkedAxis* axes = split.local[d].data();
    const int num_axes = static_cast<int>(split.local[d].size());
    absl::InlinedVector<int64_t, 8> coords_storage(num_axes, 0);
    int64_t* coords = coords_storage.data();
    const int64_t from_length = from_local[d], to_length = to_local[d];
    Sums out;
    while (true) {
      ++out.visits;
      const int64_t overlap =
          std::max<int64_t>(0, std::min(f + from_length, t + to_length) - std::max(f, t));
      out.sum += overlap;
      out.least = std::min(out.least, overlap);
      if (!need_total && out.least == 0) return out;
      int q = num_axes - 1;
      for (; q >= 0; --q) {
        const WalkedAxis& a = axes[q];
        const int64_t f_step = a.from_dim == d ? a.from_step : 0;
        const int64_t t_step = a.to_dim == d ? a.to_step : 0;
        if (++coords[q] < a.size) {
          f += f_step;
          t += t_step;
          break;
        }
        coords[q] = 0;
        f -= f_step * (a.size - 1);
        t -= t_step * (a.size - 1);
      }
      if (q < 0) return out;
    }
  };
  int64_t visits = 0;
  absl::InlinedVector<Sums, 4> fixed_storage(rank);  // The dimensions no linking axis touches.
  Sums* fixed = fixed_storage.data();
  const bool* is_linked = split.linked.data();
  for (int d = 0; d < rank; ++d) {
    if (!is_linked[d]) {
      fixed[d] = dimension(d, 0, 0);
      visits += fixed[d].visits;
    }
  }
  // Per linked dimension of more than one tuple: its sums by block offset difference.
  absl::InlinedVector<absl::flat_hash_map<int64_t, Sums>, 4> by_difference_storage(rank);
  absl::flat_hash_map<int64_t, Sums>* by_difference = by_difference_storage.data();
  const int64_t* local_tuples = split.local_tuples.data();
  auto linked = [&](int d, int64_t f, int64_t t) {
    if (local_tuples[d] == 1) return dimension(d, f, t);
    auto [it, fresh] = by_difference[d].try_emplace(f - t);
    if (fresh) it->second = dimension(d, f, t);
    return it->second;
  };
  const WalkedAxis* linking = split.linking.data();
  const int num_linking = static_cast<int>(split.linking.size());
  absl::InlinedVector<int64_t, 4> f_storage(rank, 0), t_storage(rank, 0);
  absl::InlinedVector<int64_t, 16> coords_storage(num_linking, 0);
  int64_t *f = f_storage.data(), *t = t_storage.data(), *coords = coords_storage.data();
  int64_t least_held = std::numeric_limits<int64_t>::max();
  __int128 held_sum = 0;
  while (true) {
    __int128 sum = 1;
    int64_t least = 1;
    for (int d = 0; d < rank && (need_total || least > 0); ++d) {
      if (!is_linked[d]) {
        sum *= fixed[d].sum;
        least *= fixed[d].least;
        continue;
      }
      const Sums s = linked(d, f[d], t[d]);
      visits += s.visits;
      sum *= s.sum;
      least *= s.least;
    }
    least_held = std::min(least_held, least);
    held_sum += sum;
    if (!need_total && least_held == 0) break;
    int q = num_linking - 1;
    for (; q >= 0; --q) {
      const WalkedAxis& a = linking[q];
      if (++coords[q] < a.size) {
        f[a.from_dim] += a.from_step;
        t[a.to_dim] += a.to_step;
        break;
      }
      coords[q] = 0;
      f[a.from_dim] -= a.from_step * (a.size - 1);
      t[a.to_dim] -= a.to_step * (a.size - 1);
    }
    if (q < 0) break;
  }
  return LackingFrom(target_elements, least_held, held_sum, devices, alike, need_total, visits);
}

int64_t Saturate(__int128 value) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return value > kMax ? kMax : static_cast<int64_t>(value);
}

// The per-axis weights of a key's roles (0 for an axis outside the key).
absl::InlinedVector<int64_t, 16> WeightsOf(const std::vector<AxisRole>& roles) {
  absl::InlinedVector<int64_t, 16> weights(roles.size());
  for (size_t a = 0; a < roles.size(); ++a) weights[a] = roles[a].slot < 0 ? 0 : roles[a].weight;
  return weights;
}

// The number of devices whose placement key differs, for keys given by per-axis weights
// (0 for an axis outside the key) on `mesh` with its `n` devices: counts the
// coordinate tuples of the axes whose weights differ on which both keys agree, enumerating all
// of those axes but the largest and solving for its coordinate.
int64_t CountMovedByWeights(const Mesh& mesh, absl::Span<const int64_t> w_in,
                            absl::Span<const int64_t> w_out, int64_t n) {
  const int num_axes = mesh.num_axes();
  RESHARD_CHECK(static_cast<int>(w_in.size()) == num_axes &&
                static_cast<int>(w_out.size()) == num_axes);
  // Only axes of size > 1 become terms: at most log2(kMaxDevices) = 20 of them.
  int64_t diff[64], size[64], coord[64];
  int terms = 0;
  int64_t free_devices = 1;
  for (int a = 0; a < num_axes; ++a) {
    const int64_t axis_size = mesh.axes()[a].size;
    if (w_in[a] == w_out[a] || axis_size == 1) {
      free_devices *= axis_size;
    } else {
      diff[terms] = w_in[a] - w_out[a];
      size[terms++] = axis_size;
    }
  }
  if (terms == 0) return 0;
  int last = 0;
  for (int t = 1; t < terms; ++t) {
    if (size[t] > size[last]) last = t;
  }
  std::swap(diff[last], diff[terms - 1]);
  std::swap(size[last], size[terms - 1]);
  const int64_t d_last = diff[terms - 1], s_last = size[terms - 1];
  std::fill(coord, coord + terms, 0);
  int64_t sum = 0, kept = 0;
  // c * d_last == -sum for some 0 <= c < s_last: only sums in [lo, hi] can be solved, which a
  // comparison decides before the division does.
  const int64_t span = (s_last - 1) * d_last;
  const int64_t lo = std::min<int64_t>(0, -span), hi = std::max<int64_t>(0, -span);
  for (;;) {
    if (sum >= lo && sum <= hi && sum % d_last == 0) ++kept;
    int t = terms - 2;
    for (; t >= 0; --t) {
      if (++coord[t] < size[t]) {
        sum += diff[t];
        break;
      }
      sum -= diff[t] * (size[t] - 1);
      coord[t] = 0;
    }
    if (t < 0) break;
  }
  return n - kept * free_devices;
}

}  // namespace

void KeyWeights(const Mesh& mesh, const DistType& type, int64_t* weights) {
  std::fill(weights, weights + mesh.num_axes(), 0);
  // Partial axes are the key's least significant digits, the last axis fastest; the
  // dimensions' block indices follow, the last dimension least significant.
  int64_t factor = 1;
  for (int a = mesh.num_axes() - 1; a >= 0; --a) {
    if (ContainsAxis(type.partial, mesh.axis_name(a))) {
      weights[a] = factor;
      factor *= mesh.axes()[a].size;
    }
  }
  for (int i = type.rank() - 1; i >= 0; --i) {
    const AxisList& axes = type.dims[i].axes;
    for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
      const int index = mesh.WholeAxisIndex(*a);
      weights[index] = factor;
      factor *= mesh.axes()[index].size;
    }
  }
}

std::vector<AxisRole> KeyRoles(const Mesh& mesh, const DistType& type) {
  absl::InlinedVector<int64_t, 16> weights(mesh.num_axes());
  KeyWeights(mesh, type, weights.data());
  // Every axis in the key has a weight of at least 1.
  std::vector<AxisRole> roles(mesh.num_axes());
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (weights[a] != 0) roles[a] = AxisRole{0, weights[a]};
  }
  return roles;
}

int64_t MovedDevices(const Mesh& mesh, const DistType& in, const DistType& out, int64_t* work) {
  absl::InlinedVector<int64_t, 16> w_in(mesh.num_axes()), w_out(mesh.num_axes());
  KeyWeights(mesh, in, w_in.data());
  KeyWeights(mesh, out, w_out.data());
  return MovedDevicesFromWeights(mesh, w_in, w_out, work);
}

PlacementKeyBytes::PlacementKeyBytes(const Mesh& mesh) : devices_(mesh.num_devices()) {
  RESHARD_CHECK(devices_ <= kKeyByteDevices) << devices_ << " devices";
  const int k = mesh.num_axes();
  coordinates_.assign(k, std::vector<uint8_t>(devices_));
  for (int64_t d = 0; d < devices_; ++d) {
    int64_t rest = d;
    for (int a = k - 1; a >= 0; --a) {
      coordinates_[a][d] = static_cast<uint8_t>(rest % mesh.axes()[a].size);
      rest /= mesh.axes()[a].size;
    }
  }
  for (int a = 0; a < k; ++a) {
    if (mesh.axes()[a].size == 1) coordinates_[a].clear();  // Always 0.
  }
}

std::vector<uint8_t> PlacementKeyBytes::operator()(const std::vector<AxisRole>& roles) const {
  return (*this)(absl::MakeConstSpan(WeightsOf(roles)));
}

std::vector<uint8_t> PlacementKeyBytes::operator()(absl::Span<const int64_t> weights) const {
  std::vector<uint8_t> keys(devices_, 0);
  // Local copies: stores through uint8_t may alias any member, which kept the loop below from
  // vectorising (devices_ was reloaded after every byte).
  const int64_t devices = devices_;
  uint8_t* out = keys.data();
  for (size_t a = 0; a < coordinates_.size(); ++a) {
    // A size-1 axis (no coordinates kept) adds nothing whatever its weight, which can be the
    // stride past every other axis, e.g. 256 on a 256-device mesh.
    if (weights[a] == 0 || coordinates_[a].empty()) continue;
    // Keys number placements 0 .. devices - 1 (placement.h), so every weight of an axis of
    // size > 1 is below 256.
    RESHARD_CHECK(weights[a] < 256) << "placement weight " << weights[a];
    const uint8_t w = static_cast<uint8_t>(weights[a]);
    const uint8_t* c = coordinates_[a].data();
    for (int64_t d = 0; d < devices; ++d) out[d] = static_cast<uint8_t>(out[d] + w * c[d]);
  }
  return keys;
}

int64_t CountDifferentBytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  RESHARD_CHECK(a.size() == b.size());
  int64_t differ = 0;
  size_t i = 0;
  // Eight bytes at a time: fold each byte of a ^ b onto its low bit, then add those eight 0/1
  // bytes with one multiplication (their sum lands in the top byte; no popcount instruction
  // is assumed).
  for (; i + 8 <= a.size(); i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    uint64_t t = x ^ y;
    t |= t >> 4;
    t |= t >> 2;
    t |= t >> 1;
    differ += static_cast<int64_t>(((t & 0x0101010101010101ULL) * 0x0101010101010101ULL) >> 56);
  }
  for (; i < a.size(); ++i) differ += a[i] != b[i];
  return differ;
}

int64_t MovedDevicesFromRoles(const Mesh& mesh, const std::vector<AxisRole>& key_in,
                              const std::vector<AxisRole>& key_out, int64_t* work) {
  // Any number of axes (size-1 axes are free): no fixed-size arrays here.
  return MovedDevicesFromWeights(mesh, WeightsOf(key_in), WeightsOf(key_out), work);
}

int64_t MovedDevicesFromWeights(const Mesh& mesh, absl::Span<const int64_t> w_in,
                                absl::Span<const int64_t> w_out, int64_t* work) {
  const int64_t n = mesh.num_devices();
  if (n <= kWalkDevices) {
    // Charged as the walk over the devices it replaces (budgets cut searches where they did).
    if (work != nullptr) *work = n;
    return CountMovedByWeights(mesh, w_in, w_out, n);
  }
  // A device keeps its placement iff sum_a coord_a * (w_in[a] - w_out[a]) == 0. Count the
  // solutions: axes with equal weights are free; the others are enumerated by dynamic
  // programming over the partial sums (pruned to those the remaining axes can still bring
  // back to 0), and the largest axis is solved for directly at the end.
  struct Term {
    int64_t diff;
    int64_t size;
  };
  int64_t free_devices = 1;
  std::vector<Term> terms;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const int64_t diff = w_in[a] - w_out[a];
    const int64_t size = mesh.axes()[a].size;
    if (diff == 0 || size == 1) {
      free_devices *= size;
    } else {
      terms.push_back(Term{diff, size});
    }
  }
  if (work != nullptr) *work = mesh.num_axes();
  if (terms.empty()) return 0;
  auto largest = std::max_element(terms.begin(), terms.end(),
                                   [](const Term& x, const Term& y) { return x.size < y.size; });
  std::iter_swap(largest, terms.end() - 1);
  std::sort(terms.begin(), terms.end() - 1, [](const Term& x, const Term& y) {
    return std::abs(x.diff) * (x.size - 1) > std::abs(y.diff) * (y.size - 1);
  });
  const size_t m = terms.size();
  std::vector<int64_t> rest_min(m + 1, 0), rest_max(m + 1, 0);
  for (size_t k = m; k-- > 0;) {
    const int64_t span = terms[k].diff * (terms[k].size - 1);
    rest_min[k] = rest_min[k + 1] + std::min<int64_t>(0, span);
    rest_max[k] = rest_max[k + 1] + std::max<int64_t>(0, span);
  }
  // (sum, count) pairs with distinct sums, sorted by sum. A term shifts the list once per
  // coordinate: sorted runs, merged pairwise (a hash map of sums took over half of the count's
  // instructions on 6-axis meshes of ~10^4 devices).
  using Sum = std::pair<int64_t, int64_t>;
  auto by_sum = [](const Sum& a, const Sum& b) { return a.first < b.first; };
  std::vector<Sum> sums = {{0, 1}}, next, merged;
  std::vector<size_t> runs, merged_runs;  // Where each sorted run of `next` begins.
  for (size_t k = 0; k + 1 < m; ++k) {
    next.clear();
    next.reserve(sums.size() * terms[k].size);
    runs.clear();
    if (work != nullptr) *work += static_cast<int64_t>(sums.size()) * terms[k].size;
    for (int64_t c = 0; c < terms[k].size; ++c) {
      runs.push_back(next.size());
      for (const auto& [sum, count] : sums) {
        const int64_t v = sum + c * terms[k].diff;
        if (v + rest_min[k + 1] > 0 || v + rest_max[k + 1] < 0) continue;
        next.emplace_back(v, count);
      }
    }
    while (runs.size() > 1) {
      merged.clear();
      merged.reserve(next.size());
      merged_runs.clear();
      for (size_t r = 0; r < runs.size(); r += 2) {
        merged_runs.push_back(merged.size());
        const auto begin = next.begin() + runs[r];
        const auto middle = r + 1 < runs.size() ? next.begin() + runs[r + 1] : next.end();
        const auto end = r + 2 < runs.size() ? next.begin() + runs[r + 2] : next.end();
        std::merge(begin, middle, middle, end, std::back_inserter(merged), by_sum);
      }
      std::swap(next, merged);
      std::swap(runs, merged_runs);
    }
    sums.clear();
    for (const auto& [v, count] : next) {
      if (!sums.empty() && sums.back().first == v) {
        sums.back().second += count;
      } else {
        sums.emplace_back(v, count);
      }
    }
  }
  const Term& last = terms.back();
  int64_t kept = 0;
  for (const auto& [sum, count] : sums) {
    if ((-sum) % last.diff != 0) continue;
    const int64_t c = -sum / last.diff;
    if (c >= 0 && c < last.size) kept += count;
  }
  return n - kept * free_devices;
}

int64_t FixedProduct(const SliceDigits& digits) {
  int64_t product = 1;
  for (int j = 0; j < digits.count; ++j) {
    if (digits.slot[j] >= 0) product *= digits.size[j];
  }
  return product;
}

int64_t CommonIndices(int64_t n, const SliceDigits& a, const SliceDigits& b, const int64_t* coords,
                      int64_t* work) {
  ++*work;
  const int64_t a_fixed = FixedProduct(a), b_fixed = FixedProduct(b);
  // One side is every index: the intersection is the other side, of known size.
  if (a_fixed == 1 || b_fixed == 1) return n / (a_fixed * b_fixed);
  const DigitPattern in_a(n, a, coords), in_b(n, b, coords);
  const bool by_a = in_a.Intervals() <= in_b.Intervals();
  const DigitPattern& walked = by_a ? in_a : in_b;
  const DigitPattern& counted = by_a ? in_b : in_a;
  *work += walked.Intervals() * (by_a ? b.count : a.count);
  int64_t common = 0;
  walked.ForEachInterval([&](int64_t start, int64_t length) {
    common += counted.Below(start + length) - counted.Below(start);
  });
  return common;
}

Lacking LackingElements(absl::Span<const int64_t> sizes, absl::Span<const AxisRole> from_roles,
                        absl::Span<const int64_t> from_local, absl::Span<const AxisRole> to_roles,
                        absl::Span<const int64_t> to_local, int64_t target_elements,
                        bool need_total, LackingWalk walk) {
  const int rank = static_cast<int>(to_local.size());
  auto dim_of = [rank](const AxisRole& role) {
    return role.slot >= 0 && role.slot < rank ? role.slot : -1;
  };
  absl::InlinedVector<WalkedAxis, 16> used;
  int64_t devices = 1, walked = 1, fixed_tuples = 1;
  for (size_t a = 0; a < sizes.size(); ++a) {
    devices *= sizes[a];
    const int i = dim_of(from_roles[a]), j = dim_of(to_roles[a]);
    if ((i < 0 && j < 0) || sizes[a] == 1) continue;
    walked *= sizes[a];
    if (i >= 0 && j >= 0) fixed_tuples *= sizes[a];
    used.push_back(WalkedAxis{i, j, sizes[a], i < 0 ? 0 : from_roles[a].weight * from_local[i],
                              j < 0 ? 0 : to_roles[a].weight * to_local[j]});
  }
  // Splitting by dimension has a fixed cost that small walks do not repay.
  constexpr int64_t kByDimensionMinTuples = 256;
  std::optional<DimensionSplit> split;
  if (walk == LackingWalk::kByDimension ||
      (walk == LackingWalk::kCheaper && walked >= kByDimensionMinTuples)) {
    split = SplitByDimension(used, rank);
  }
  const int64_t fixed_tuple_cost = FixedTupleCost(used, rank);
  if (walk == LackingWalk::kCheaper) {
    const int64_t fixed_cost = fixed_tuples * fixed_tuple_cost;
    const int64_t by_dimension = split ? ByDimensionCost(*split) : walked;
    walk = by_dimension < std::min(walked, fixed_cost) ? LackingWalk::kByDimension
           : fixed_cost >= walked                      ? LackingWalk::kEveryTuple
                                                       : LackingWalk::kFixedTuples;
  }
  if (walk == LackingWalk::kEveryTuple) {
    return WalkUsedAxes(used, devices, devices / walked, from_local, to_local, target_elements,
                        need_total);
  }
  if (walk == LackingWalk::kByDimension) {
    return WalkByDimension(*split, devices, devices / walked, from_local, to_local, target_elements,
                           need_total);
  }
  // The axes that split a dimension in both types get fixed coordinates (slots in `coords`);
  // the others are free digits of their dimension. Per dimension and type: the (offset step,
  // size, slot) of its axes, major to minor.
  struct Digit {
    int64_t step, size;
    int slot;
  };
  absl::InlinedVector<absl::InlinedVector<Digit, 8>, 4> from_axes(rank), to_axes(rank);
  absl::InlinedVector<int64_t, 16> fixed_size;
  for (const WalkedAxis& a : used) {
    int slot = -1;
    if (a.from_dim >= 0 && a.to_dim >= 0) {
      slot = static_cast<int>(fixed_size.size());
      fixed_size.push_back(a.size);
    }
    if (a.from_dim >= 0) from_axes[a.from_dim].push_back(Digit{a.from_step, a.size, slot});
    if (a.to_dim >= 0) to_axes[a.to_dim].push_back(Digit{a.to_step, a.size, slot});
  }
  // What each dimension needs per tuple of fixed coordinates: its digits in both types, and
  // (for the least held) the offsets of its fixed and free axes.
  struct Dimension {
    SliceDigits from, to;
    int64_t size = 0, from_blocks = 1, to_blocks = 1;  // Free blocks of each type.
    absl::InlinedVector<Digit, 8> from_axes, to_axes;
  };
  absl::InlinedVector<Dimension, 4> dims(rank);
  for (int i = 0; i < rank; ++i) {
    Dimension& dim = dims[i];
    auto major_first = [](const Digit& x, const Digit& y) { return x.step > y.step; };
    std::sort(from_axes[i].begin(), from_axes[i].end(), major_first);
    std::sort(to_axes[i].begin(), to_axes[i].end(), major_first);
    dim.size = from_local[i];
    for (const Digit& d : from_axes[i]) {
      dim.from.Add(d.size, d.slot);
      dim.size *= d.size;
      if (d.slot < 0) dim.from_blocks *= d.size;
    }
    for (const Digit& d : to_axes[i]) {
      dim.to.Add(d.size, d.slot);
      if (d.slot < 0) dim.to_blocks *= d.size;
    }
    dim.from_axes = std::move(from_axes[i]);
    dim.to_axes = std::move(to_axes[i]);
  }
  // The least overlap in dimension i of a block of each type whose fixed digits are `coords`.
  // Blocks of one type are disjoint, and at most ceil(M / L) + 1 blocks of length L meet one
  // of length M: with more free blocks of the first type some misses every block of the
  // second, and vice versa. So one side has at most 2 free blocks (the one with the longer
  // blocks, or either when equal): walk them, and for each, count the other side's blocks it
  // meets; when that is fewer than the other side's free blocks, one misses it.
  auto least_overlap = [&](int i, const int64_t* coords) -> int64_t {
    const Dimension& dim = dims[i];
    const int64_t l = from_local[i], m = to_local[i];
    if (dim.from_blocks > (m + l - 1) / l + 1 || dim.to_blocks > (l + m - 1) / m + 1) return 0;
    const bool walk_to = m >= l;
    const absl::InlinedVector<Digit, 8>& walked_axes = walk_to ? dim.to_axes : dim.from_axes;
    const int64_t le = walk_to ? m : l, lq = walk_to ? l : m;
    const int64_t q_blocks = walk_to ? dim.from_blocks : dim.to_blocks;
    const DigitPattern q(dim.size, walk_to ? dim.from : dim.to, coords);
    // The starts of the walked side's free blocks.
    absl::InlinedVector<int64_t, 2> starts = {0};
    for (const Digit& d : walked_axes) {
      if (d.slot >= 0) {
        for (int64_t& start : starts) start += coords[d.slot] * d.step;
        continue;
      }
      const size_t count = starts.size();
      for (int64_t c = 1; c < d.size; ++c) {
        for (size_t k = 0; k < count; ++k) starts.push_back(starts[k] + c * d.step);
      }
    }
    auto member = [&](int64_t start) { return q.Below(start + 1) - q.Below(start) == 1; };
    int64_t least = std::numeric_limits<int64_t>::max();
    for (const int64_t e : starts) {
      // The queried blocks that meet [e, e + le) but stick out: those holding e and e + le - 1.
      int64_t partial_count = 0, partial_sum = 0;
      const int64_t first = e / lq * lq, last = (e + le - 1) / lq * lq;
      for (const int64_t start : {first, last}) {
        if (start == last && last == first && partial_count > 0) break;  // One block.
        const bool sticks_out = start < e || start + lq > e + le;
        if (!sticks_out || !member(start)) continue;
        const int64_t overlap = std::min(start + lq, e + le) - std::max(start, e);
        ++partial_count;
        partial_sum += overlap;
        least = std::min(least, overlap);
      }
      const int64_t full = (q.Below(e + le) - q.Below(e) - partial_sum) / lq;
      if (full > 0) least = std::min(least, lq);
      if (full + partial_count < q_blocks) return 0;
    }
    return least;
  };
  absl::InlinedVector<int64_t, 16> coords(std::max<size_t>(fixed_size.size(), 1), 0);
  int64_t least_held = std::numeric_limits<int64_t>::max();
  __int128 held_sum = 0;
  int64_t unused_work = 0;
  int64_t visits = 0;
  while (true) {
    visits += fixed_tuple_cost;
    int64_t least = 1;
    __int128 sum = 1;
    for (int i = 0; i < rank && (need_total || least > 0); ++i) {
      least *= least_overlap(i, coords.data());
      if (need_total) {
        sum *= CommonIndices(dims[i].size, dims[i].from, dims[i].to, coords.data(), &unused_work);
      }
    }
    least_held = std::min(least_held, least);
    held_sum += sum;
    if (!need_total && least_held == 0) break;
    // The next tuple of fixed coordinates, the last fastest.
    int k = static_cast<int>(fixed_size.size()) - 1;
    for (; k >= 0; --k) {
      if (++coords[k] < fixed_size[k]) break;
      coords[k] = 0;
    }
    if (k < 0) break;
  }
  return LackingFrom(target_elements, least_held, held_sum, devices, devices / walked, need_total,
                     visits);
}

// LowerBounds from LackingElements' result in elements.
static LowerBounds Walked(const Lacking& lacking, int64_t element_bytes) {
  return LowerBounds{Saturate(lacking.total * element_bytes), lacking.worst};
}

LowerBoundsTo::LowerBoundsTo(const Mesh& mesh, const DistType& to)
    : mesh_(mesh),
      to_(to),
      to_roles_(BlockRoles(mesh, to)),
      to_local_(LocalShape(mesh, to)),
      target_elements_(LocalElements(mesh, to)) {
  for (const MeshAxis& axis : mesh.axes()) axis_sizes_.push_back(axis.size);
}

LowerBounds LowerBoundsTo::operator()(const DistType& from) const {
  RESHARD_CHECK(from.rank() == to_.rank()) << "types of different rank";
  const int64_t element_bytes = ElementBytes(to_.element_type);
  const std::vector<int64_t> from_local = LocalShape(mesh_, from);
  const auto [pending, pieces] = PendingAndPieces(from, from_local);
  // A size-1 partial axis sums a single summand: devices already hold the value.
  LowerBounds bounds =
      pending > 1
          ? LowerBounds{Saturate(__int128{mesh_.num_devices()} * target_elements_ * element_bytes),
                        target_elements_}
          : Walked(LackingElements(axis_sizes_, BlockRoles(mesh_, from), from_local, to_roles_,
                                   to_local_, target_elements_, /*need_total=*/true),
                   element_bytes);
  bounds.pending = pending;
  bounds.pieces = pieces;
  return bounds;
}

std::pair<int64_t, int64_t> LowerBoundsTo::PendingAndPieces(
    const DistType& from, const std::vector<int64_t>& from_local) const {
  int64_t pending = 1;
  for (const AxisName& axis : from.partial) {
    if (AxisUse(to_, axis) != kPartial) pending *= mesh_.AxisSize(axis);
  }
  return {pending, PiecesNeeded(from_local, to_local_, pending)};
}

LowerBounds ComputeLowerBounds(const Mesh& mesh, const DistType& from, const DistType& to) {
  return LowerBoundsTo(mesh, to)(from);
}

LinkOrder::LinkOrder(absl::Span<const int64_t> axis_sizes, const AxisCost* axis_cost)
    : k_(static_cast<int>(axis_sizes.size())), alpha_place_(k_, 0), gbps_place_(k_, 0) {
  // A place counts the axes strictly cheaper: the same order as the values themselves.
  bool uniform = true;
  for (int a = 0; a < k_; ++a) {
    for (int b = 0; b < k_; ++b) {
      alpha_place_[a] += axis_cost[b].alpha_us < axis_cost[a].alpha_us;
      gbps_place_[a] += axis_cost[b].gbps > axis_cost[a].gbps;
    }
    uniform = uniform && alpha_place_[a] == 0 && gbps_place_[a] == 0;
  }
  floor_ = std::numeric_limits<uint64_t>::max();
  for (int a = 0; a < k_; ++a) {
    floor_ = std::min(floor_, Encode(alpha_place_[a], gbps_place_[a], 1));
  }
  int bits = 0;
  for (int a = k_ - 1; a >= 0 && uniform; --a) {
    const int width = std::bit_width(static_cast<uint64_t>(axis_sizes[a] - 1));
    if (bits + width + 1 > 64) break;
    shift_.insert(shift_.begin(), bits);
    low_ |= ((uint64_t{1} << width) - 1) << bits;
    guards_ |= uint64_t{1} << (bits + width);
    bits += width + 1;
  }
  packed_ = uniform && static_cast<int>(shift_.size()) == k_;
}

namespace {

// The number of set bits, one by one: few are set, and without -mpopcnt std::popcount is a
// call.
uint64_t CountSparseBits(uint64_t bits) {
  uint64_t count = 0;
  for (; bits != 0; bits &= bits - 1) ++count;
  return count;
}

}  // namespace

void LinkOrder::Clear() { rows_.clear(); }

void LinkOrder::Add(const int64_t* coord) {
  if (!packed_) {
    rows_.insert(rows_.end(), coord, coord + k_);
    return;
  }
  uint64_t code = 0;
  for (int a = 0; a < k_; ++a) code |= static_cast<uint64_t>(coord[a]) << shift_[a];
  rows_.push_back(static_cast<int64_t>(code));
}

uint64_t LinkOrder::Rank(int64_t i, int64_t j) const {
  if (packed_) {
    const uint64_t x = static_cast<uint64_t>(rows_[i] ^ rows_[j]);  // Guards stay zero.
    return CountSparseBits((x + low_) & guards_);
  }
  const int64_t* c = &rows_[i * k_];
  const int64_t* t = &rows_[j * k_];
  // Slower takes the larger alpha and the smaller bandwidth separately, hence two maxima.
  uint64_t alpha = 0, gbps = 0, differing = 0;
  for (int a = 0; a < k_; ++a) {
    if (c[a] == t[a]) continue;
    alpha = std::max<uint64_t>(alpha, alpha_place_[a]);
    gbps = std::max<uint64_t>(gbps, gbps_place_[a]);
    ++differing;
  }
  return Encode(alpha, gbps, differing);
}

uint64_t LinkOrder::Floor(absl::Span<const int64_t> sources, int64_t target) const {
  // The axes on which every source agrees and the target does not: every link crosses them.
  const int64_t first = sources[0];
  if (packed_) {
    uint64_t varies = 0;
    for (int64_t s : sources) varies |= static_cast<uint64_t>(rows_[s] ^ rows_[first]);
    const uint64_t x = static_cast<uint64_t>(rows_[first] ^ rows_[target]);
    return std::max(CountSparseBits((x + low_) & guards_ & ~((varies + low_) & guards_)), floor_);
  }
  const int64_t* c = &rows_[first * k_];
  const int64_t* t = &rows_[target * k_];
  uint64_t alpha = 0, gbps = 0, differing = 0;
  for (int a = 0; a < k_; ++a) {
    if (c[a] == t[a]) continue;
    bool agree = true;
    for (size_t i = 1; i < sources.size() && agree; ++i) agree = rows_[sources[i] * k_ + a] == c[a];
    if (!agree) continue;
    alpha = std::max<uint64_t>(alpha, alpha_place_[a]);
    gbps = std::max<uint64_t>(gbps, gbps_place_[a]);
    ++differing;
  }
  return differing == 0 ? floor_ : Encode(alpha, gbps, differing);
}

size_t LinkOrder::CheapestSource(absl::Span<const int64_t> sources, int64_t target) const {
  const uint64_t floor = Floor(sources, target);
  size_t best = 0;
  uint64_t best_rank = Rank(sources[0], target);
  for (size_t i = 1; i < sources.size() && best_rank != floor; ++i) {
    const uint64_t r = Rank(sources[i], target);
    if (r < best_rank) {
      best = i;
      best_rank = r;
    }
  }
  return best;
}

int64_t PiecesNeeded(absl::Span<const int64_t> from_local, absl::Span<const int64_t> to_local,
                     int64_t pending) {
  RESHARD_CHECK(from_local.size() == to_local.size()) << "types of different rank";
  constexpr uint64_t kCap = uint64_t{1} << 62;
  const uint64_t summands = static_cast<uint64_t>(std::max<int64_t>(pending, 1));
  // M never exceeds the device count (distinct (block, summand) pieces), but saturate anyway.
  uint64_t pieces = summands;
  for (size_t i = 0; i < to_local.size(); ++i) {
    const uint64_t met = static_cast<uint64_t>((to_local[i] + from_local[i] - 1) / from_local[i]);
    pieces = pieces > kCap / met ? kCap : pieces * met;
  }
  if (summands == 1) return static_cast<int64_t>(pieces);
  // R: local volumes are at most 2^56 elements (kMaxAccountedBytes), so K * V_to fits 128 bits.
  unsigned __int128 volume = 1, to_volume = 1;
  for (size_t i = 0; i < to_local.size(); ++i) {
    volume *= static_cast<uint64_t>(from_local[i]);
    to_volume *= static_cast<uint64_t>(to_local[i]);
  }
  const unsigned __int128 growth =
      std::max<unsigned __int128>(1, (to_volume * summands + volume - 1) / volume);
  const unsigned __int128 reduction = growth > kCap / summands ? kCap : growth * summands;
  return static_cast<int64_t>(std::max<unsigned __int128>(pieces, reduction));
}

MiddleGrowthBound::MiddleGrowthBound(double alpha_us, double transfer_us_per_byte, double bytes)
    // Scaled down a hair so that rounding never lifts f(k) above a step's modeled time.
    : alpha_us_(alpha_us * (1 - 1e-12)), b_us_(transfer_us_per_byte * bytes * (1 - 1e-12)) {}

double MiddleGrowthBound::f(int64_t k) const {
  const double kd = static_cast<double>(k);
  return (kd - 1) * alpha_us_ + (kd - 1) / kd * b_us_;
}

double MiddleGrowthBound::Fill(int64_t m0) {
  if (static_cast<int64_t>(memo_.size()) <= m0) memo_.resize(m0 + 1, -1.0);
  // g(m) depends on g(ceil(m / k)) < m: fill bottom-up the values m0 needs, iteratively.
  absl::InlinedVector<int64_t, 32> stack = {m0};
  while (!stack.empty()) {
    const int64_t m = stack.back();
    if (memo_[m] >= 0) {
      stack.pop_back();
      continue;
    }
    double best = f(m);  // One step of growth m.
    bool ready = true;
    // f grows with k, so of the k that leave the same rest ceil(m / k) only the smallest
    // counts: visit that one and jump to the smallest k leaving less (O(sqrt m) per m).
    for (int64_t k = 2, rest = 0; k < m; k = (m + rest - 2) / (rest - 1)) {
      rest = (m + k - 1) / k;  // >= 2, as k < m.
      if (memo_[rest] < 0) {
        stack.push_back(rest);
        ready = false;
        continue;
      }
      if (ready) best = std::min(best, f(k) + memo_[rest]);
    }
    if (!ready) continue;
    memo_[m] = best;
    stack.pop_back();
  }
  return memo_[m0];
}

double MiddleGrowthBound::Order(int64_t pieces, bool same_axes, int64_t unsettled) {
  // A permute's alpha + B/bw, scaled down like f(k)'s terms.
  const double with_permute = alpha_us_ + b_us_ + (*this)(pieces);
  if (!same_axes) return with_permute;
  return std::min(with_permute, (*this)(std::max(pieces, unsettled)));
}

namespace {

// Whether every plan from `from` to `to` (local shapes `from_local`, `to_local`) must cross
// `axis` of `mesh` (of size >= 2): see CrossingAlphaUs.
bool MustCross(const Mesh& mesh, const DistType& from, const DistType& to,
               const std::vector<int64_t>& from_local, const std::vector<int64_t>& to_local,
               const AxisName& axis) {
  if (ContainsAxis(from.partial, axis) && !ContainsAxis(to.partial, axis)) return true;
  // The stride of `axis` in dimension i of `type` (local size `local` there): `local` times
  // the sizes of the axes after it; 0 when it is not there.
  auto stride_of = [&](const DistType& type, int i, int64_t local) {
    const AxisList& axes = type.dims[i].axes;
    for (auto at = axes.rbegin(); at != axes.rend(); ++at) {
      if (*at == axis) return local;
      local *= mesh.AxisSize(*at);
    }
    return int64_t{0};
  };
  for (int i = 0; i < from.rank(); ++i) {
    if (const int64_t w_a = stride_of(from, i, from_local[i]); w_a != 0) {
      return NeedsOtherSlices(w_a, stride_of(to, i, to_local[i]));
    }
  }
  return false;
}

}  // namespace

double CrossingAlphaUs(const Mesh& mesh, const CostModel& model, const DistType& from,
                       const DistType& to) {
  const double fastest = model.Fastest(mesh).alpha_us;
  // The local shapes only once some axis is slower than the fastest (never under a uniform
  // model, where this runs per NormalValleys call).
  std::optional<std::vector<int64_t>> from_local, to_local;
  double crossing = 0;
  for (const MeshAxis& axis : mesh.axes()) {
    const double alpha = model.Axis(axis.name).alpha_us;
    if (axis.size < 2 || alpha <= std::max(fastest, crossing)) continue;
    if (!from_local) {
      from_local = LocalShape(mesh, from);
      to_local = LocalShape(mesh, to);
    }
    if (MustCross(mesh, from, to, *from_local, *to_local, axis.name)) crossing = alpha;
  }
  return crossing;
}

std::optional<AxisCost> ForcedPermuteLink(const Mesh& mesh, const CostModel& model,
                                          const DistType& in, const DistType& out) {
  // Every placement held by one device (no axis of size >= 2 outside the key): each device
  // that changes takes the only holder of its new key, and a pair crosses axis a exactly when
  // a's key weights differ (the compact search's SinglyHeldCrossed has the argument).
  const std::vector<AxisRole> in_roles = KeyRoles(mesh, in);
  bool singly_held = true;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (mesh.axes()[a].size > 1 && in_roles[a].slot < 0) singly_held = false;
  }
  if (singly_held) {
    const std::vector<AxisRole> out_roles = KeyRoles(mesh, out);
    std::optional<AxisCost> crossed;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      if (mesh.axes()[a].size < 2 || in_roles[a].weight == out_roles[a].weight) continue;
      const AxisCost cost = model.Axis(mesh.axes()[a].name);
      crossed = crossed ? Slower(*crossed, cost) : cost;
    }
    return crossed;
  }
  const std::vector<int64_t> in_local = LocalShape(mesh, in);
  std::optional<AxisCost> all, must;
  for (const MeshAxis& axis : mesh.axes()) {
    if (axis.size < 2) continue;
    const AxisCost cost = model.Axis(axis.name);
    all = all ? Slower(*all, cost) : cost;
    if (MustCross(mesh, in, out, in_local, in_local, axis.name)) {
      must = must ? Slower(*must, cost) : cost;
    }
  }
  if (must && *must == *all) return must;
  return std::nullopt;
}

}  // namespace internal

namespace {

// MinimalPermute for types whose axes are whole axes of `mesh`.
Collective PermuteOnWholeAxes(const Mesh& mesh, const DistType& in, const DistType& out,
                              const CostModel* cost_model) {
  RESHARD_CHECK(SameLocalShape(mesh, in, out) &&
                PartialInMeshOrder(mesh, in) == PartialInMeshOrder(mesh, out))
      << ToString(in) << " -> " << ToString(out);
  using internal::Role;
  const std::vector<Role> key_in = internal::KeyRoles(mesh, in);
  const std::vector<Role> key_out = internal::KeyRoles(mesh, out);
  const int64_t num_keys = internal::NumKeys(mesh, in);
  std::vector<int64_t> acc_in(1), acc_out(1);  // The walks' placement keys.
  if (num_keys == mesh.num_devices()) {
    // One holder per placement (a fully sharded type): each device sends its block to the
    // one device that needs it, found through the inverse of the target's placement.
    std::vector<int64_t> held(num_keys), needed_by(num_keys);
    internal::WalkDevices(mesh, key_in, acc_in, key_out, acc_out, [&](int64_t d) {
      held[d] = acc_in[0];
      needed_by[acc_out[0]] = d;
    });
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t d = 0; d < num_keys; ++d) {
      if (const int64_t t = needed_by[held[d]]; t != d) pairs.emplace_back(d, t);
    }
    return Collective::Permute(std::move(pairs));
  }
  // Devices that must change, in id order, with what they hold and what they need.
  std::vector<int64_t> changed, have, need;
  internal::WalkDevices(mesh, key_in, acc_in, key_out, acc_out, [&](int64_t d) {
    if (acc_in[0] == acc_out[0]) return;
    changed.push_back(d);
    have.push_back(acc_in[0]);
    need.push_back(acc_out[0]);
  });
  // Counting sort by key (stable, so each key's holders and needers stay in id order); both
  // lists hold indices into `changed`.
  std::vector<int64_t> hold_start(num_keys + 1, 0), need_start(num_keys + 1, 0);
  for (size_t i = 0; i < changed.size(); ++i) {
    ++hold_start[have[i] + 1];
    ++need_start[need[i] + 1];
  }
  for (int64_t key = 0; key < num_keys; ++key) {
    hold_start[key + 1] += hold_start[key];
    need_start[key + 1] += need_start[key];
  }
  std::vector<int64_t> holders(changed.size()), needers(changed.size());
  {
    std::vector<int64_t> hold_next(hold_start.begin(), hold_start.end() - 1);
    std::vector<int64_t> need_next(need_start.begin(), need_start.end() - 1);
    for (size_t i = 0; i < changed.size(); ++i) {
      holders[hold_next[have[i]]++] = static_cast<int64_t>(i);
      needers[need_next[need[i]]++] = static_cast<int64_t>(i);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(changed.size());
  // For the greedy below, when some key needs it: the links ranked, from per-axis costs
  // looked up by name once, and the changed devices' coordinates, from an odometer rather
  // than by dividing ids.
  const int k = mesh.num_axes();
  std::optional<internal::LinkOrder> links;
  bool greedy = false;
  for (int64_t key = 0; cost_model != nullptr && !greedy && key < num_keys; ++key) {
    const size_t count = static_cast<size_t>(hold_start[key + 1] - hold_start[key]);
    greedy = count > 1 && count <= internal::kGreedyPairingLimit;
  }
  if (greedy) {
    std::vector<int64_t> sizes(k);
    for (int a = 0; a < k; ++a) sizes[a] = mesh.axes()[a].size;
    links.emplace(sizes, cost_model->AxisCosts(mesh).data());
    std::vector<int64_t> coord(k, 0);
    for (size_t c = 0, d = 0; c < changed.size(); ++d) {
      if (changed[c] == static_cast<int64_t>(d)) {
        links->Add(coord.data());
        ++c;
      }
      for (int i = k - 1; i >= 0 && ++coord[i] == mesh.axes()[i].size; --i) coord[i] = 0;
    }
  }
  std::vector<int64_t> sources;  // The greedy's remaining holders.
  for (int64_t key = 0; key < num_keys; ++key) {
    const int64_t h0 = hold_start[key], h1 = hold_start[key + 1];
    const int64_t n0 = need_start[key], n1 = need_start[key + 1];
    RESHARD_CHECK(h1 - h0 == n1 - n0)
        << "unbalanced permute " << ToString(in) << " -> " << ToString(out);
    const size_t count = static_cast<size_t>(h1 - h0);
    if (count == 0) continue;
    if (cost_model == nullptr || count == 1 || count > internal::kGreedyPairingLimit) {
      for (size_t i = 0; i < count; ++i) {
        pairs.emplace_back(changed[holders[h0 + i]], changed[needers[n0 + i]]);
      }
      continue;
    }
    // Greedy: each needer (in id order) takes the remaining holder behind the cheapest link.
    sources.assign(holders.begin() + h0, holders.begin() + h1);
    for (int64_t j = n0; j < n1; ++j) {
      const size_t best = links->CheapestSource(sources, needers[j]);
      pairs.emplace_back(changed[sources[best]], changed[needers[j]]);
      sources.erase(sources.begin() + best);
    }
  }
  // In source order: each device sends its block at most once, so placing the pairs by
  // source sorts them in one pass (a sort was a tenth of a `normal` call on 2^15 devices).
  std::vector<int64_t> target_of(static_cast<size_t>(mesh.num_devices()), -1);
  for (const auto& [s, t] : pairs) {
    RESHARD_CHECK(target_of[s] < 0) << "device " << s << " sends twice";
    target_of[s] = t;
  }
  pairs.clear();
  for (int64_t s = 0; s < mesh.num_devices(); ++s) {
    if (target_of[s] >= 0) pairs.emplace_back(s, target_of[s]);
  }
  return Collective::Permute(std::move(pairs));
}

}  // namespace

Collective MinimalPermute(const Mesh& mesh, const DistType& in, const DistType& out,
                          const CostModel* cost_model) {
  // Pairs are device ids, which a refinement keeps.
  return OnWholeAxes(mesh, in, out, [&](const Mesh& m, const DistType& a, const DistType& b) {
    return PermuteOnWholeAxes(m, a, b, cost_model);
  });
}

}  // namespace reshard
