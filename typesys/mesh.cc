#include "typesys/mesh.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"

namespace reshard {
namespace {

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  if (!absl::ascii_isalpha(s[0]) && s[0] != '_') return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

// Reads a positive decimal at `text[*pos]`, advancing *pos; false on no digits or overflow.
bool ReadPositive(std::string_view text, size_t* pos, int64_t* value) {
  size_t start = *pos;
  int64_t v = 0;
  while (*pos < text.size() && absl::ascii_isdigit(text[*pos])) {
    int digit = text[*pos] - '0';
    if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
    ++*pos;
  }
  *value = v;
  return *pos > start && v >= 1;
}

// An axis reference split into its axis name and, for a sub-axis x:(m)k, m and k (size 0 for
// a whole axis), without allocating.
struct AxisRefView {
  std::string_view axis;
  int64_t pre = 1;
  int64_t size = 0;
};
enum class RefSyntax { kOk, kBadName, kBadForm };

RefSyntax SplitAxisRef(std::string_view text, AxisRefView* ref) {
  const size_t colon = text.find(':');
  ref->axis = text.substr(0, colon);
  if (!IsIdentifier(ref->axis)) return RefSyntax::kBadName;
  if (colon == std::string_view::npos) return RefSyntax::kOk;
  size_t pos = colon + 1;
  const bool ok = pos < text.size() && text[pos++] == '(' && ReadPositive(text, &pos, &ref->pre) &&
                  pos < text.size() && text[pos++] == ')' && ReadPositive(text, &pos, &ref->size) &&
                  pos == text.size();
  return ok ? RefSyntax::kOk : RefSyntax::kBadForm;
}

// Whether sub-axis (m)k fits an axis of size n: k > 1 and m·k divides n.
bool SubAxisFits(int64_t n, int64_t pre, int64_t size) {
  return size >= 2 && pre <= n / size && n % (pre * size) == 0;
}

}  // namespace

absl::StatusOr<AxisRef> ParseAxisRef(std::string_view text) {
  AxisRefView view;
  switch (SplitAxisRef(text, &view)) {
    case RefSyntax::kBadName:
      return absl::InvalidArgumentError(
          absl::StrCat("axis reference '", Absl(text), "' does not start with an axis name"));
    case RefSyntax::kBadForm:
      return absl::InvalidArgumentError(absl::StrCat(
          "sub-axis '", Absl(text), "' is not of the form name:(m)k with positive integers m, k"));
    case RefSyntax::kOk:
      break;
  }
  return AxisRef{std::string(view.axis), view.pre, view.size};
}

std::string AxisRefName(const AxisRef& ref) {
  if (ref.whole()) return ref.axis;
  return SubAxisName(ref.axis, ref.pre, ref.size);
}

std::string SubAxisName(std::string_view axis, int64_t pre, int64_t size) {
  // By hand rather than StrCat: refinements name every atom of a mesh, several times per
  // Synthesize call. An int64_t takes at most 20 characters.
  char pre_digits[20], size_digits[20];
  const size_t pre_length =
      static_cast<size_t>(std::to_chars(pre_digits, pre_digits + 20, pre).ptr - pre_digits);
  const size_t size_length =
      static_cast<size_t>(std::to_chars(size_digits, size_digits + 20, size).ptr - size_digits);
  std::string name;
  name.reserve(axis.size() + 3 + pre_length + size_length);
  name.append(axis);
  name.append(":(");
  name.append(pre_digits, pre_length);
  name.push_back(')');
  name.append(size_digits, size_length);
  return name;
}

absl::StatusOr<Mesh> Mesh::Create(std::vector<MeshAxis> axes) {
  if (axes.empty()) return absl::InvalidArgumentError("mesh has no axes");
  Mesh mesh;
  mesh.num_devices_ = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const MeshAxis& axis = axes[i];
    if (!IsIdentifier(axis.name) && !(IsSubAxisRef(axis.name) && ParseAxisRef(axis.name).ok())) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis name '", axis.name, "' is not an identifier"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (axes[j].name == axis.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("mesh axis name '", axis.name, "' appears twice"));
      }
    }
    if (axis.size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis '", axis.name, "' has size ", axis.size, "; sizes must be >= 1"));
    }
    if (axis.size > kMaxDevices || mesh.num_devices_ * axis.size > kMaxDevices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mesh has more than ", kMaxDevices, " devices (axis '", axis.name, "' of size ",
          axis.size, ")"));
    }
    mesh.num_devices_ *= axis.size;
  }
  mesh.axes_ = std::move(axes);
  mesh.NameAxes();
  return mesh;
}

