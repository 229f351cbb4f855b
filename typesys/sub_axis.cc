#include "typesys/sub_axis.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"

namespace reshard {
namespace {

// The reference text of a digit group of `mesh` (the inverse of Mesh::Resolve).
std::string DigitName(const Mesh& mesh, const Mesh::Digit& d) {
  const MeshAxis& axis = mesh.axes()[d.index];
  if (d.size == axis.size) return axis.name;
  return SubAxisName(axis.name, axis.size / (d.stride * d.size), d.size);
}

// `minor` continues `major` towards the minor end of the same axis.
bool Continues(const Mesh::Digit& major, const Mesh::Digit& minor) {
  return major.index == minor.index && minor.stride * minor.size == major.stride;
}

Mesh::Digit Merge(const Mesh::Digit& major, const Mesh::Digit& minor) {
  return Mesh::Digit{major.index, minor.stride, major.size * minor.size};
}

bool IsPiece(const Mesh& mesh, std::string_view axis) {
  return IsSubAxisRef(axis) && !mesh.HasAxis(axis);
}

// Appends the references of `axes` that are pieces of `mesh`'s axes to `out`.
void AppendSubAxes(const Mesh& mesh, absl::Span<const AxisName> axes, AxisList* out) {
  for (const AxisName& axis : axes) {
    if (IsPiece(mesh, axis)) out->push_back(axis);
  }
}

bool AnySubAxis(const Mesh& mesh, absl::Span<const AxisName> axes) {
  return std::any_of(axes.begin(), axes.end(),
                     [&](const AxisName& a) { return IsPiece(mesh, a); });
}

// CanonicalAxisList of a list with some sub-axis.
AxisList MergedPieces(const Mesh& mesh, absl::Span<const AxisName> axes) {
  std::vector<Mesh::Digit> digits;
  for (const AxisName& axis : axes) {
    const Mesh::Digit d = mesh.Resolve(axis);
    if (!digits.empty() && Continues(digits.back(), d)) {
      digits.back() = Merge(digits.back(), d);
    } else {
      digits.push_back(d);
    }
  }
  AxisList out;
  out.reserve(digits.size());
  for (const Mesh::Digit& d : digits) out.push_back(DigitName(mesh, d));
  return out;
}

// Makes `axes` canonical in place; a list without sub-axes is canonical already and is left
// as it is, not rebuilt.
void CanonicalizeList(const Mesh& mesh, AxisList& axes) {
  if (AnySubAxis(mesh, axes)) axes = MergedPieces(mesh, axes);
}

// The atoms of `axis` between its breakpoints `b` (1 = b_0 | b_1 | ... = size): the piece
// (b_j)(b_{j+1}/b_j) each, named by the axis alone when it is one atom.
void AppendAtomsBetween(const MeshAxis& axis, const std::vector<int64_t>& b,
                        std::vector<MeshAxis>& atoms) {
  for (size_t j = 0; j + 1 < b.size(); ++j) {
    const int64_t size = b[j + 1] / b[j];
    atoms.push_back(MeshAxis{b.size() == 2 ? axis.name : SubAxisName(axis.name, b[j], size), size});
  }
}

void AppendPrimeFactors(int64_t n, std::vector<int64_t>* out) {
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      out->push_back(p);
      n /= p;
    }
  }
  if (n > 1) out->push_back(n);
}

}  // namespace

bool HasPrimeAxes(const Mesh& mesh) {
  for (const MeshAxis& axis : mesh.axes()) {
    for (int64_t f = 2; f * f <= axis.size; ++f) {
      if (axis.size % f == 0) return false;
    }
  }
  return true;
}

AxisList CanonicalAxisList(const Mesh& mesh, absl::Span<const AxisName> axes) {
  if (!AnySubAxis(mesh, axes)) return AxisList(axes.begin(), axes.end());
  return MergedPieces(mesh, axes);
}

DistType Canonicalize(const Mesh& mesh, DistType type) {
  for (Dim& dim : type.dims) CanonicalizeList(mesh, dim.axes);
  if (!AnySubAxis(mesh, type.partial)) return type;
  // A set: merge any two adjacent pieces of one axis, keeping the first one's position.
  std::vector<Mesh::Digit> digits;
  for (const AxisName& axis : type.partial) digits.push_back(mesh.Resolve(axis));
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < digits.size() && !merged; ++i) {
      for (size_t j = 0; j < digits.size() && !merged; ++j) {
        if (i == j || !Continues(digits[i], digits[j])) continue;
        digits[std::min(i, j)] = Merge(digits[i], digits[j]);
        digits.erase(digits.begin() + std::max(i, j));
        merged = true;
      }
    }
  }
  type.partial.clear();
  for (const Mesh::Digit& d : digits) type.partial.push_back(DigitName(mesh, d));
  return type;
}

Collective Canonicalize(const Mesh& mesh, Collective op) {
  CanonicalizeList(mesh, op.mesh_axes);
  return op;
}

