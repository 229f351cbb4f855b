// generators.h — RapidCheck generators for meshes, distributed types and resharding cases,
// plus a gtest harness that runs a property for an explicit number of cases.
//
// Shared by the property suites. Every generated type is valid on its mesh (DESIGN §2) and
// small: global elements x summands <= kMaxGlobalElements and devices x global elements <=
// kMaxDeviceElements, so the reference interpreter (which holds every device's buffer) stays
// fast even under ASan.
//
//   RESHARD_PROP(Synth, PlanIsCorrect, 1000) {
//     const ReshardCase c = *GenReshardCase();
//     ...RC_ASSERT(...);
//   }
//
// Generators build types through their own placement model (each mesh axis is unused,
// partial, or in one dimension, with a sort key that fixes the order inside the dimension),
// not through ParseType, so a parser bug cannot hide a generator bug or vice versa. For the
// same reason DebugString below prints without typesys's ToString: counterexamples stay
// readable even when the printer under test is wrong.
#ifndef RESHARD_TESTS_GENERATORS_H_
#define RESHARD_TESTS_GENERATORS_H_

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard::testing {

// Size budgets (see the file comment).
inline constexpr int64_t kMaxGlobalElements = 4096;
inline constexpr int64_t kMaxDeviceElements = int64_t{1} << 16;

inline const std::vector<ElementType> kAllElementTypes = {
    ElementType::kF32, ElementType::kF64, ElementType::kBF16, ElementType::kF16,
    ElementType::kI8,  ElementType::kI32, ElementType::kI64,
};

// ---------------------------------------------------------------------------------------------
// Printing independent of typesys (see the file comment).

inline std::string ElementTypeDebugName(ElementType type) {
  switch (type) {
    case ElementType::kF32:
      return "f32";
    case ElementType::kF64:
      return "f64";
    case ElementType::kBF16:
      return "bf16";
    case ElementType::kF16:
      return "f16";
    case ElementType::kI8:
      return "i8";
    case ElementType::kI32:
      return "i32";
    case ElementType::kI64:
      return "i64";
  }
  return "?";
}

inline std::string JoinNames(absl::Span<const AxisName> names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ",";
    out += names[i];
  }
  return out;
}

inline std::string DebugString(const Mesh& mesh) {
  std::string out;
  for (const MeshAxis& axis : mesh.axes()) {
    if (!out.empty()) out += ",";
    out += axis.name + "=" + std::to_string(axis.size);
  }
  return out;
}

inline std::string DebugString(const DistType& type) {
  std::string out = ElementTypeDebugName(type.element_type) + "[";
  for (size_t i = 0; i < type.dims.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(type.dims[i].size);
    // Appended piecewise: "{" + string trips GCC 12's -Wrestrict false positive.
    if (!type.dims[i].axes.empty()) out.append("{").append(JoinNames(type.dims[i].axes)) += "}";
  }
  out += "]";
  if (!type.partial.empty()) out += " partial{" + JoinNames(type.partial) + "}";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Placement model.

// Where one mesh axis goes in a type, and its order key among the axes placed with it.
inline constexpr int kUseUnused = -2;  // Same values as reshard::kUnused / kPartial.
inline constexpr int kUsePartial = -1;
struct Placement {
  int use = kUseUnused;  // kUseUnused, kUsePartial, or a dimension index.
  int key = 0;           // Axes of one dimension (or of partial) sort by (key, mesh index).
};

// The axes placed at `use`, ordered by (key, mesh index).
inline AxisList AxesAt(const Mesh& mesh, const std::vector<Placement>& placement, int use) {
  std::vector<int> indices;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (placement[a].use == use) indices.push_back(a);
  }
  std::stable_sort(indices.begin(), indices.end(),
                   [&](int a, int b) { return placement[a].key < placement[b].key; });
  AxisList names;
  for (int a : indices) names.push_back(mesh.axes()[a].name);
  return names;
}

// Product of the sizes of the axes placed at `use`.
inline int64_t ProductAt(const Mesh& mesh, const std::vector<Placement>& placement, int use) {
  int64_t product = 1;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (placement[a].use == use) product *= mesh.axes()[a].size;
  }
  return product;
}

inline DistType BuildType(const Mesh& mesh, ElementType element_type,
                          const std::vector<int64_t>& sizes,
                          const std::vector<Placement>& placement) {
  DistType type;
  type.element_type = element_type;
  for (int d = 0; d < static_cast<int>(sizes.size()); ++d) {
    type.dims.push_back(Dim{sizes[d], AxesAt(mesh, placement, d)});
  }
  type.partial = AxesAt(mesh, placement, kUsePartial);
  return type;
}

// Global sizes that make every placement in `placements` valid: per dimension the lcm of the
// axis products, times `factors[d]`.
inline std::vector<int64_t> SizesFor(const Mesh& mesh,
                                     const std::vector<std::vector<Placement>>& placements,
                                     const std::vector<int64_t>& factors) {
  std::vector<int64_t> sizes;
  for (int d = 0; d < static_cast<int>(factors.size()); ++d) {
    int64_t size = 1;
    for (const auto& placement : placements) size = std::lcm(size, ProductAt(mesh, placement, d));
    sizes.push_back(size * factors[d]);
  }
  return sizes;
}

