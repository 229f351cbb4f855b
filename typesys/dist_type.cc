#include "typesys/dist_type.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

struct ElementInfo {
  ElementType type;
  std::string_view name;
  int64_t bytes;
};

constexpr ElementInfo kElements[] = {
    {ElementType::kF32, "f32", 4},  {ElementType::kF64, "f64", 8}, {ElementType::kBF16, "bf16", 2},
    {ElementType::kF16, "f16", 2},  {ElementType::kI8, "i8", 1},   {ElementType::kI32, "i32", 4},
    {ElementType::kI64, "i64", 8},
};

// Nothing for a value outside the enum (a caller's cast).
const ElementInfo* Find(ElementType type) {
  for (const ElementInfo& info : kElements) {
    if (info.type == type) return &info;
  }
  return nullptr;
}

const ElementInfo& Info(ElementType type) {
  const ElementInfo* info = Find(type);
  RESHARD_CHECK(info != nullptr) << "unknown element type";
  return *info;
}

// A recursive-descent reader over the type text. Every error names the character offset so a
// user can find the problem in a long type.
class TypeParser {
 public:
  explicit TypeParser(std::string_view text) : text_(text) {}

  absl::StatusOr<DistType> Parse() {
    DistType type;
    SkipSpace();
    std::string_view element = Word();
    if (element.empty()) {
      return Error("expected an element type (f32, f64, bf16, f16, i8, i32, i64)");
    }
    absl::StatusOr<ElementType> element_type = ParseElementType(element);
    if (!element_type.ok()) return element_type.status();
    type.element_type = *element_type;
    if (!Consume('[')) return Error("expected '[' after the element type");
    if (!Consume(']')) {
      do {
        absl::StatusOr<Dim> dim = ParseDim();
        if (!dim.ok()) return dim.status();
        type.dims.push_back(*std::move(dim));
      } while (Consume(','));
      if (!Consume(']')) return Error("expected ',' or ']' after a dimension");
    }
    SkipSpace();
    if (pos_ < text_.size()) {
      std::string_view keyword = Word();
      if (keyword != "partial") return Error("expected 'partial{...}' or the end of the type");
      if (!Consume('{')) return Error("expected '{' after 'partial'");
      absl::StatusOr<AxisList> axes = ParseAxisList();
      if (!axes.ok()) return axes.status();
      type.partial = *std::move(axes);
    }
    SkipSpace();
    if (pos_ < text_.size()) return Error("unexpected text after the type");
    return type;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed type '", Absl(text_), "' at offset ", pos_, ": ", Absl(what)));
  }

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // An identifier-like word (letters, digits, underscores, starting with a letter or '_').
  std::string_view Word() {
    SkipSpace();
    size_t start = pos_;
    if (pos_ < text_.size() && (absl::ascii_isalpha(text_[pos_]) || text_[pos_] == '_')) {
      while (pos_ < text_.size() && (absl::ascii_isalnum(text_[pos_]) || text_[pos_] == '_')) {
        ++pos_;
      }
    }
    return text_.substr(start, pos_ - start);
  }

  absl::StatusOr<Dim> ParseDim() {
    SkipSpace();
    if (pos_ >= text_.size() || !absl::ascii_isdigit(text_[pos_])) {
      return Error("expected a dimension size");
    }
    Dim dim;
    while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) {
      int digit = text_[pos_] - '0';
      if (dim.size > (kInt64Max - digit) / 10) return Error("dimension size overflows 64 bits");
      dim.size = dim.size * 10 + digit;
      ++pos_;
    }
    if (Consume('{')) {
      absl::StatusOr<AxisList> axes = ParseAxisList();
      if (!axes.ok()) return axes.status();
      dim.axes = *std::move(axes);
    }
    return dim;
  }

  // After '{': `}` or `name (, name)* }`.
  absl::StatusOr<AxisList> ParseAxisList() {
    AxisList axes;
    if (Consume('}')) return axes;
    do {
      std::string_view name = Word();
      if (name.empty()) return Error("expected a mesh axis name");
      if (pos_ < text_.size() && text_[pos_] == ':') {
        // A sub-axis `name:(m)k`: read to the next separator and let ParseAxisRef judge it.
        const size_t start = pos_ - name.size();
        while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '}' &&
               !absl::ascii_isspace(text_[pos_])) {
          ++pos_;
        }
        absl::StatusOr<AxisRef> ref = ParseAxisRef(text_.substr(start, pos_ - start));
        if (!ref.ok()) return Error(Std(ref.status().message()));
        axes.push_back(AxisRefName(*ref));
        continue;
      }
      axes.emplace_back(name);
    } while (Consume(','));
    if (!Consume('}')) return Error("expected ',' or '}' after a mesh axis name");
    return axes;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string AxisListText(const AxisList& axes) {
  return absl::StrCat("{", JoinAxes(axes, ","), "}");
}

}  // namespace

std::string_view ElementTypeName(ElementType type) { return Info(type).name; }
int64_t ElementBytes(ElementType type) { return Info(type).bytes; }