bool HasSubAxes(const Mesh& mesh, const DistType& type) {
  if (AnySubAxis(mesh, type.partial)) return true;
  return std::any_of(type.dims.begin(), type.dims.end(),
                     [&](const Dim& dim) { return AnySubAxis(mesh, dim.axes); });
}

bool HasSubAxes(const Mesh& mesh, const Collective& op) { return AnySubAxis(mesh, op.mesh_axes); }

bool HasSubAxes(const Mesh& mesh, const DistType& source, absl::Span<const Step> steps) {
  if (HasSubAxes(mesh, source)) return true;
  return std::any_of(steps.begin(), steps.end(), [&](const Step& step) {
    return HasSubAxes(mesh, step.op) || HasSubAxes(mesh, step.type);
  });
}

AxisList SubAxisRefs(const Mesh& mesh, const DistType& type) {
  AxisList refs;
  for (const Dim& dim : type.dims) AppendSubAxes(mesh, dim.axes, &refs);
  AppendSubAxes(mesh, type.partial, &refs);
  return refs;
}

AxisList SubAxisRefs(const Mesh& mesh, const DistType& from, const DistType& to) {
  AxisList refs = SubAxisRefs(mesh, from);
  AxisList more = SubAxisRefs(mesh, to);
  refs.insert(refs.end(), more.begin(), more.end());
  return refs;
}

AxisList SubAxisRefs(const Mesh& mesh, const DistType& source, absl::Span<const Step> steps) {
  AxisList refs = SubAxisRefs(mesh, source);
  for (const Step& step : steps) {
    AppendSubAxes(mesh, step.op.mesh_axes, &refs);
    AxisList more = SubAxisRefs(mesh, step.type);
    refs.insert(refs.end(), more.begin(), more.end());
  }
  return refs;
}

AxisList SubAxisRefs(const Plan& plan) {
  AxisList refs = SubAxisRefs(plan.mesh, plan.source, plan.steps);
  const AxisList target_refs = SubAxisRefs(plan.mesh, plan.target);
  refs.insert(refs.end(), target_refs.begin(), target_refs.end());
  return refs;
}

absl::StatusOr<AxisRefinement> AxisRefinement::Create(const Mesh& mesh,
                                                      absl::Span<const AxisName> refs,
                                                      bool prime_factors) {
  AxisRefinement r;
  r.mesh_ = mesh;
  if (refs.empty() && (!prime_factors || HasPrimeAxes(mesh))) {
    // Nothing to split: the mesh itself, each axis one atom (what the general path builds,
    // without its per-axis sorting and a second mesh).
    r.refined_ = mesh;
    for (const MeshAxis& axis : mesh.axes()) r.breakpoints_.push_back({1, axis.size});
    return r;
  }
  std::vector<MeshAxis> atoms;
  std::vector<int64_t> factors;
  if (refs.empty()) {
    // Every axis split into its prime factors, ascending (the finest refinement, which every
    // normal and optimal call builds): what the general path below builds from the single
    // interval 1 | size, without its breakpoint lists.
    r.breakpoints_.resize(mesh.num_axes());
    for (int a = 0; a < mesh.num_axes(); ++a) {
      const MeshAxis& axis = mesh.axes()[a];
      std::vector<int64_t>& b = r.breakpoints_[a];
      factors.clear();
      AppendPrimeFactors(axis.size, &factors);
      b.reserve(factors.size() + 1);
      b.push_back(1);
      for (int64_t f : factors) b.push_back(b.back() * f);
      if (factors.empty()) b.push_back(1);  // A size-1 axis stays one atom.
      AppendAtomsBetween(axis, b, atoms);
    }
    r.refined_ = Mesh::FromAtoms(std::move(atoms), mesh.num_devices());
    return r;
  }
  // Per axis: breakpoint -> the reference that introduced it (for error messages).
  std::vector<std::vector<std::pair<int64_t, std::string_view>>> points(mesh.num_axes());
  for (auto ref_it = refs.begin(); ref_it != refs.end(); ++ref_it) {
    const AxisName& ref = *ref_it;
    // A repeat adds the same breakpoints (plans list each piece once per step that names it).
    if (std::find(refs.begin(), ref_it, ref) != ref_it) continue;
    if (absl::Status s = mesh.CheckAxisRef(ref); !s.ok()) return s;
    const Mesh::Digit d = mesh.Resolve(ref);
    const int64_t n = mesh.axes()[d.index].size;
    const int64_t pre = n / (d.stride * d.size);
    points[d.index].emplace_back(pre, ref);
    points[d.index].emplace_back(pre * d.size, ref);
  }
  r.breakpoints_.resize(mesh.num_axes());
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const MeshAxis& axis = mesh.axes()[a];
    std::vector<std::pair<int64_t, std::string_view>>& p = points[a];
    p.emplace_back(1, axis.name);
    p.emplace_back(axis.size, axis.name);
    std::sort(p.begin(), p.end());
    std::vector<int64_t>& b = r.breakpoints_[a];
    b.push_back(1);
    for (size_t i = 1; i < p.size(); ++i) {
      if (p[i].first == b.back()) continue;
      if (p[i].first % b.back() != 0) {
        const int64_t last = b.back();
        const std::string_view other = std::find_if(p.begin(), p.end(), [last](const auto& q) {
                                         return q.first == last;
                                       })->second;
        return absl::InvalidArgumentError(absl::StrCat(
            "mesh axis pieces '", Absl(other), "' and '", Absl(p[i].second), "' of axis '",
            axis.name, "' (size ", axis.size, ") do not nest: no split of the axis has both"));
      }
      b.push_back(p[i].first);
    }
    if (b.size() == 1) b.push_back(axis.size);  // A size-1 axis stays one atom.
    if (prime_factors) {
      std::vector<int64_t> fine = {1};
      for (size_t j = 0; j + 1 < b.size(); ++j) {
        factors.clear();
        AppendPrimeFactors(b[j + 1] / b[j], &factors);
        for (int64_t f : factors) fine.push_back(fine.back() * f);
        if (factors.empty()) fine.push_back(b[j + 1]);  // 1 -> 1 only for size-1 axes.
      }
      b = std::move(fine);
    }
    AppendAtomsBetween(axis, b, atoms);
  }
  // Valid by construction (the pieces of a valid mesh's axes, named once each): Mesh::Create
  // would parse every name again.
  r.refined_ = Mesh::FromAtoms(std::move(atoms), mesh.num_devices());
  return r;
}

