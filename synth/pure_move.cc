// The pure-move solver (pure_move.h): an A* search over atom arrangements.
#include "synth/pure_move.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "synth/placement.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/sub_axis.h"

namespace reshard::internal {
namespace {

// A state packs into one 64-bit key: the atom ids (4 bits each) of every dimension, major to
// minor, dimensions separated by kSeparator, dimension 0 in the low bits.
constexpr int kMaxAtoms = 15;
constexpr int kNibbles = 16;
constexpr uint64_t kSeparator = 0xF;
// States the search may create before it gives the call back to normal's general passes
// (the 3-axis suite's pure moves create at most a few hundred).
constexpr size_t kMaxStates = size_t{1} << 14;

// A state unpacked: the atoms of all dimensions in one run, and where each dimension's ends.
struct Lists {
  std::array<uint8_t, kNibbles> atoms{};
  std::array<uint8_t, kNibbles + 1> end{};  // end[d]: one past dimension d's last atom.
  int rank = 0;

  int Begin(int d) const { return d == 0 ? 0 : end[d - 1]; }
  int Length(int d) const { return end[d] - Begin(d); }
};

Lists Unpack(uint64_t key, int rank, int atoms) {
  Lists lists;
  lists.rank = rank;
  int d = 0;
  int count = 0;
  for (int nibble = 0; nibble < atoms + rank - 1; ++nibble, key >>= 4) {
    const auto value = static_cast<uint8_t>(key & 0xF);
    if (value == kSeparator) {
      lists.end[d++] = static_cast<uint8_t>(count);
    } else {
      lists.atoms[count++] = value;
    }
  }
  lists.end[d] = static_cast<uint8_t>(count);
  return lists;
}

// The key of `lists` after moving the last `count` atoms of dimension `concat` to the end of
// dimension `split` (count 0: `lists` itself).
uint64_t PackMoved(const Lists& lists, int concat, int count, int split) {
  uint64_t key = 0;
  int shift = 0;
  auto put = [&](uint64_t value) {
    key |= value << shift;
    shift += 4;
  };
  const int moved_begin = lists.end[concat] - count;
  for (int d = 0; d < lists.rank; ++d) {
    if (d > 0) put(kSeparator);
    const int stop = d == concat ? moved_begin : lists.end[d];
    for (int a = lists.Begin(d); a < stop; ++a) put(lists.atoms[a]);
    if (d == split) {
      for (int a = moved_begin; a < lists.end[concat]; ++a) put(lists.atoms[a]);
    }
  }
  return key;
}

// The atoms of `mesh`: per axis, its factors p, major first, numbered in mesh order.
struct Atoms {
  int64_t p = 0;
  int total = 0;
  // By mesh axis (every axis has an atom, so there are at most kMaxAtoms; fixed arrays, as
  // vectors cost six allocations per call): the id of its major atom, and how many it has.
  std::array<int, kMaxAtoms> first{};
  std::array<int, kMaxAtoms> count{};
  std::array<uint8_t, kMaxAtoms> axis{};  // By atom id: its mesh axis.
};

// nullopt unless every atom has one size (see PureMoveSteps).
std::optional<Atoms> MeshAtoms(const Mesh& mesh, bool sub_axes) {
  Atoms atoms;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const int64_t size = mesh.axes()[a].size;
    if (size < 2) return std::nullopt;
    int64_t p = size;
    if (sub_axes) {
      for (int64_t q = 2; q * q <= size; ++q) {
        if (size % q == 0) {
          p = q;
          break;
        }
      }
    }
    if (atoms.p == 0) atoms.p = p;
    if (p != atoms.p) return std::nullopt;
    int count = 0;
    for (int64_t rest = size; rest > 1; rest /= p, ++count) {
      if (rest % p != 0) return std::nullopt;
    }
    if (atoms.total + count > kMaxAtoms) return std::nullopt;
    atoms.first[a] = atoms.total;
    atoms.count[a] = count;
    for (int i = 0; i < count; ++i) atoms.axis[atoms.total++] = static_cast<uint8_t>(a);
  }
  return atoms;
}

// The canonical names of atoms `ids` in this order (CanonicalAxisList's form): runs of
// consecutive atoms of one axis, major to minor, as one piece, the whole axis by its name.
AxisList AtomNames(const Mesh& mesh, const Atoms& atoms, absl::Span<const uint8_t> ids) {
  AxisList names;
  for (size_t begin = 0, end = 0; begin < ids.size(); begin = end) {
    const int axis = atoms.axis[ids[begin]];
    end = begin + 1;
    while (end < ids.size() && ids[end] == ids[end - 1] + 1 && atoms.axis[ids[end]] == axis) {
      ++end;
    }
    const int length = static_cast<int>(end - begin);
    const MeshAxis& whole = mesh.axes()[axis];
    if (length == atoms.count[axis]) {
      names.push_back(whole.name);
      continue;
    }
    int64_t pre = 1, size = 1;
    for (int i = atoms.first[axis]; i < ids[begin]; ++i) pre *= atoms.p;
    for (int i = 0; i < length; ++i) size *= atoms.p;
    names.push_back(SubAxisName(whole.name, pre, size));
  }
  return names;
}

// log_p(value) when `value` is a power of p, else -1.
int LogOf(int64_t value, int64_t p) {
  int log = 0;
  for (; value > 1; value /= p, ++log) {
    if (value % p != 0) return -1;
  }
  return log;
}

// `type`'s key, or nullopt when it does not name every atom once (not a pure move) or names
// a piece that is not a run of atoms. A reference with digit stride p^j and size p^k of an
// axis of c atoms is its atoms c-j-k .. c-1-j, major first (atom i has stride p^(c-1-i)).
std::optional<uint64_t> PackType(const Mesh& mesh, const Atoms& atoms, const DistType& type) {
  uint64_t key = 0;
  int shift = 0;
  size_t placed = 0;
  for (int d = 0; d < type.rank(); ++d) {
    if (d > 0) {
      key |= kSeparator << shift;
      shift += 4;
    }
    for (const AxisName& name : type.dims[d].axes) {
      const Mesh::Digit digit = mesh.Resolve(name);
      if (digit.index < 0) return std::nullopt;
      const int count = atoms.count[digit.index];
      const int j = LogOf(digit.stride, atoms.p);
      const int k = LogOf(digit.size, atoms.p);
      if (j < 0 || k < 1 || j + k > count) return std::nullopt;
      for (int i = count - j - k; i < count - j; ++i, shift += 4) {
        key |= static_cast<uint64_t>(atoms.first[digit.index] + i) << shift;
      }
      placed += k;
    }
  }
  if (placed != static_cast<size_t>(atoms.total)) return std::nullopt;
  return key;
}

// One search state: its key, the cheapest known path to it from `to` (modeled µs, bytes), and
// the move from its predecessor that reached it. Seen from the plan, which runs towards `to`,
// the step leaving this state is an all_to_all of its last `count` atoms of dimension
// `concat` back to the end of dimension `split`.
struct Node {
  uint64_t key = 0;
  double us = 0;
  int64_t bytes = 0;
  int32_t parent = -1;
  uint8_t concat = 0;
  uint8_t split = 0;
  uint8_t count = 0;
};

// Whether `us` exceeds `than_us` beyond rounding: path costs are sums of the same step costs
// in different orders.
bool Above(double us, double than_us) {
  return us > than_us + 1e-9 * std::max(1.0, std::abs(than_us));
}

// Lexicographic (µs, bytes), with µs equal within rounding (Above).
bool Cheaper(double us, int64_t bytes, double than_us, int64_t than_bytes) {
  if (Above(than_us, us)) return true;
  if (Above(us, than_us)) return false;
  return bytes < than_bytes;
}

// The pairs of the permute from arrangement `in` to `out` (same shape), sources in id order
// as MinimalPermute lists them. Every block has one holder, so each device sends to the one
// device that needs its block. Device ids count in atom digits, atom 0 the most major (mesh
// order, each axis's atoms major first); a block's key counts in the type's atom order.
std::vector<std::pair<int64_t, int64_t>> PermutePairs(const Lists& in, const Lists& out, int n,
                                                      int64_t p, int64_t devices) {
  auto weights = [&](const Lists& lists) {
    std::array<int64_t, kMaxAtoms> weight{};
    int64_t stride = 1;
    for (int a = lists.end[lists.rank - 1] - 1; a >= 0; --a, stride *= p) {
      weight[lists.atoms[a]] = stride;
    }
    return weight;
  };
  const std::array<int64_t, kMaxAtoms> w_in = weights(in);
  const std::array<int64_t, kMaxAtoms> w_out = weights(out);
  // Device ids count in n digits of radix p (every atom has size p).
  std::array<int64_t, kMaxAtoms> radices;
  std::fill(radices.begin(), radices.begin() + n, p);
  const absl::Span<const int64_t> digits(radices.data(), n);
  std::vector<int64_t> held(devices), out_key(devices), needed_by(devices);
  RowMajorKeys(digits, w_in.data(), held.data());
  RowMajorKeys(digits, w_out.data(), out_key.data());
  for (int64_t d = 0; d < devices; ++d) needed_by[out_key[d]] = d;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(devices);
  for (int64_t d = 0; d < devices; ++d) {
    if (const int64_t t = needed_by[held[d]]; t != d) pairs.emplace_back(d, t);
  }
  return pairs;
}

}  // namespace

