// mesh.h — device meshes: ordered named axes, row-major device numbering.
//
// A mesh is written `x=2,y=4`: 8 devices, axis x major. Device d has one coordinate per axis;
// d = row-major linear index of its coordinates (MLIR's mesh.process_linear_index).
//
//   absl::StatusOr<reshard::Mesh> mesh = reshard::ParseMesh("x=2,y=4");
//   mesh->Coordinates(5);               // {1, 1}
//   mesh->Group(5, {"y"});              // {4, 5, 6, 7}: devices with x = 1, ordered by y
//
// Axis references (the strings naming axes in types and collectives) are a whole axis `y` or
// a sub-axis in Shardy's notation `y:(m)k`: axis y of size n viewed as [m, k, n/(m·k)], the
// middle part; its coordinate is the middle digit group of y's coordinate, (c / (n/(m·k))) % k.
//   mesh->IndexOver(5, {"y:(1)2"});     // 0: y = 1 is the digits [0, 1] of y:(1)2, y:(2)2
//   mesh->IndexOver(5, {"y:(2)2"});     // 1
#ifndef RESHARD_TYPESYS_MESH_H_
#define RESHARD_TYPESYS_MESH_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace reshard {

// Largest supported device count; beyond it per-device tables would not fit in memory.
inline constexpr int64_t kMaxDevices = int64_t{1} << 20;

// A list of axis references (a dimension's axes, a type's partial axes, a collective's
// groups), stored inline up to four: synthesis copies types constantly, and with vectors the
// axis lists were about a third of its allocations (docs/benchmarks.md).
using AxisList = absl::InlinedVector<std::string, 4>;

// a == b for axis names, without a call to memcmp for names that differ in their first byte
// (the synthesizer compares one-letter names constantly, and std::string's == calls memcmp
// whenever the lengths agree).
inline bool SameAxisName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && (a.empty() || (a[0] == b[0] && a.substr(1) == b.substr(1)));
}

inline bool ContainsAxis(const AxisList& list, std::string_view axis) {
  for (const std::string& a : list) {
    if (SameAxisName(a, axis)) return true;
  }
  return false;
}

// std::erase_if and std::erase for an AxisList (the standard's overloads cover only its own
// containers).
template <typename Pred>
void EraseAxesIf(AxisList& list, Pred pred) {
  list.erase(std::remove_if(list.begin(), list.end(), pred), list.end());
}
inline void EraseAxis(AxisList& list, std::string_view axis) {
  EraseAxesIf(list, [axis](const std::string& a) { return a == axis; });
}

// A parsed axis reference: `axis` alone (size == 0), or the sub-axis `axis:(pre)size`.
struct AxisRef {
  std::string axis;
  int64_t pre = 1;
  int64_t size = 0;

  bool whole() const { return size == 0; }
  bool operator==(const AxisRef&) const = default;
};

// Syntax only: an identifier, optionally followed by `:(m)k` with decimal m, k >= 1 (no
// spaces inside). InvalidArgument naming the text. Whether the piece fits a mesh is
// Mesh::CheckAxisRef's business.
absl::StatusOr<AxisRef> ParseAxisRef(std::string_view text);
// "x" or "x:(m)k".
std::string AxisRefName(const AxisRef& ref);
// "x:(m)k" for axis x, pre m and size k (AxisRefName of a sub-axis, without building an
// AxisRef: refinements name every atom this way).
std::string SubAxisName(std::string_view axis, int64_t pre, int64_t size);
// True when `ref` is written as a sub-axis (contains ':'); cheap, no parsing. (A loop, not
// find(): names are a few bytes, and the call to memchr cost more than the scan.)
inline bool IsSubAxisRef(std::string_view ref) {
  for (const char c : ref) {
    if (c == ':') return true;
  }
  return false;
}

struct MeshAxis {
  std::string name;
  int64_t size = 0;

  bool operator==(const MeshAxis&) const = default;
};

