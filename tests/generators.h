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
#include <numeric>
#include <ostream>
#include <sstream>
#include <string>
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

inline std::string JoinNames(const std::vector<std::string>& names) {
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
    if (!type.dims[i].axes.empty()) out += "{" + JoinNames(type.dims[i].axes) + "}";
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
inline std::vector<std::string> AxesAt(const Mesh& mesh, const std::vector<Placement>& placement,
                                       int use) {
  std::vector<int> indices;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    if (placement[a].use == use) indices.push_back(a);
  }
  std::stable_sort(indices.begin(), indices.end(),
                   [&](int a, int b) { return placement[a].key < placement[b].key; });
  std::vector<std::string> names;
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

// Random (from, to) pairs. About 30% have partial sources. Half the targets are independent
// of the source; the other half are the source with 1-2 axes moved, which is where the
// interesting short plans (one all_to_all, a permute, a slice) live.
inline rc::Gen<ReshardCase> GenReshardCase() {
  return rc::gen::exec([] {
    ReshardCase c;
    c.mesh = *GenMesh();
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
  });
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
    const std::vector<std::string> dim_i = AxesAt(c.mesh, from, i);
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
    const std::vector<std::string> dim_d = AxesAt(c.mesh, from, d);
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

// ---------------------------------------------------------------------------------------------
// Running properties with an explicit case count.
//
// RC_GTEST_PROP takes its case count from RapidCheck's global configuration (RC_PARAMS,
// default 100), so CI would silently run 100 cases. RESHARD_PROP passes the count in the test
// parameters instead; RC_PARAMS can still raise it (max_success) or fix the seed, but never
// lower it below the suite's count. A failing case is reproducible with RC_PARAMS="reproduce=..."
// as usual because the test id has RC_GTEST_PROP's "Suite/Name" form.

// Tag that properties attach when the normal synthesizer returns NotFound.
inline constexpr char kNotFoundTag[] = "not_found";
// The largest fraction of cases that may end in NotFound before a property fails: NotFound
// must not become a silent way to pass.
inline constexpr double kMaxNotFoundFraction = 0.05;

template <typename Testable>
rc::detail::Distribution CheckProperty(Testable&& testable, int min_cases) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + std::string(info->name());
  metadata.description = info->name();
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::max(params.maxSuccess, min_cases);
  const rc::detail::TestResult result =
      rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  if (!result.template is<rc::detail::SuccessResult>()) {
    std::ostringstream message;
    rc::detail::printResultMessage(result, message);
    ADD_FAILURE() << message.str();
    return {};
  }
  const auto& success = result.template get<rc::detail::SuccessResult>();
  std::cout << "[ property ] " << metadata.id << ": " << success.numSuccess << " cases\n";
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