// Whether types with these global sizes and summands fit the interpreter budget.
inline bool WithinBudget(const Mesh& mesh, const std::vector<int64_t>& sizes, int64_t summands) {
  int64_t elements = 1;
  for (int64_t s : sizes) elements *= s;
  return elements * summands <= kMaxGlobalElements &&
         elements * mesh.num_devices() <= kMaxDeviceElements;
}

// Shrinks `factors` and then unplaces axes (last placement first, highest axis first) until
// the sizes fit the budget. Deterministic, so shrinking stays stable; placements[0] keeps its
// partial axes (they only grow summands, which the budget already bounds via the mesh).
inline std::vector<int64_t> FitBudget(const Mesh& mesh,
                                      std::vector<std::vector<Placement>>& placements,
                                      std::vector<int64_t>& factors) {
  auto summands = [&] { return ProductAt(mesh, placements[0], kUsePartial); };
  std::vector<int64_t> sizes = SizesFor(mesh, placements, factors);
  for (size_t d = 0; d < factors.size() && !WithinBudget(mesh, sizes, summands()); ++d) {
    factors[d] = 1;
    sizes = SizesFor(mesh, placements, factors);
  }
  for (int p = static_cast<int>(placements.size()) - 1; p >= 0; --p) {
    for (int a = mesh.num_axes() - 1; a >= 0; --a) {
      if (WithinBudget(mesh, sizes, summands())) return sizes;
      if (placements[p][a].use >= 0) {
        placements[p][a].use = kUseUnused;
        sizes = SizesFor(mesh, placements, factors);
      }
    }
  }
  return sizes;
}

// ---------------------------------------------------------------------------------------------
// Generators.

// A uniform integer in [min, max) that shrinks towards min. rc::gen::inRange scales its range
// with RapidCheck's size, so early cases would draw only the smallest values (rank 0, every
// axis unused, from == to); the structure of a case should not depend on size.
template <typename T>
rc::Gen<T> InRange(T min, T max) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(min, max));
}