// An immutable, validated mesh. Obtain one from Mesh::Create or ParseMesh.
class Mesh {
 public:
  // Validates and builds a mesh. InvalidArgument when there are no axes, a name is not an
  // identifier ([A-Za-z_][A-Za-z0-9_]*) or sub-axis reference (the axes of refined meshes,
  // typesys/sub_axis.h), a name repeats, a size is < 1, or the device count
  // exceeds kMaxDevices.
  static absl::StatusOr<Mesh> Create(std::vector<MeshAxis> axes);

  Mesh() = default;  // An empty mesh, only useful as a placeholder before assignment.

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int num_axes() const { return static_cast<int>(axes_.size()); }
  int64_t num_devices() const { return num_devices_; }

  // Index of the axis named `name`, or -1 when there is none. (Inline: the synthesizer looks
  // axes up by name tens of thousands of times per call, most through AxisSize and GroupSize.
  // Short names keep their one-integer key: one two-integer key for every name cost the
  // one-letter suite 1.5 % of its instructions.)
  int AxisIndex(std::string_view name) const {
    if (const uint64_t key = ShortNameKey(name); key != 0) {
      const uint64_t* keys = name_keys_.data();
      const int count = static_cast<int>(name_keys_.size());
      for (int i = 0; i < count; ++i) {
        if (keys[i] == key) return i;
      }
      return -1;
    }
    if (const MidKey key = MidNameKey(name); key.hi != 0) {
      const MidKey* keys = mid_keys_.data();
      const int count = static_cast<int>(mid_keys_.size());
      for (int i = 0; i < count; ++i) {
        // `hi` first (not MidKey's ==): the atoms of one axis share their first 8 bytes.
        if (keys[i].hi == key.hi && keys[i].lo == key.lo) return i;
      }
      return -1;
    }
    return LongAxisIndex(name);
  }
  bool HasAxis(std::string_view name) const { return AxisIndex(name) >= 0; }
  // AxisIndex(name) where `name` must be an axis of this mesh, not a sub-axis reference (code
  // written for whole axes; refine types first, typesys/sub_axis.h): aborts naming it otherwise
  // rather than let an index of -1 reach an array.
  int WholeAxisIndex(std::string_view name) const;
  // Size of a known axis or valid sub-axis reference (aborts on an unknown one: validate
  // first).
  int64_t AxisSize(std::string_view name) const {
    const int index = AxisIndex(name);
    return index >= 0 ? axes_[index].size : Resolve(name).size;
  }
  // Product of the sizes of known, distinct axis references (1 for an empty list). (Inline:
  // every local size the synthesizer computes calls it.)
  int64_t GroupSize(absl::Span<const std::string> axes) const {
    int64_t size = 1;
    for (const std::string& axis : axes) size *= AxisSize(axis);
    return size;
  }

  // OK when `ref` names an axis of this mesh, or is a sub-axis `x:(m)k` of one with k > 1 and
  // m·k dividing x's size. InvalidArgument naming the reference and the rule otherwise.
  absl::Status CheckAxisRef(std::string_view ref) const;
  // A valid reference resolved to (mesh axis index, stride, size): its coordinate on device d
  // is (Coordinates(d)[index] / stride) % size. A whole axis has stride 1.
  struct Digit {
    int index = -1;
    int64_t stride = 1;
    int64_t size = 1;
  };
  Digit Resolve(std::string_view ref) const;
  // Two resolved references can be used together (in one type or one collective): different
  // axes, or disjoint digit groups of one split of the axis — the major one's stride is a
  // multiple of the minor one's stride·size (so their breakpoints nest).
  static bool Compatible(const Digit& a, const Digit& b);

  // Coordinates of device `device` (0 <= device < num_devices()), one per axis in mesh order.
  std::vector<int64_t> Coordinates(int64_t device) const;
  // Inverse of Coordinates.
  int64_t DeviceId(absl::Span<const int64_t> coordinates) const;