absl::StatusOr<ElementType> ParseElementType(std::string_view name) {
  for (const ElementInfo& info : kElements) {
    if (info.name == name) return info.type;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown element type '", Absl(name), "' (expected f32, f64, bf16, f16, i8, i32 or i64)"));
}

bool DistType::operator==(const DistType& other) const {
  if (element_type != other.element_type || dims != other.dims) return false;
  AxisList a = partial, b = other.partial;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

absl::StatusOr<DistType> ParseType(std::string_view text) { return TypeParser(text).Parse(); }

std::string ToString(const DistType& type) {
  std::string out = absl::StrCat(Absl(ElementTypeName(type.element_type)), "[");
  for (int i = 0; i < type.rank(); ++i) {
    if (i > 0) out += ",";
    absl::StrAppend(&out, type.dims[i].size);
    if (!type.dims[i].axes.empty()) out += AxisListText(type.dims[i].axes);
  }
  out += "]";
  if (!type.partial.empty()) absl::StrAppend(&out, " partial", AxisListText(type.partial));
  return out;
}

absl::Status Validate(const Mesh& mesh, const DistType& type) {
  // A default-constructed Mesh (the placeholder) has no axes and no devices.
  if (mesh.num_axes() == 0) return absl::InvalidArgumentError("the mesh has no axes");
  // Checked before anything prints the type: its name is looked up from the value.
  if (Find(type.element_type) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("element type value ",
                                                   static_cast<int>(type.element_type),
                                                   " is not a member of ElementType"));
  }
  // Runs on every type of every synthesized plan: messages are built only on failure.
  auto text = [&] { return ToString(type); };
  // Where an axis reference is used: dimension `dim`, or the partial list (dim < 0).
  auto where = [](int dim) {
    return dim < 0 ? std::string("partial") : absl::StrCat("dimension ", dim);
  };
  // Every use of each mesh axis (whole or a piece), to report overlaps naming both uses.
  struct Use {
    const AxisName* ref;
    int dim;
    Mesh::Digit digit;
  };
  absl::InlinedVector<Use, 8> uses;
  auto use_axis = [&](const AxisName& axis, int dim) -> absl::Status {
    // An axis of the mesh (a refined mesh's atoms are named like sub-axes) is looked up once.
    const int index = mesh.AxisIndex(axis);
    if (index < 0) {
      if (!IsSubAxisRef(axis)) {
        return absl::InvalidArgumentError(absl::StrCat("unknown mesh axis '", Absl(axis), "' in ",
                                                       where(dim), " of ", text(), " (mesh is ",
                                                       mesh.ToString(), ")"));
      }
      if (absl::Status s = mesh.CheckAxisRef(axis); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(s.message(), " in ", where(dim), " of ", text()));
      }
    }
    const Mesh::Digit digit =
        index >= 0 ? Mesh::Digit{index, 1, mesh.axes()[index].size} : mesh.Resolve(axis);
    for (const Use& use : uses) {
      if (use.digit.index != digit.index) continue;
      if (*use.ref == axis) {
        return absl::InvalidArgumentError(absl::StrCat("mesh axis '", Absl(axis),
                                                       "' is used twice in ", text(), " (",
                                                       where(use.dim), " and ", where(dim), ")"));
      }
      if (!Mesh::Compatible(use.digit, digit)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "mesh axis pieces '", Absl(*use.ref), "' (", where(use.dim), ") and '", Absl(axis), "' (",
            where(dim), ") overlap or do not nest in ", text(), " (axis '",
            mesh.axes()[digit.index].name, "' has size ", mesh.axes()[digit.index].size, ")"));
      }
    }
    uses.push_back(Use{&axis, dim, digit});
    return absl::OkStatus();
  };

  int64_t elements = 1;
  for (int i = 0; i < type.rank(); ++i) {
    const Dim& dim = type.dims[i];
    if (dim.size < 1) {
      return absl::InvalidArgumentError(absl::StrCat(where(i), " of ", text(), " has size ",
                                                     dim.size, "; sizes must be >= 1"));
    }
    int64_t shards = 1;
    for (const AxisName& axis : dim.axes) {
      if (absl::Status s = use_axis(axis, i); !s.ok()) return s;
      shards *= uses.back().digit.size;
    }
    if (dim.size % shards != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(i), " of ", text(), " has size ", dim.size, ", not divisible by ", shards,
          " (the product of mesh axes ", JoinAxes(dim.axes, ","), ")"));
    }
    if (elements > kInt64Max / dim.size) {
      return absl::InvalidArgumentError(
          absl::StrCat("global element count of ", text(), " overflows 64 bits"));
    }
    elements *= dim.size;
  }
  for (const AxisName& axis : type.partial) {
    if (absl::Status s = use_axis(axis, -1); !s.ok()) return s;
  }
  if (elements > kInt64Max / ElementBytes(type.element_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("global byte size of ", text(), " overflows 64 bits"));
  }
  // Byte accounting sums up to a few global sizes per device and step; keep it exact.
  const int64_t bytes = elements * ElementBytes(type.element_type);
  if (bytes > kMaxAccountedBytes / mesh.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        text(), " is too large: ", bytes, " bytes on each of up to ", mesh.num_devices(),
        " devices exceeds the 2^56-byte accounting limit"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DistType> ParseValidType(const Mesh& mesh, std::string_view text) {
  absl::StatusOr<DistType> type = ParseType(text);
  if (!type.ok()) return type.status();
  if (absl::Status s = Validate(mesh, *type); !s.ok()) return s;
  return Canonicalize(mesh, *type);
}

int64_t GlobalElements(const DistType& type) {
  int64_t elements = 1;
  for (const Dim& dim : type.dims) elements *= dim.size;
  return elements;
}

namespace {

int64_t LocalSize(const Mesh& mesh, const DistType& type, const Dim& dim) {
  if (dim.axes.empty()) return dim.size;
  const int64_t shards = mesh.GroupSize(dim.axes);
  // One division, not two (`%` and `/`): this runs on every local size the synthesizer
  // prices, and 64-bit division is slow.
  const int64_t local = dim.size / shards;
  RESHARD_CHECK(local * shards == dim.size) << "type " << ToString(type) << " is not valid";
  return local;
}

}  // namespace

std::vector<int64_t> LocalShape(const Mesh& mesh, const DistType& type) {
  std::vector<int64_t> shape;
  shape.reserve(type.dims.size());
  for (const Dim& dim : type.dims) shape.push_back(LocalSize(mesh, type, dim));
  return shape;
}

// Without LocalShape's vector: on the synthesizer's hot paths (LocalBytes).
int64_t LocalElements(const Mesh& mesh, const DistType& type) {
  int64_t elements = 1;
  for (const Dim& dim : type.dims) elements *= LocalSize(mesh, type, dim);
  return elements;
}

int64_t LocalBytes(const Mesh& mesh, const DistType& type) {
  return LocalElements(mesh, type) * ElementBytes(type.element_type);
}

bool SameLocalShape(const Mesh& mesh, const DistType& a, const DistType& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (LocalSize(mesh, a, a.dims[i]) != LocalSize(mesh, b, b.dims[i])) return false;
  }
  return true;
}