Mesh Mesh::FromAtoms(std::vector<MeshAxis> atoms, int64_t num_devices) {
  Mesh mesh;
  mesh.axes_ = std::move(atoms);
  mesh.num_devices_ = num_devices;
  mesh.NameAxes();
#ifndef NDEBUG
  const absl::StatusOr<Mesh> checked = Create(mesh.axes_);
  RESHARD_CHECK(checked.ok() && checked->num_devices_ == num_devices) << checked.status();
#endif
  return mesh;
}

void Mesh::NameAxes() {
  names_.clear();
  for (const MeshAxis& axis : axes_) names_.push_back(AxisName(axis.name));
}

int Mesh::LongAxisIndex(std::string_view name) const {
  for (int i = 0; i < num_axes(); ++i) {
    if (axes_[i].name == name) return i;
  }
  return -1;
}

int Mesh::WholeAxisIndex(std::string_view name) const {
  const int index = AxisIndex(name);
  RESHARD_CHECK(index >= 0) << "'" << name << "' is not an axis of mesh " << ToString()
                            << " (sub-axes must be refined first)";
  return index;
}

absl::Status Mesh::CheckAxisRef(std::string_view ref) const {
  if (HasAxis(ref)) return absl::OkStatus();
  if (!IsSubAxisRef(ref)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown mesh axis '", Absl(ref), "' (mesh is ", ToString(), ")"));
  }
  absl::StatusOr<AxisRef> parsed = ParseAxisRef(ref);
  if (!parsed.ok()) return parsed.status();
  const int index = AxisIndex(parsed->axis);
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sub-axis '", Absl(ref),
                                                   "' names unknown mesh axis '", parsed->axis,
                                                   "' (mesh is ", ToString(), ")"));
  }
  const int64_t n = axes_[index].size;
  if (parsed->size < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("sub-axis '", Absl(ref), "' has size ", parsed->size, "; it must be > 1"));
  }
  if (!SubAxisFits(n, parsed->pre, parsed->size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sub-axis '", Absl(ref), "' does not fit axis '", parsed->axis, "' of size ", n, ": ",
        parsed->pre, "*", parsed->size, " must divide ", n));
  }
  return absl::OkStatus();
}

Mesh::Digit Mesh::Resolve(std::string_view ref) const {
  if (int index = AxisIndex(ref); index >= 0) return Digit{index, 1, axes_[index].size};
  // A sub-axis, on a mesh that does not have it as an atom (metrics and checks of coarsened
  // plans on the user's mesh resolve many): CheckAxisRef's tests, without allocating.
  AxisRefView parsed;
  const int index = SplitAxisRef(ref, &parsed) == RefSyntax::kOk && parsed.size != 0
                        ? AxisIndex(parsed.axis)
                        : -1;
  RESHARD_CHECK(index >= 0 && SubAxisFits(axes_[index].size, parsed.pre, parsed.size))
      << "invalid mesh axis reference '" << ref << "': " << CheckAxisRef(ref);
  return Digit{index, axes_[index].size / (parsed.pre * parsed.size), parsed.size};
}

