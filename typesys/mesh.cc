#include "typesys/mesh.h"

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

}  // namespace

absl::StatusOr<Mesh> Mesh::Create(std::vector<MeshAxis> axes) {
  if (axes.empty()) return absl::InvalidArgumentError("mesh has no axes");
  Mesh mesh;
  mesh.num_devices_ = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const MeshAxis& axis = axes[i];
    if (!IsIdentifier(axis.name)) {
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
  return mesh;
}

int Mesh::AxisIndex(std::string_view name) const {
  for (int i = 0; i < num_axes(); ++i) {
    if (axes_[i].name == name) return i;
  }
  return -1;
}

int64_t Mesh::AxisSize(std::string_view name) const {
  int index = AxisIndex(name);
  RESHARD_CHECK(index >= 0) << "unknown mesh axis '" << name << "'";
  return axes_[index].size;
}

int64_t Mesh::GroupSize(absl::Span<const std::string> axes) const {
  int64_t size = 1;
  for (const std::string& axis : axes) size *= AxisSize(axis);
  return size;
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

int64_t Mesh::IndexOver(int64_t device, absl::Span<const std::string> axes) const {
  std::vector<int64_t> coordinates = Coordinates(device);
  int64_t index = 0;
  for (const std::string& axis : axes) {
    int a = AxisIndex(axis);
    RESHARD_CHECK(a >= 0) << "unknown mesh axis '" << axis << "'";
    index = index * axes_[a].size + coordinates[a];
  }
  return index;
}

std::vector<int64_t> Mesh::Group(int64_t device, absl::Span<const std::string> axes) const {
  std::vector<int64_t> base = Coordinates(device);
  std::vector<int> axis_indices;
  for (const std::string& axis : axes) {
    int a = AxisIndex(axis);
    RESHARD_CHECK(a >= 0) << "unknown mesh axis '" << axis << "'";
    axis_indices.push_back(a);
  }
  int64_t size = GroupSize(axes);
  std::vector<int64_t> group(size);
  for (int64_t index = 0; index < size; ++index) {
    // Decode `index` as a mixed-radix number over `axes`, last axis least significant.
    std::vector<int64_t> coordinates = base;
    int64_t rest = index;
    for (int k = static_cast<int>(axis_indices.size()) - 1; k >= 0; --k) {
      int64_t axis_size = axes_[axis_indices[k]].size;
      coordinates[axis_indices[k]] = rest % axis_size;
      rest /= axis_size;
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
