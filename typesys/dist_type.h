// dist_type.h — distributed array types: element type, per-dimension mesh axes, partial sums.
//
// A type is written `f32[16{x,y},8] partial{z}` (DESIGN §2): dimension 0 (global size 16) is
// split over axes x then y (x major), dimension 1 is whole, and the value is the pending sum of
// the buffers along z. Axes the type does not mention are replicated. Wherever an axis may
// appear, so may a sub-axis `x:(m)k` (mesh.h, sub_axis.h): `f32[16{x:(1)2},8] partial{x:(2)2}`.
//
//   absl::StatusOr<reshard::DistType> t = reshard::ParseType("f32[16{x,y},8]");
//   absl::Status ok = reshard::Validate(mesh, *t);     // checks axes and divisibility
//   reshard::LocalShape(mesh, *t);                      // {2, 8} on mesh x=2,y=4
//   reshard::ToString(*t);                              // "f32[16{x,y},8]"
//
// Parsing is purely syntactic; every query that takes a Mesh requires a type that passed
// Validate against that mesh and aborts otherwise (internal invariant).
#ifndef RESHARD_TYPESYS_DIST_TYPE_H_
#define RESHARD_TYPESYS_DIST_TYPE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "typesys/mesh.h"

namespace reshard {

enum class ElementType { kF32, kF64, kBF16, kF16, kI8, kI32, kI64 };

// "f32", "f64", "bf16", "f16", "i8", "i32", "i64".
std::string_view ElementTypeName(ElementType type);
int64_t ElementBytes(ElementType type);
// InvalidArgument for anything but the names above.
absl::StatusOr<ElementType> ParseElementType(std::string_view name);

// One dimension: its global size and the mesh axes it is split over, major to minor.
struct Dim {
  int64_t size = 0;
  AxisList axes;

  bool operator==(const Dim&) const = default;
};

struct DistType {
  ElementType element_type = ElementType::kF32;
  std::vector<Dim> dims;
  // Axes of the pending sum. Their order carries no meaning: equality treats it as a set, and
  // the printer keeps the order it was given.
  AxisList partial;

  int rank() const { return static_cast<int>(dims.size()); }
  bool operator==(const DistType& other) const;
};

// Parses the text form. Whitespace between tokens is ignored; `8{}` means `8`; a missing or
// empty partial clause means no partial axes. InvalidArgument naming the position and what was
// expected, or a size that does not fit in 63 bits.
absl::StatusOr<DistType> ParseType(std::string_view text);

// Canonical text: `f32[16{x,y},8] partial{z}` (no spaces inside brackets, no empty braces, no
// partial clause when there are no partial axes). ParseType(ToString(t)) == t.
std::string ToString(const DistType& type);

// Global bytes times device count may not exceed this, so that byte metrics stay exact in 64
// bits for plans of up to 64 steps.
inline constexpr int64_t kMaxAccountedBytes = int64_t{1} << 56;

// Well-formedness against `mesh` (DESIGN §2). InvalidArgument with one message naming the
// problem: a mesh without axes, an element type outside ElementType, unknown axis, axis used
// twice, a sub-axis that does not fit its axis (Mesh::CheckAxisRef), pieces of one axis that
// overlap or do not nest (their strides must form a divisor chain), size < 1, size not
// divisible by its axes' product (naming the numbers), or a global byte size that overflows 64
// bits or exceeds kMaxAccountedBytes over the mesh.
absl::Status Validate(const Mesh& mesh, const DistType& type);

// ParseType followed by Validate; the result is in canonical form (sub_axis.h: adjacent pieces
// of one axis merged, e.g. `8{x:(1)2,x:(2)2}` reads as `8{x}` when x has size 4).
absl::StatusOr<DistType> ParseValidType(const Mesh& mesh, std::string_view text);

// --- Queries on a validated type. ---

// Global element count (product of dimension sizes; 1 for rank 0).
int64_t GlobalElements(const DistType& type);
// Per-dimension local size: size / product of the dimension's axis sizes.
std::vector<int64_t> LocalShape(const Mesh& mesh, const DistType& type);
int64_t LocalElements(const Mesh& mesh, const DistType& type);
int64_t LocalBytes(const Mesh& mesh, const DistType& type);
// LocalShape(mesh, a) == LocalShape(mesh, b), without building either (ranks may differ).
bool SameLocalShape(const Mesh& mesh, const DistType& a, const DistType& b);
// Device `device`'s block index per dimension (mixed radix of its coordinates over the axes).
std::vector<int64_t> BlockIndex(const Mesh& mesh, const DistType& type, int64_t device);
// Global index of device `device`'s first local element per dimension (block * local size).
std::vector<int64_t> BlockOffset(const Mesh& mesh, const DistType& type, int64_t device);
// Index of the summand `device` holds: mixed radix of its coordinates over the partial axes in
// mesh order (0 when the type has no partial axes).
int64_t SummandIndex(const Mesh& mesh, const DistType& type, int64_t device);
// Number of summands: product of the partial axes' sizes.
int64_t NumSummands(const Mesh& mesh, const DistType& type);
// The test value of summand `summand` of global element `element` in a source with several
// summands, pseudo-random in [1, modulus] (modulus >= 1): the data the reference interpreter
// and the MPI runtime check plans with (interp/interpreter.h, runtime/local_array.h). Values
// unrelated across summands make a wrong multiset of summands (one counted twice, another
// missing) sum to the right total only by a per-element coincidence, where values with a
// common pattern such as (e + 1)(p + 1) collide systematically (1 + 4 == 2 + 3).
int64_t SummandValue(int64_t element, int64_t summand, int64_t modulus);
// The sum of SummandValue(element, p, modulus) over the summands p = 0 .. summands - 1: the
// value a checker expects where all of them have been added up.
int64_t SummandSum(int64_t element, int64_t summands, int64_t modulus);
// The interpreter's modulus for SummandValue (and the MPI runtime's where its element type
// allows): with at most 2^24 summands every sum stays below 2^44, exact in a double.
inline constexpr int64_t kSummandModulus = int64_t{1} << 20;

// Where `axis` is used: the dimension index, kPartial, or kUnused.
inline constexpr int kPartial = -1;
inline constexpr int kUnused = -2;
int AxisUse(const DistType& type, const AxisName& axis);

// The partial axes sorted in mesh order (the canonical order for collectives over them).
AxisList PartialInMeshOrder(const Mesh& mesh, const DistType& type);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_DIST_TYPE_H_