// Axis names: mostly x, y, z, w; sometimes longer identifiers so printers and parsers see
// digits, underscores and capitals.
inline rc::Gen<std::vector<std::string>> GenAxisNames(int count) {
  return rc::gen::exec([count] {
    static const std::vector<std::string> kShort = {"x", "y", "z", "w"};
    static const std::vector<std::string> kOdd = {"x1", "y_2", "data", "Model", "_p", "a0b"};
    if (*rc::gen::weightedElement<int>({{4, 0}, {1, 1}}) == 0) {
      return std::vector<std::string>(kShort.begin(), kShort.begin() + count);
    }
    std::vector<std::string> pool = kShort;
    pool.insert(pool.end(), kOdd.begin(), kOdd.end());
    std::vector<std::string> names;
    while (static_cast<int>(names.size()) < count) {
      std::string name = *rc::gen::elementOf(pool);
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return names;
  });
}

// A mesh with min_axes..max_axes axes of sizes 1..4.
inline rc::Gen<Mesh> GenMesh(int min_axes = 1, int max_axes = 4) {
  return rc::gen::exec([min_axes, max_axes] {
    const int count = *InRange(min_axes, max_axes + 1);
    const std::vector<std::string> names = *GenAxisNames(count);
    std::vector<MeshAxis> axes;
    for (int a = 0; a < count; ++a) {
      axes.push_back(MeshAxis{names[a], *InRange<int64_t>(1, 5)});
    }
    absl::StatusOr<Mesh> mesh = Mesh::Create(axes);
    RC_ASSERT(mesh.ok());  // The generator only builds valid meshes.
    return *mesh;
  });
}

// One axis's placement. Shrinks towards unused.
inline rc::Gen<Placement> GenPlacement(int rank, bool allow_partial) {
  return rc::gen::exec([rank, allow_partial] {
    Placement p;
    const int r = *InRange(0, 100);
    if (r < 25 || (rank == 0 && (r >= 40 || !allow_partial))) {
      p.use = kUseUnused;
    } else if (r < 40) {
      p.use = allow_partial ? kUsePartial : kUseUnused;
    } else {
      p.use = *InRange(0, rank);
    }
    p.key = *InRange(0, 8);
    return p;
  });
}

inline rc::Gen<std::vector<int64_t>> GenFactors(int rank) {
  return rc::gen::container<std::vector<int64_t>>(rank, InRange<int64_t>(1, 4));
}

// A mesh and a valid type on it.
struct MeshAndType {
  Mesh mesh;
  DistType type;
};

inline std::ostream& operator<<(std::ostream& os, const MeshAndType& c) {
  return os << "mesh " << DebugString(c.mesh) << " type " << DebugString(c.type);
}

// A random valid type on `mesh`: rank 0-4, any element type, each axis unused, partial or in
// one dimension (random order), each dimension's size its axes' product times 1-3.
inline rc::Gen<DistType> GenDistType(const Mesh& mesh, bool allow_partial = true) {
  return rc::gen::exec([mesh, allow_partial] {
    const int rank = *InRange(0, 5);
    const ElementType element_type = *rc::gen::elementOf(kAllElementTypes);
    std::vector<std::vector<Placement>> placements(1);
    for (int a = 0; a < mesh.num_axes(); ++a) {
      placements[0].push_back(*GenPlacement(rank, allow_partial));
    }
    std::vector<int64_t> factors = *GenFactors(rank);
    const std::vector<int64_t> sizes = FitBudget(mesh, placements, factors);
    return BuildType(mesh, element_type, sizes, placements[0]);
  });
}

inline rc::Gen<MeshAndType> GenMeshAndType() {
  return rc::gen::exec([] {
    MeshAndType c;
    c.mesh = *GenMesh();
    c.type = *GenDistType(c.mesh);
    return c;
  });
}

// A resharding problem: two valid types on one mesh with the same element type and global
// shape, and to.partial a subset of from.partial.
struct ReshardCase {
  Mesh mesh;
  DistType from;
  DistType to;
};

inline std::ostream& operator<<(std::ostream& os, const ReshardCase& c) {
  return os << "--mesh '" << DebugString(c.mesh) << "' --from '" << DebugString(c.from)
            << "' --to '" << DebugString(c.to) << "'";
}

// Placement for `to`'s axis given `from`'s: partial only where from is partial.
inline rc::Gen<Placement> GenTargetPlacement(int rank, const Placement& from) {
  return rc::gen::exec([rank, from] {
    if (from.use == kUsePartial && *rc::gen::weightedElement<int>({{2, 0}, {1, 1}}) == 1) {
      return Placement{kUsePartial, *InRange(0, 8)};
    }
    return *GenPlacement(rank, /*allow_partial=*/false);
  });
}

// Random (from, to) placements on `mesh` (drawn inside a generator). About 30% have partial
// sources. Half the targets are independent of the source; the other half are the source with
// 1-2 axes moved, which is where the interesting short plans (one all_to_all, a permute, a
// slice) live.
inline ReshardCase DrawReshardCaseOn(const Mesh& mesh) {
  ReshardCase c;
  c.mesh = mesh;
  const int n = c.mesh.num_axes();
  const int rank = *InRange(0, 5);
  const ElementType element_type = *rc::gen::elementOf(kAllElementTypes);
  const bool partial_source = *rc::gen::weightedElement<int>({{7, 0}, {3, 1}}) == 1;

  std::vector<std::vector<Placement>> placements(2);
  std::vector<Placement>& from = placements[0];
  for (int a = 0; a < n; ++a) from.push_back(*GenPlacement(rank, /*allow_partial=*/false));
  if (partial_source) {
    // At least one partial axis; others become partial with probability 1/3.
    from[*InRange(0, n)].use = kUsePartial;
    for (int a = 0; a < n; ++a) {
      if (*rc::gen::weightedElement<int>({{2, 0}, {1, 1}}) == 1) from[a].use = kUsePartial;
    }
  }

  std::vector<Placement>& to = placements[1];
  if (*rc::gen::element(0, 1) == 0) {
    for (int a = 0; a < n; ++a) to.push_back(*GenTargetPlacement(rank, from[a]));
  } else {
    to = from;
    const int edits = *InRange(1, 3);
    for (int e = 0; e < edits; ++e) {
      const int a = *InRange(0, n);
      // Retry a few times so the edit usually changes something (from == to is cheap).
      for (int attempt = 0; attempt < 3 && to[a].use == from[a].use; ++attempt) {
        to[a] = *GenTargetPlacement(rank, from[a]);
      }
    }
  }

  std::vector<int64_t> factors = *GenFactors(rank);
  const std::vector<int64_t> sizes = FitBudget(c.mesh, placements, factors);
  c.from = BuildType(c.mesh, element_type, sizes, from);
  c.to = BuildType(c.mesh, element_type, sizes, to);
  return c;
}

// Random (from, to) pairs on a random mesh (see DrawReshardCaseOn).
inline rc::Gen<ReshardCase> GenReshardCase() {
  return rc::gen::exec([] { return DrawReshardCaseOn(*GenMesh()); });
}

// Cases one all_to_all solves: a non-partial type, and the same type with a non-empty suffix
// of dimension i's axes moved to the end of dimension j != i.
inline rc::Gen<ReshardCase> GenSingleAllToAllCase() {
  return rc::gen::exec([] {
    ReshardCase c;
    c.mesh = *GenMesh();
    const int n = c.mesh.num_axes();
    const int rank = *InRange(2, 5);
    const ElementType element_type = *rc::gen::elementOf(kAllElementTypes);
    std::vector<std::vector<Placement>> placements(2);
    std::vector<Placement>& from = placements[0];
    for (int a = 0; a < n; ++a) from.push_back(*GenPlacement(rank, /*allow_partial=*/false));
    const int i = *InRange(0, rank);
    const int j_raw = *InRange(0, rank - 1);
    const int j = j_raw < i ? j_raw : j_raw + 1;
    // Dimension i needs at least one axis to move.
    if (AxesAt(c.mesh, from, i).empty()) {
      from[*InRange(0, n)] = Placement{i, 0};
    }
    const AxisList dim_i = AxesAt(c.mesh, from, i);
    const int suffix = *InRange<int>(1, static_cast<int>(dim_i.size()) + 1);
    int max_key_j = 0;
    for (const Placement& p : from) {
      if (p.use == j) max_key_j = std::max(max_key_j, p.key);
    }
    std::vector<Placement> to = from;
    for (size_t s = dim_i.size() - suffix; s < dim_i.size(); ++s) {
      // Keys above dimension j's keep the moved axes after its own, in their old order.
      to[c.mesh.AxisIndex(dim_i[s])] = Placement{j, max_key_j + 1 + static_cast<int>(s)};
    }
    placements[1] = to;
    std::vector<int64_t> factors = *GenFactors(rank);
    // Factors only: unplacing axes here could empty the moved suffix.
    for (auto& f : factors) {
      if (!WithinBudget(c.mesh, SizesFor(c.mesh, placements, factors), 1)) f = 1;
    }
    const std::vector<int64_t> sizes = SizesFor(c.mesh, placements, factors);
    c.from = BuildType(c.mesh, element_type, sizes, placements[0]);
    c.to = BuildType(c.mesh, element_type, sizes, placements[1]);
    return c;
  });
}

// Cases one collective_permute solves: a non-partial type with two or more axes in one
// dimension, and the same type with that dimension's axes in reverse order (same local shape,
// different blocks).
inline rc::Gen<ReshardCase> GenSinglePermuteCase() {
  return rc::gen::exec([] {
    ReshardCase c;
    c.mesh = *GenMesh(/*min_axes=*/2);
    const int n = c.mesh.num_axes();
    const int rank = *InRange(1, 5);
    const ElementType element_type = *rc::gen::elementOf(kAllElementTypes);
    std::vector<std::vector<Placement>> placements(2);
    std::vector<Placement>& from = placements[0];
    for (int a = 0; a < n; ++a) from.push_back(*GenPlacement(rank, /*allow_partial=*/false));
    const int d = *InRange(0, rank);
    const int a = *InRange(0, n);
    const int b_raw = *InRange(0, n - 1);
    const int b = b_raw < a ? b_raw : b_raw + 1;
    from[a].use = d;
    from[b].use = d;
    const AxisList dim_d = AxesAt(c.mesh, from, d);
    std::vector<Placement> to = from;
    for (size_t s = 0; s < dim_d.size(); ++s) {
      to[c.mesh.AxisIndex(dim_d[s])] = Placement{d, static_cast<int>(dim_d.size() - s)};
    }
    placements[1] = to;
    std::vector<int64_t> factors = *GenFactors(rank);
    for (auto& f : factors) {
      if (!WithinBudget(c.mesh, SizesFor(c.mesh, placements, factors), 1)) f = 1;
    }
    const std::vector<int64_t> sizes = SizesFor(c.mesh, placements, factors);
    c.from = BuildType(c.mesh, element_type, sizes, placements[0]);
    c.to = BuildType(c.mesh, element_type, sizes, placements[1]);
    return c;
  });
}

// Pure moves (every axis splits a dimension of both types, no pending sum): 1-3 axes whose
// sizes are powers of 2 (2, 4, 8), powers of 3 (3, 9) or mixed (2, 3, 4, 6), at most 32
// devices; rank 1-3, each type placing every axis in a random dimension and order. The first
// two families are those the pure-move solver answers (synth/pure_move.h).
inline rc::Gen<Mesh> GenPureMoveMesh() {
  return rc::gen::exec([] {
    static const std::vector<std::vector<int64_t>> kSizes = {{2, 4, 8}, {3, 9}, {2, 3, 4, 6}};
    const std::vector<int64_t>& family =
        kSizes[*rc::gen::weightedElement<size_t>({{6, 0}, {2, 1}, {2, 2}})];
    const int count = *InRange(1, 4);
    const std::vector<std::string> names = *GenAxisNames(count);
    std::vector<int64_t> sizes;
    for (int a = 0; a < count; ++a) sizes.push_back(*rc::gen::elementOf(family));
    // Deterministic shrink to 32 devices: later axes fall to the family's smallest size.
    for (int a = count - 1; a >= 0; --a) {
      int64_t devices = 1;
      for (int64_t s : sizes) devices *= s;
      if (devices > 32) sizes[a] = family[0];
    }
    std::vector<MeshAxis> axes;
    for (int a = 0; a < count; ++a) axes.push_back(MeshAxis{names[a], sizes[a]});
    absl::StatusOr<Mesh> mesh = Mesh::Create(axes);
    RC_ASSERT(mesh.ok());
    return *mesh;
  });
}

// A pure move on `mesh`: both types split every axis of it over some dimension.
inline ReshardCase DrawPureMoveOn(const Mesh& mesh) {
  ReshardCase c;
  c.mesh = mesh;
  const int rank = *InRange(1, 4);
  std::vector<std::vector<Placement>> placements(2);
  for (std::vector<Placement>& placement : placements) {
    for (int a = 0; a < mesh.num_axes(); ++a) {
      placement.push_back(Placement{*InRange(0, rank), *InRange(0, 8)});
    }
  }
  std::vector<int64_t> factors = *GenFactors(rank);
  // With factors 1 the sizes always fit: each dimension is at most the lcm of its two axis
  // products, whose products over the dimensions are the device count.
  if (!WithinBudget(c.mesh, SizesFor(c.mesh, placements, factors), 1)) {
    factors.assign(rank, 1);
  }
  const std::vector<int64_t> global = SizesFor(c.mesh, placements, factors);
  const ElementType element_type = *rc::gen::elementOf(kAllElementTypes);
  c.from = BuildType(c.mesh, element_type, global, placements[0]);
  c.to = BuildType(c.mesh, element_type, global, placements[1]);
  return c;
}

inline rc::Gen<ReshardCase> GenPureMoveCase() {
  return rc::gen::exec([] { return DrawPureMoveOn(*GenPureMoveMesh()); });
}

// ---------------------------------------------------------------------------------------------
// Sub-axes (typesys/sub_axis.h).
//
// A sub-axis case lives on a mesh with composite axis sizes (4, 6, 8). For every mesh axis x of
// size n the generator picks a divisor chain 1 = b_0 | b_1 | ... | b_r = n; its atoms are the
// pieces x:(b_j)(b_{j+1}/b_j) (just `x` when r = 1). The placement model above then runs on
// the *atom mesh* (one axis per atom, named by its reference, in mesh order, major to minor),
// so sizes and budgets are computed as for whole axes, and the types it builds name atoms,
// which are valid references on the user's mesh. Pieces of one axis in one type therefore
// never overlap, and all pieces of a case (from and to) lie on one chain, so they nest.
// Finally runs of consecutive atoms of one axis that are adjacent in a list are merged at
// random (`x:(1)2,x:(2)2` -> `x`), so the generated types come both canonical and not.
// Everything here is computed from the chains, without typesys's sub-axis code, so the
// properties can use it as an independent oracle (SubAxisCanonical, PieceDigit).

// Atom `ref` of a SubAxisMesh: the piece of mesh axis `axis` between breakpoints begin | end
// (the reference x:(begin)(end/begin)).
struct Piece {
  int axis = 0;
  int64_t begin = 1;
  int64_t end = 1;
};

struct SubAxisMesh {
  Mesh mesh;                 // The user's mesh.
  Mesh atoms;                // One axis per atom; same device count and numbering.
  std::vector<Piece> pieces;  // Per axis of `atoms`.
};

inline std::ostream& operator<<(std::ostream& os, const SubAxisMesh& m) {
  return os << "mesh " << DebugString(m.mesh) << " atoms " << DebugString(m.atoms);
}

// The reference naming piece [begin, end) of axis `axis`: `x` for the whole axis (or, when
// `spell_whole`, `x:(1)n`, which is valid and canonicalizes to `x`), else `x:(begin)(k)`.
inline std::string PieceName(const Mesh& mesh, const Piece& p, bool spell_whole = false) {
  const MeshAxis& axis = mesh.axes()[p.axis];
  if (p.begin == 1 && p.end == axis.size && !spell_whole) return axis.name;
  return axis.name + ":(" + std::to_string(p.begin) + ")" + std::to_string(p.end / p.begin);
}

// The coordinate of `device` on piece `p` (mesh.h: the middle digit group of the axis
// coordinate, (c / (n / end)) % (end / begin)), from row-major numbering computed here.
inline int64_t PieceDigit(const Mesh& mesh, const Piece& p, int64_t device) {
  int64_t coordinate = 0;
  for (int a = mesh.num_axes() - 1; a >= 0; --a) {
    const int64_t size = mesh.axes()[a].size;
    if (a == p.axis) coordinate = device % size;
    device /= size;
  }
  const int64_t n = mesh.axes()[p.axis].size;
  return (coordinate / (n / p.end)) % (p.end / p.begin);
}

// A mesh with 1-3 axes of sizes in {1, 2, 3, 4, 6, 8}, at least one of them composite (4, 6
// or 8), and at most 64 devices.
inline rc::Gen<Mesh> GenCompositeMesh() {
  return rc::gen::exec([] {
    const int count = *InRange(1, 4);
    const std::vector<std::string> names = *GenAxisNames(count);
    std::vector<int64_t> sizes;
    for (int a = 0; a < count; ++a) {
      sizes.push_back(*rc::gen::weightedElement<int64_t>(
          {{1, 1}, {2, 2}, {3, 1}, {4, 3}, {6, 3}, {8, 3}}));
    }
    auto composite = [](int64_t s) { return s == 4 || s == 6 || s == 8; };
    int keep = -1;
    for (int a = 0; a < count && keep < 0; ++a) {
      if (composite(sizes[a])) keep = a;
    }
    if (keep < 0) {
      keep = *InRange(0, count);
      sizes[keep] = *rc::gen::element<int64_t>(4, 6, 8);
    }
    // Deterministic shrink to 64 devices; the first composite axis stays.
    auto devices = [&] {
      int64_t product = 1;
      for (int64_t s : sizes) product *= s;
      return product;
    };
    for (int a = count - 1; a >= 0; --a) {
      while (a != keep && devices() > 64 && sizes[a] > 1) {
        sizes[a] /= sizes[a] % 2 == 0 ? 2 : 3;
      }
    }
    std::vector<MeshAxis> axes;
    for (int a = 0; a < count; ++a) axes.push_back(MeshAxis{names[a], sizes[a]});
    absl::StatusOr<Mesh> mesh = Mesh::Create(axes);
    RC_ASSERT(mesh.ok());
    return *mesh;
  });
}

// A divisor chain 1 = b_0 | b_1 | ... | b_r = n with b_{j+1} > b_j. Shrinks towards {1, n}.
inline rc::Gen<std::vector<int64_t>> GenDivisorChain(int64_t n) {
  return rc::gen::exec([n] {
    std::vector<int64_t> chain = {1};
    while (chain.back() < n) {
      const int64_t rest = n / chain.back();
      std::vector<int64_t> factors;  // Divisors of rest above 1, largest first.
      for (int64_t q = rest; q > 1; --q) {
        if (rest % q == 0) factors.push_back(q);
      }
      chain.push_back(chain.back() * *rc::gen::elementOf(factors));
    }
    return chain;
  });
}

// The atom mesh of `mesh` for one divisor chain per axis.
inline SubAxisMesh MakeSubAxisMesh(const Mesh& mesh,
                                   const std::vector<std::vector<int64_t>>& chains) {
  SubAxisMesh m;
  m.mesh = mesh;
  std::vector<MeshAxis> axes;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const std::vector<int64_t>& chain = chains[a];
    for (size_t j = 0; j + 1 < chain.size(); ++j) {
      const Piece p{a, chain[j], chain[j + 1]};
      m.pieces.push_back(p);
      axes.push_back(MeshAxis{PieceName(mesh, p), p.end / p.begin});
    }
    if (chain.size() == 1) {  // Size-1 axis: one atom, the axis itself.
      m.pieces.push_back(Piece{a, 1, 1});
      axes.push_back(MeshAxis{mesh.axes()[a].name, 1});
    }
  }
  absl::StatusOr<Mesh> atoms = Mesh::Create(axes);
  RC_ASSERT(atoms.ok());
  m.atoms = *atoms;
  return m;
}