std::optional<std::vector<Step>> PureMoveSteps(const Mesh& mesh, const DistType& from,
                                               const DistType& to, const CostModel& model,
                                               bool sub_axes) {
  const std::optional<Atoms> atoms = MeshAtoms(mesh, sub_axes);
  const int rank = from.rank();
  if (!atoms || rank < 1 || atoms->total + rank - 1 > kNibbles) {
    return std::nullopt;
  }
  const int n = atoms->total;
  const std::optional<uint64_t> from_key = PackType(mesh, *atoms, from);
  const std::optional<uint64_t> to_key = PackType(mesh, *atoms, to);
  if (!from_key || !to_key) return std::nullopt;
  const int64_t p = atoms->p;

  // Dimension d holds at most room[d] atoms: p^room[d] divides its size.
  std::array<int, kNibbles> room{};
  for (int d = 0; d < rank; ++d) {
    for (int64_t size = from.dims[d].size; size % p == 0 && room[d] < n; size /= p) ++room[d];
  }
  const Lists from_lists = Unpack(*from_key, rank, n);

  // Step costs by atoms moved: every block keeps LocalBytes(from), so they depend on L alone.
  const int64_t block = LocalBytes(mesh, from);
  const int64_t devices = mesh.num_devices();
  const AxisCost link = model.Axis(mesh.axes()[0].name);
  std::array<double, kMaxAtoms + 1> step_us{};
  std::array<int64_t, kMaxAtoms + 1> step_bytes{};
  for (int64_t count = 1, k = p; count <= n; ++count, k *= p) {
    step_us[count] = GroupCollectiveUs(CollectiveKind::kAllToAll, static_cast<double>(k), link,
                                       static_cast<double>(block));
    step_bytes[count] = block * devices - block * (devices / k);
  }
  // moving_us[e]: the cheapest all_to_alls that move e atoms, in groups of any sizes.
  std::array<double, kMaxAtoms + 1> moving_us{};
  for (int e = 1; e <= n; ++e) {
    moving_us[e] = std::numeric_limits<double>::infinity();
    for (int count = 1; count <= e; ++count) {
      moving_us[e] = std::min(moving_us[e], step_us[count] + moving_us[e - count]);
    }
  }
  const double permute_us = link.alpha_us + link.TransferUs(static_cast<double>(block));

  // The search's bound: a path from a state to `from`'s shape must move every atom above
  // `from`'s count in its dimension, so it costs at least moving_us[atoms_above]. Consistent:
  // a step of L atoms costs step_us[L] and lowers the count by at most L, and moving_us[e] <=
  // step_us[L] + moving_us[max(e - L, 0)] (moving_us and step_us increase).
  auto above = [&](int d, int length) { return std::max(0, length - from_lists.Length(d)); };
  auto atoms_above = [&](const Lists& lists) {
    int count = 0;
    for (int d = 0; d < rank; ++d) count += above(d, lists.Length(d));
    return count;
  };
  auto same_shape = [&](const Lists& lists) {
    for (int d = 0; d < rank; ++d) {
      if (lists.end[d] != from_lists.end[d]) return false;
    }
    return true;
  };
  // Bytes of the permute from `from` to `lists` (same shape): a device keeps its block when
  // the atoms at each position agree in coordinate, i.e. is constant on every cycle of the
  // position-wise map from `from`'s atoms to these, so p^cycles devices stay.
  auto permute_bytes = [&](const Lists& lists) {
    std::array<uint8_t, kMaxAtoms> image{};
    for (int a = 0; a < n; ++a) image[from_lists.atoms[a]] = lists.atoms[a];
    std::array<bool, kMaxAtoms> seen{};
    int64_t staying = 1;
    for (int a = 0; a < n; ++a) {
      if (seen[a]) continue;
      staying *= p;
      for (int b = a; !seen[b]; b = image[b]) seen[b] = true;
    }
    return block * (devices - staying);
  };

  // Most searches stay within a few dozen states (the quality suite's 3-axis cases reach at
  // most 27): room for 24 keeps each buffer below the size at which glibc's malloc
  // consolidates its free lists, which had cost more than the search itself.
  constexpr size_t kUsualStates = 24;
  std::vector<Node> nodes;
  nodes.reserve(kUsualStates);
  absl::flat_hash_map<uint64_t, int32_t> index;
  index.reserve(kUsualStates);
  struct Entry {
    double f;
    int64_t bytes;
    double us;
    int32_t node;
    bool operator>(const Entry& other) const {
      return std::tie(f, bytes, node) > std::tie(other.f, other.bytes, other.node);
    }
  };
  std::vector<Entry> entries;
  entries.reserve(kUsualStates);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue(std::greater<Entry>(),
                                                                            std::move(entries));
  nodes.push_back(Node{*to_key});
  index.emplace(*to_key, 0);
  queue.push(Entry{moving_us[atoms_above(Unpack(*to_key, rank, n))], 0, 0, 0});

  double best_us = std::numeric_limits<double>::infinity();
  int64_t best_bytes = std::numeric_limits<int64_t>::max();
  int32_t best = -1;
  bool best_permutes = false;
  while (!queue.empty()) {
    const Entry entry = queue.top();
    queue.pop();
    if (Above(entry.f, best_us)) break;
    const Node node = nodes[entry.node];
    if (node.us != entry.us || node.bytes != entry.bytes) continue;  // Superseded.
    const Lists lists = Unpack(node.key, rank, n);
    const int node_above = atoms_above(lists);
    if (same_shape(lists)) {
      const bool permutes = node.key != *from_key;
      const double us = node.us + (permutes ? permute_us : 0);
      const int64_t bytes = node.bytes + (permutes ? permute_bytes(lists) : 0);
      if (Cheaper(us, bytes, best_us, best_bytes)) {
        best_us = us;
        best_bytes = bytes;
        best = entry.node;
        best_permutes = permutes;
      }
    }
    for (int concat = 0; concat < rank; ++concat) {
      for (int count = 1; count <= lists.Length(concat); ++count) {
        for (int split = 0; split < rank; ++split) {
          if (split == concat || lists.Length(split) + count > room[split]) continue;
          const double us = node.us + step_us[count];
          const int moved_above = node_above - above(concat, lists.Length(concat)) -
                                  above(split, lists.Length(split)) +
                                  above(concat, lists.Length(concat) - count) +
                                  above(split, lists.Length(split) + count);
          const double f = us + moving_us[moved_above];
          if (Above(f, best_us)) continue;  // Cannot win.
          const uint64_t key = PackMoved(lists, concat, count, split);
          const int64_t bytes = node.bytes + step_bytes[count];
          const auto [it, inserted] = index.try_emplace(key, static_cast<int32_t>(nodes.size()));
          if (inserted) {
            if (nodes.size() >= kMaxStates) return std::nullopt;
            nodes.push_back(Node{key});
          } else if (!Cheaper(us, bytes, nodes[it->second].us, nodes[it->second].bytes)) {
            continue;
          }
          Node& next = nodes[it->second];
          next.us = us;
          next.bytes = bytes;
          next.parent = entry.node;
          next.concat = static_cast<uint8_t>(split);  // The plan moves them back.
          next.split = static_cast<uint8_t>(concat);
          next.count = static_cast<uint8_t>(count);
          queue.push(Entry{f, bytes, us, it->second});
        }
      }
    }
  }
  if (best < 0) return std::nullopt;  // No arrangement of from's shape reaches `to`.

  // The plan: the permute to the best state, then the moves back along its path to `to`.
  auto names = [&](const Lists& lists, int begin, int end) {
    AxisList merged =
        AtomNames(mesh, *atoms, absl::MakeConstSpan(lists.atoms.data() + begin, end - begin));
#ifndef NDEBUG
    AxisList each;  // Atom by atom, for typesys to merge.
    for (int a = begin; a < end; ++a) {
      each.push_back(AtomNames(mesh, *atoms, absl::MakeConstSpan(&lists.atoms[a], 1))[0]);
    }
    RESHARD_CHECK(merged == CanonicalAxisList(mesh, each)) << "pure move: atom names";
#endif
    return merged;
  };
  auto type_of = [&](const Lists& lists) {
    DistType type;
    type.element_type = from.element_type;
    type.dims.resize(rank);
    for (int d = 0; d < rank; ++d) {
      type.dims[d].size = from.dims[d].size;
      type.dims[d].axes = names(lists, lists.Begin(d), lists.end[d]);
    }
    return type;
  };
  std::vector<Step> steps;
  if (best_permutes) {
    const Lists arranged = Unpack(nodes[best].key, rank, n);
    steps.push_back(Step{Collective::Permute(PermutePairs(from_lists, arranged, n, p, devices)),
                         type_of(arranged)});
  }
  for (int32_t v = best; nodes[v].parent >= 0; v = nodes[v].parent) {
    const Node& node = nodes[v];
    const Lists lists = Unpack(node.key, rank, n);
    steps.push_back(Step{Collective::AllToAll(names(lists, lists.end[node.concat] - node.count,
                                                    lists.end[node.concat]),
                                              node.concat, node.split),
                         type_of(Unpack(nodes[node.parent].key, rank, n))});
  }
  return steps;
}

}  // namespace reshard::internal