std::vector<int64_t> Mesh::Coordinates(int64_t device) const {
  RESHARD_CHECK(device >= 0 && device < num_devices_) << "device " << device;
  std::vector<int64_t> coordinates(axes_.size());
  for (int i = num_axes() - 1; i >= 0; --i) {
    coordinates[i] = device % axes_[i].size;
    device /= axes_[i].size;
  }
  return coordinates;
}

int64_t Mesh::DeviceId(absl::Span<const int64_t> coordinates) const {
  RESHARD_CHECK(coordinates.size() == axes_.size());
  int64_t device = 0;
  for (int i = 0; i < num_axes(); ++i) {
    RESHARD_CHECK(coordinates[i] >= 0 && coordinates[i] < axes_[i].size);
    device = device * axes_[i].size + coordinates[i];
  }
  return device;
}

bool Mesh::Compatible(const Digit& a, const Digit& b) {
  if (a.index != b.index) return true;
  const Digit& major = a.stride > b.stride ? a : b;
  const Digit& minor = a.stride > b.stride ? b : a;
  return major.stride % (minor.stride * minor.size) == 0;
}

int64_t Mesh::IndexOver(int64_t device, absl::Span<const AxisName> axes) const {
  std::vector<int64_t> coordinates = Coordinates(device);
  int64_t index = 0;
  for (const AxisName& axis : axes) {
    const Digit digit = Resolve(axis);
    index = index * digit.size + (coordinates[digit.index] / digit.stride) % digit.size;
  }
  return index;
}

std::vector<int64_t> Mesh::Group(int64_t device, absl::Span<const AxisName> axes) const {
  std::vector<int64_t> base = Coordinates(device);
  std::vector<Digit> digits;
  for (const AxisName& axis : axes) digits.push_back(Resolve(axis));
  // Clear the digits the group varies; the rest identify the group.
  for (const Digit& d : digits) {
    base[d.index] -= (base[d.index] / d.stride) % d.size * d.stride;
  }
  int64_t size = GroupSize(axes);
  std::vector<int64_t> group(size);
  for (int64_t index = 0; index < size; ++index) {
    // Decode `index` as a mixed-radix number over `axes`, last axis least significant.
    std::vector<int64_t> coordinates = base;
    int64_t rest = index;
    for (int k = static_cast<int>(digits.size()) - 1; k >= 0; --k) {
      coordinates[digits[k].index] += rest % digits[k].size * digits[k].stride;
      rest /= digits[k].size;
    }
    group[index] = DeviceId(coordinates);
  }
  return group;
}

std::string Mesh::ToString() const {
  return absl::StrJoin(axes_, ",", [](std::string* out, const MeshAxis& axis) {
    absl::StrAppend(out, axis.name, "=", axis.size);
  });
}

absl::StatusOr<Mesh> ParseMesh(std::string_view input) {
  absl::string_view text = absl::StripAsciiWhitespace(Absl(input));
  if (text.empty()) return absl::InvalidArgumentError("mesh text is empty");
  std::vector<MeshAxis> axes;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> name_size = absl::StrSplit(part, absl::MaxSplits('=', 1));
    absl::string_view name = absl::StripAsciiWhitespace(name_size[0]);
    if (name_size.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis '", absl::StripAsciiWhitespace(part),
                       "' is not of the form name=size"));
    }
    // Sub-axis names are for refined meshes built by AxisRefinement, not for users.
    if (!IsIdentifier(std::string_view(name.data(), name.size()))) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis name '", name, "' is not an identifier"));
    }
    absl::string_view size_text = absl::StripAsciiWhitespace(name_size[1]);
    int64_t size = 0;
    if (size_text.empty() || !absl::SimpleAtoi(size_text, &size)) {
      return absl::InvalidArgumentError(absl::StrCat("mesh axis '", name, "' has size '",
                                                     size_text,
                                                     "', which is not a 64-bit integer"));
    }
    axes.push_back(MeshAxis{std::string(name), size});
  }
  return Mesh::Create(std::move(axes));
}

}  // namespace reshard