// A composite mesh and a random divisor chain (refinement) of each axis.
inline rc::Gen<SubAxisMesh> GenSubAxisMesh() {
  return rc::gen::exec([] {
    const Mesh mesh = *GenCompositeMesh();
    std::vector<std::vector<int64_t>> chains;
    for (const MeshAxis& axis : mesh.axes()) chains.push_back(*GenDivisorChain(axis.size));
    return MakeSubAxisMesh(mesh, chains);
  });
}

// The piece a reference of `m` denotes: an atom, or a merged run written by MergeRuns.
inline Piece PieceOf(const SubAxisMesh& m, const AxisName& ref) {
  for (const Piece& p : m.pieces) {
    if (PieceName(m.mesh, p) == ref) return p;
  }
  for (int a = 0; a < m.mesh.num_axes(); ++a) {
    const MeshAxis& axis = m.mesh.axes()[a];
    if (ref == axis.name) return Piece{a, 1, axis.size};
    const std::string prefix = axis.name + ":(";
    const std::string text = ref.str();
    if (text.rfind(prefix, 0) != 0) continue;
    const size_t close = text.find(')', prefix.size());
    const int64_t begin = std::stoll(text.substr(prefix.size(), close - prefix.size()));
    const int64_t size = std::stoll(text.substr(close + 1));
    return Piece{a, begin, begin * size};
  }
  RC_FAIL("generator: unknown piece " + ref.str());
  return Piece{};
}

