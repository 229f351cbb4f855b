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
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "typesys/axis_name.h"

namespace reshard {

// Largest supported device count; beyond it per-device tables would not fit in memory.
inline constexpr int64_t kMaxDevices = int64_t{1} << 20;

// A list of axis references (a dimension's axes, a type's partial axes, a collective's
// groups), stored inline up to four: synthesis copies types constantly, and with vectors the
// axis lists were about a third of its allocations (docs/benchmarks.md). Its elements are
// AxisNames (trivially copyable), so a list copies as one memcpy.
using AxisList = absl::InlinedVector<AxisName, 4>;

inline bool ContainsAxis(const AxisList& list, const AxisName& axis) {
  for (const AxisName& a : list) {
    if (a == axis) return true;
  }
  return false;
}

// std::erase_if and std::erase for an AxisList (the standard's overloads cover only its own
// containers).
template <typename Pred>
void EraseAxesIf(AxisList& list, Pred pred) {
  list.erase(std::remove_if(list.begin(), list.end(), pred), list.end());
}
inline void EraseAxis(AxisList& list, const AxisName& axis) {
  EraseAxesIf(list, [&axis](const AxisName& a) { return a == axis; });
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
  // axes()[index].name as an AxisName (for AxisLists and lookups: no conversion per use).
  const AxisName& axis_name(int index) const { return names_[index]; }
  int num_axes() const { return static_cast<int>(axes_.size()); }
  int64_t num_devices() const { return num_devices_; }

  // Index of the axis named `name`, or -1 when there is none. (Inline: the synthesizer looks
  // axes up by name tens of thousands of times per call, most through AxisSize and GroupSize,
  // with the AxisNames of its types: two word comparisons per axis.)
  int AxisIndex(const AxisName& name) const {
    const AxisName* names = names_.data();
    const int count = static_cast<int>(names_.size());
    for (int i = 0; i < count; ++i) {
      if (names[i] == name) return i;
    }
    return -1;
  }
  // The same for text: a short name is packed into an AxisName (not interned), a long one
  // compared as text (looking up an unknown name must not intern it).
  int AxisIndex(std::string_view name) const {
    return name.size() <= AxisName::kInlineChars ? AxisIndex(AxisName(name)) : LongAxisIndex(name);
  }
  int AxisIndex(const std::string& name) const { return AxisIndex(std::string_view(name)); }
  int AxisIndex(const char* name) const { return AxisIndex(std::string_view(name)); }
  bool HasAxis(std::string_view name) const { return AxisIndex(name) >= 0; }
  // AxisIndex(name) where `name` must be an axis of this mesh, not a sub-axis reference (code
  // written for whole axes; refine types first, typesys/sub_axis.h): aborts naming it otherwise
  // rather than let an index of -1 reach an array.
  int WholeAxisIndex(std::string_view name) const;
  // Size of a known axis or valid sub-axis reference (aborts on an unknown one: validate
  // first).
  int64_t AxisSize(const AxisName& name) const {
    const int index = AxisIndex(name);
    return index >= 0 ? axes_[index].size : Resolve(name).size;
  }
  int64_t AxisSize(std::string_view name) const {
    const int index = AxisIndex(name);
    return index >= 0 ? axes_[index].size : Resolve(name).size;
  }
  int64_t AxisSize(const std::string& name) const { return AxisSize(std::string_view(name)); }
  int64_t AxisSize(const char* name) const { return AxisSize(std::string_view(name)); }
  // Product of the sizes of known, distinct axis references (1 for an empty list). (Inline:
  // every local size the synthesizer computes calls it.)
  int64_t GroupSize(absl::Span<const AxisName> axes) const {
    int64_t size = 1;
    for (const AxisName& axis : axes) size *= AxisSize(axis);
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
  int64_t IndexOver(int64_t device, absl::Span<const AxisName> axes) const;
  // The group of `device` for a collective over `axes`: every device that agrees with it on
  // all other axes, ordered by IndexOver(., axes).
  std::vector<int64_t> Group(int64_t device, absl::Span<const AxisName> axes) const;

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

  // Sets names_ from axes_ (every constructor that fills axes_ calls it).
  void NameAxes();
  // AxisIndex for names longer than AxisName::kInlineChars.
  int LongAxisIndex(std::string_view name) const;

  std::vector<MeshAxis> axes_;
  int64_t num_devices_ = 0;
  // Per axis, its name as an AxisName: AxisIndex compares these rather than strings. Derived
  // from axes_, so equality is unaffected.
  absl::InlinedVector<AxisName, 8> names_;
};

// Parses `name=size,name=size,...` (whitespace around tokens is ignored). InvalidArgument with
// a message naming the offending text or axis.
absl::StatusOr<Mesh> ParseMesh(std::string_view text);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_MESH_H_