std::vector<int64_t> BlockIndex(const Mesh& mesh, const DistType& type, int64_t device) {
  std::vector<int64_t> block;
  block.reserve(type.dims.size());
  for (const Dim& dim : type.dims) block.push_back(mesh.IndexOver(device, dim.axes));
  return block;
}

std::vector<int64_t> BlockOffset(const Mesh& mesh, const DistType& type, int64_t device) {
  std::vector<int64_t> offset = BlockIndex(mesh, type, device);
  std::vector<int64_t> local = LocalShape(mesh, type);
  for (size_t i = 0; i < offset.size(); ++i) offset[i] *= local[i];
  return offset;
}

AxisList PartialInMeshOrder(const Mesh& mesh, const DistType& type) {
  AxisList axes = type.partial;
  // Mesh order, and within one axis major pieces (larger strides) first.
  std::sort(axes.begin(), axes.end(), [&](const AxisName& a, const AxisName& b) {
    const Mesh::Digit da = mesh.Resolve(a), db = mesh.Resolve(b);
    return da.index != db.index ? da.index < db.index : da.stride > db.stride;
  });
  return axes;
}

int64_t SummandIndex(const Mesh& mesh, const DistType& type, int64_t device) {
  return mesh.IndexOver(device, PartialInMeshOrder(mesh, type));
}

int64_t NumSummands(const Mesh& mesh, const DistType& type) {
  return mesh.GroupSize(type.partial);
}

int64_t SummandValue(int64_t element, int64_t summand, int64_t modulus) {
  RESHARD_CHECK(modulus >= 1) << "SummandValue needs a modulus of at least 1, got " << modulus;
  // A 64-bit finalizer (xor-shift-multiply rounds) over a combination of both indices: every
  // input bit affects every output bit, so neighbouring elements and summands look unrelated.
  uint64_t z = static_cast<uint64_t>(element) * 0x9e3779b97f4a7c15ull +
               static_cast<uint64_t>(summand) * 0xc2b2ae3d27d4eb4full;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return 1 + static_cast<int64_t>(z % static_cast<uint64_t>(modulus));
}

int64_t SummandSum(int64_t element, int64_t summands, int64_t modulus) {
  int64_t sum = 0;
  for (int64_t p = 0; p < summands; ++p) sum += SummandValue(element, p, modulus);
  return sum;
}

int AxisUse(const DistType& type, const AxisName& axis) {
  for (int i = 0; i < type.rank(); ++i) {
    if (ContainsAxis(type.dims[i].axes, axis)) return i;
  }
  if (ContainsAxis(type.partial, axis)) return kPartial;
  return kUnused;
}

}  // namespace reshard