// Merges runs of consecutive pieces of one axis (major first) that are adjacent in `refs`:
// each possible merge happens when `merge()` says so. `spell_whole()` picks `x:(1)n` over `x`
// for a merged piece that covers its whole axis.
template <typename MergeFn, typename SpellFn>
AxisList MergeRuns(const SubAxisMesh& m, const AxisList& refs, MergeFn merge, SpellFn spell_whole) {
  AxisList out;
  std::vector<Piece> run;  // The piece being built; empty before the first reference.
  auto flush = [&] {
    if (run.empty()) return;
    const Piece& p = run[0];
    const bool whole = p.begin == 1 && p.end == m.mesh.axes()[p.axis].size;
    out.push_back(PieceName(m.mesh, p, whole && run.size() > 1 && spell_whole()));
    run.clear();
  };
  for (const AxisName& ref : refs) {
    const Piece p = PieceOf(m, ref);
    if (!run.empty() && run[0].axis == p.axis && run[0].end == p.begin && merge()) {
      run[0].end = p.end;
      run.push_back(p);  // Only the count matters (a merged piece).
      continue;
    }
    flush();
    run.push_back(p);
  }
  flush();
  return out;
}

// `type` (whose references are pieces of `m`) with adjacent runs merged at random, and (with
// `spell_whole`) now and then a merged whole axis spelled `x:(1)n`.
inline DistType MergeRandomly(const SubAxisMesh& m, const DistType& type,
                              bool spell_whole_axes = false) {
  auto merge = [] { return *InRange(0, 3) > 0; };
  auto spell_whole = [spell_whole_axes] { return spell_whole_axes && *InRange(0, 6) == 0; };
  DistType out = type;
  for (Dim& dim : out.dims) dim.axes = MergeRuns(m, dim.axes, merge, spell_whole);
  out.partial = MergeRuns(m, out.partial, merge, spell_whole);
  return out;
}