  // Mixed-radix number of `device`'s coordinates over the axis references `axes` (first
  // most significant).
  // This is the device's block index for a dimension sharded over `axes`, and its index in
  // the group of a collective over `axes`.
  int64_t IndexOver(int64_t device, absl::Span<const std::string> axes) const;
  // The group of `device` for a collective over `axes`: every device that agrees with it on
  // all other axes, ordered by IndexOver(., axes).
  std::vector<int64_t> Group(int64_t device, absl::Span<const std::string> axes) const;

  // Canonical text, e.g. "x=2,y=4". ParseMesh(ToString()) == *this for meshes whose axes are
  // identifiers; a refined mesh's atoms (`x:(1)2`, typesys/sub_axis.h) print but do not parse
  // back (user meshes name whole axes; plans are read on them).
  std::string ToString() const;

  bool operator==(const Mesh&) const = default;

 private:
  friend class AxisRefinement;
  // The refinement of a mesh of `num_devices` devices into `atoms` (AxisRefinement::Create),
  // which are valid by construction: Create's checks, which parse every name, are skipped.
  static Mesh FromAtoms(std::vector<MeshAxis> atoms, int64_t num_devices);

  // Sets name_keys_ from axes_ (every constructor that fills axes_ calls it).
  void KeyNames();
  // `name`'s length and bytes packed into an integer (length in the top byte, then the bytes,
  // first lowest) when it has 1 to 7 bytes; else 0. Two short names have the same key exactly
  // when they are equal.
  static uint64_t ShortNameKey(std::string_view name) {
    const size_t n = name.size();
    if (n == 0 || n >= sizeof(uint64_t)) return 0;
    const char* p = name.data();
    uint64_t bytes = 0;
    if (n >= 4) {  // Two 4-byte loads that overlap when n < 8 (the overlap ORs equal bytes).
      uint32_t low, high;
      std::memcpy(&low, p, 4);
      std::memcpy(&high, p + n - 4, 4);
      bytes = uint64_t{low} | uint64_t{high} << (8 * (n - 4));
    } else {
      for (size_t i = 0; i < n; ++i) bytes |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
    }
    return bytes | uint64_t{n} << 56;
  }
  // `name` packed into two integers when it has 8 to 15 bytes: bytes 0-7 in `lo`, 8-14 in
  // `hi` (first lowest, zero-padded) and the length in hi's top byte; else {0, 0}. Two such
  // names have the same key exactly when they are equal.
  struct MidKey {
    uint64_t lo = 0, hi = 0;
    bool operator==(const MidKey&) const = default;
  };
  static MidKey MidNameKey(std::string_view name) {
    const size_t n = name.size();
    if (n < sizeof(uint64_t) || n >= 2 * sizeof(uint64_t)) return {};
    MidKey key;
    std::memcpy(&key.lo, name.data(), 8);
    uint64_t tail = 0;  // The last 8 bytes, shifted down to those past the first 8.
    std::memcpy(&tail, name.data() + n - 8, 8);
    key.hi = (n > 8 ? tail >> (8 * (16 - n)) : 0) | uint64_t{n} << 56;
    return key;
  }
  // AxisIndex for names neither key packs (empty, or of 16 bytes or more).
  int LongAxisIndex(std::string_view name) const;

  std::vector<MeshAxis> axes_;
  int64_t num_devices_ = 0;
  // Per axis, its name packed into an integer (ShortNameKey; 0 for names of 8
  // bytes or more). AxisIndex runs on every path that names axes by string, and comparing one
  // integer per axis halves its cost on the atoms of refined meshes (`x:(1)2`), which share
  // their first and last characters. Derived from axes_, so equality is unaffected.
  absl::InlinedVector<uint64_t, 8> name_keys_;
  // The same for names of 8 to 15 bytes (MidNameKey; {0, 0} for the others; empty when no
  // name has that length): the atoms of production-style axis names (`tensor:(1)2`), which
  // would otherwise be compared character by character.
  absl::InlinedVector<MidKey, 8> mid_keys_;
};

// Parses `name=size,name=size,...` (whitespace around tokens is ignored). InvalidArgument with
// a message naming the offending text or axis.
absl::StatusOr<Mesh> ParseMesh(std::string_view text);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_MESH_H_