AxisList AxisRefinement::Atoms(std::string_view ref) const {
  AxisList out;
  AppendAtoms(ref, out);
  return out;
}

void AxisRefinement::AppendAtoms(std::string_view ref, AxisList& out) const {
  const Mesh::Digit d = mesh_.Resolve(ref);
  const int64_t n = mesh_.axes()[d.index].size;
  const int64_t begin = n / (d.stride * d.size), end = begin * d.size;
  const std::vector<int64_t>& b = breakpoints_[d.index];
  // Atoms are numbered across axes in mesh order; find this axis's first atom.
  int first = 0;
  for (int a = 0; a < d.index; ++a) first += static_cast<int>(breakpoints_[a].size()) - 1;
  int64_t covered = 1;
  for (size_t j = 0; j + 1 < b.size(); ++j) {
    if (b[j] >= begin && b[j + 1] <= end) {
      out.push_back(refined_.axis_name(static_cast<int>(first + j)));
      covered *= b[j + 1] / b[j];
    }
  }
  RESHARD_CHECK(covered == d.size) << "'" << ref << "' does not nest with the refinement";
}

AxisList AxisRefinement::RefineList(absl::Span<const AxisName> axes) const {
  AxisList out;
  out.reserve(axes.size());
  for (const AxisName& axis : axes) AppendAtoms(axis, out);
  return out;
}

DistType AxisRefinement::Refine(const DistType& type) const {
  // Built afresh rather than copied: every axis list is replaced.
  // Even a trivial refinement maps a whole axis spelled as a piece (`y:(1)4` on y = 4) to `y`.
  DistType out;
  out.element_type = type.element_type;
  out.dims.reserve(type.dims.size());
  for (const Dim& dim : type.dims) out.dims.push_back(Dim{dim.size, RefineList(dim.axes)});
  out.partial = RefineList(type.partial);
  return out;
}

Collective AxisRefinement::Refine(const Collective& op) const {
  Collective out = op;
  out.mesh_axes = RefineList(op.mesh_axes);
  return out;
}

std::vector<Step> AxisRefinement::Refine(absl::Span<const Step> steps) const {
  std::vector<Step> out;
  out.reserve(steps.size());
  for (const Step& step : steps) out.push_back(Step{Refine(step.op), Refine(step.type)});
  return out;
}

absl::StatusOr<Plan> RefinePlan(const Plan& plan) {
  const AxisList refs = SubAxisRefs(plan);
  if (refs.empty()) return plan;
  absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(plan.mesh, refs);
  if (!r.ok()) return r.status();
  return RefinePlanOn(*r, plan);
}

Plan RefinePlanOn(const AxisRefinement& refinement, const Plan& plan) {
  RESHARD_CHECK(refinement.mesh() == plan.mesh) << "a refinement of another mesh";
  // Field by field: a copy of `plan` would copy the steps only to replace them.
  Plan out;
  out.mesh = refinement.refined();
  out.source = refinement.Refine(plan.source);
  out.target = refinement.Refine(plan.target);
  out.strategy = plan.strategy;
  out.steps = refinement.Refine(plan.steps);
  out.metrics = plan.metrics;
  out.cost_model = plan.cost_model;
  out.optimality = plan.optimality;
  return out;
}

Plan CoarsenPlan(const Mesh& mesh, Plan plan) {
  plan.mesh = mesh;
  plan.source = Canonicalize(mesh, std::move(plan.source));
  plan.target = Canonicalize(mesh, std::move(plan.target));
  for (Step& step : plan.steps) {
    step.op = Canonicalize(mesh, std::move(step.op));  // A permute's pairs are not copied.
    step.type = Canonicalize(mesh, std::move(step.type));
  }
  return plan;
}

}  // namespace reshard