// The canonical form sub_axis.h promises, computed from the pieces: every adjacent run in a
// dimension merged; the partial pieces merged as a set (sorted by axis and position first).
inline DistType SubAxisCanonical(const SubAxisMesh& m, const DistType& type) {
  auto always = [] { return true; };
  auto never = [] { return false; };
  DistType out = type;
  for (Dim& dim : out.dims) dim.axes = MergeRuns(m, dim.axes, always, never);
  AxisList partial = out.partial;
  std::sort(partial.begin(), partial.end(), [&](const AxisName& a, const AxisName& b) {
    const Piece pa = PieceOf(m, a), pb = PieceOf(m, b);
    return std::pair(pa.axis, pa.begin) < std::pair(pb.axis, pb.begin);
  });
  out.partial = MergeRuns(m, partial, always, never);
  return out;
}

// True when some reference is written as a sub-axis.
inline bool NamesSubAxes(const DistType& type) {
  auto sub = [](const AxisName& ref) { return IsSubAxisRef(ref); };
  for (const Dim& dim : type.dims) {
    if (std::any_of(dim.axes.begin(), dim.axes.end(), sub)) return true;
  }
  return std::any_of(type.partial.begin(), type.partial.end(), sub);
}

// A composite mesh, its atoms and a valid type whose references are pieces (see above).
struct SubAxisTypeCase {
  SubAxisMesh axes;
  DistType atom_type;  // On atom names only (before merging).
  DistType type;       // atom_type with runs merged at random.
};

inline std::ostream& operator<<(std::ostream& os, const SubAxisTypeCase& c) {
  return os << c.axes << " type " << DebugString(c.type) << " (atoms "
            << DebugString(c.atom_type) << ")";
}

inline rc::Gen<SubAxisTypeCase> GenSubAxisType(bool spell_whole_axes = false) {
  return rc::gen::exec([spell_whole_axes] {
    SubAxisTypeCase c;
    c.axes = *GenSubAxisMesh();
    c.atom_type = *GenDistType(c.axes.atoms);
    c.type = MergeRandomly(c.axes, c.atom_type, spell_whole_axes);
    return c;
  });
}

// A resharding problem on a composite mesh whose types name pieces of one chain per axis
// (DrawReshardCaseOn on the atom mesh, then random merges in each type independently).
struct SubAxisReshardCase {
  SubAxisMesh axes;
  ReshardCase c;  // On axes.mesh.
};

inline std::ostream& operator<<(std::ostream& os, const SubAxisReshardCase& s) {
  return os << s.c << "  (atoms " << DebugString(s.axes.atoms) << ")";
}

inline rc::Gen<SubAxisReshardCase> GenSubAxisReshardCase() {
  return rc::gen::exec([] {
    SubAxisReshardCase s;
    s.axes = *GenSubAxisMesh();
    const ReshardCase on_atoms = DrawReshardCaseOn(s.axes.atoms);
    s.c.mesh = s.axes.mesh;
    // Any spelling, whole axes as `x:(1)n` included: the library must not depend on it.
    s.c.from = MergeRandomly(s.axes, on_atoms.from, /*spell_whole_axes=*/true);
    s.c.to = MergeRandomly(s.axes, on_atoms.to, /*spell_whole_axes=*/true);
    return s;
  });
}

// A pure move on a GenPureMoveMesh whose types split its prime factors (the chain of every
// axis ascending primes, as the prime-factor refinement orders them), merged at random: the
// types name sub-axes such as `x:(1)2` of x=4 where a run of atoms stays unmerged.
inline rc::Gen<ReshardCase> GenSubAxisPureMoveCase() {
  return rc::gen::exec([] {
    const Mesh mesh = *GenPureMoveMesh();
    std::vector<std::vector<int64_t>> chains;
    for (const MeshAxis& axis : mesh.axes()) {
      std::vector<int64_t> chain = {1};
      for (int64_t rest = axis.size, q = 2; rest > 1;) {
        if (rest % q != 0) {
          ++q;
          continue;
        }
        chain.push_back(chain.back() * q);
        rest /= q;
      }
      chains.push_back(chain);
    }
    const SubAxisMesh m = MakeSubAxisMesh(mesh, chains);
    const ReshardCase on_atoms = DrawPureMoveOn(m.atoms);
    ReshardCase c;
    c.mesh = mesh;
    c.from = MergeRandomly(m, on_atoms.from, /*spell_whole_axes=*/true);
    c.to = MergeRandomly(m, on_atoms.to, /*spell_whole_axes=*/true);
    return c;
  });
}

// ---------------------------------------------------------------------------------------------
// Running properties with an explicit case count.
//
// RC_GTEST_PROP takes its case count from RapidCheck's global configuration (RC_PARAMS,
// default 100), so CI would silently run 100 cases. RESHARD_PROP passes the count in the test
// parameters instead; RC_PARAMS can still raise it (max_success) or fix the seed, but never
// lower it below the suite's count. A failing case is reproducible with RC_PARAMS="reproduce=..."
// as usual because the test id has RC_GTEST_PROP's "Suite/Name" form.
//
// Seeds. RapidCheck draws a random seed per run, so a property with a rare counterexample
// would make CI pass or fail by luck. By default each property therefore runs from a fixed
// seed derived from its id (the same cases on every run and machine); exploration is explicit:
//   RESHARD_PROPERTY_SEED=random   RapidCheck's random seed (scripts/explore_properties.sh)
//   RESHARD_PROPERTY_SEED=<n>      the fixed seeds of base <n> instead of 0
//   RC_PARAMS="seed=<s>"           seed <s> for every property (RapidCheck's own key; wins)
// The seed is printed with each property's result and failure.

// Tag that properties attach when the normal synthesizer returns NotFound.
inline constexpr char kNotFoundTag[] = "not_found";
// The largest fraction of cases that may end in NotFound before a property fails: NotFound
// must not become a silent way to pass.
inline constexpr double kMaxNotFoundFraction = 0.05;

// The seed a property runs from under the policy above (nullopt: RapidCheck's own, random or
// from RC_PARAMS). FNV-1a over the id, so the seeds do not depend on the standard library.
inline std::optional<uint64_t> PropertySeed(const std::string& id) {
  const char* rc_params = std::getenv("RC_PARAMS");
  if (rc_params != nullptr && std::string_view(rc_params).find("seed=") != std::string_view::npos) {
    return std::nullopt;
  }
  const char* policy = std::getenv("RESHARD_PROPERTY_SEED");
  uint64_t base = 0;
  if (policy != nullptr && *policy != '\0') {
    if (std::string_view(policy) == "random") return std::nullopt;
    char* end = nullptr;
    base = std::strtoull(policy, &end, 10);
    if (*end != '\0') {
      ADD_FAILURE() << "RESHARD_PROPERTY_SEED must be 'random' or a number, not '" << policy << "'";
    }
  }
  uint64_t hash = 14695981039346656037ull ^ base;
  for (const char c : id) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

template <typename Testable>
rc::detail::Distribution CheckProperty(Testable&& testable, int min_cases) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + std::string(info->name());
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(params.maxSuccess, min_cases);
  if (const std::optional<uint64_t> seed = PropertySeed(metadata.id)) params.seed = *seed;
  const rc::detail::TestResult result =
      rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  if (!result.template is<rc::detail::SuccessResult>()) {
    std::ostringstream message;
    rc::detail::printResultMessage(result, message);
    ADD_FAILURE() << "[ property ] " << metadata.id << " (seed=" << params.seed << ")\n"
                  << message.str();
    return {};
  }
  const auto& success = result.template get<rc::detail::SuccessResult>();
  std::cout << "[ property ] " << metadata.id << ": " << success.numSuccess
            << " cases (seed=" << params.seed << ")\n";
  if (!success.distribution.empty()) {
    rc::detail::printResultMessage(result, std::cout);
    std::cout << std::endl;
  }
  EXPECT_GE(success.numSuccess, min_cases);
  int not_found = 0;
  for (const auto& [tags, count] : success.distribution) {
    if (std::find(tags.begin(), tags.end(), kNotFoundTag) != tags.end()) not_found += count;
  }
  EXPECT_LE(not_found, kMaxNotFoundFraction * success.numSuccess)
      << not_found << " of " << success.numSuccess
      << " cases ended in NotFound; the synthesizer gives up too often";
  return success.distribution;
}

}  // namespace reshard::testing

// Defines a gtest TEST(Suite, Name) that checks the property body (no arguments; draw values
// with *gen inside) on at least `cases` random cases.
#define RESHARD_PROP(Suite, Name, cases)                                                           \
  static void ReshardProp_##Suite##_##Name();                                                      \
  TEST(Suite, Name) { ::reshard::testing::CheckProperty(&ReshardProp_##Suite##_##Name, (cases)); } \
  static void ReshardProp_##Suite##_##Name()

#endif  // RESHARD_TESTS_GENERATORS_H_
