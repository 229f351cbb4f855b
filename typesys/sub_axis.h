// sub_axis.h — sub-axes (Shardy's `x:(m)k`): canonical form and mesh refinement.
//
// A sub-axis `x:(m)k` is the middle digit group of axis x (size n) viewed as [m, k, n/(m·k)]
// (mesh.h). Types, partial clauses and collectives' mesh_axes may name sub-axes wherever they
// name axes. Two facts make them cheap to support everywhere:
//
//  * Canonical form. Adjacent pieces of one axis in major-to-minor order merge
//    (`x:(1)2,x:(2)2` is `x:(1)4`), and a piece covering its whole axis is the axis. Two valid
//    types on a mesh denote the same distribution exactly when their canonical forms are equal.
//
//  * Refinement. Splitting each mesh axis at the breakpoints its pieces use (m and m·k of every
//    `x:(m)k`) gives a mesh whose axes are the pieces themselves ("atoms", named by their
//    sub-axis reference), with the same device numbering: axis x = [x:(1)2, x:(2)4] numbers
//    devices exactly as x = 8 does. On the refined mesh every reference is a list of whole
//    axes, so the typing rules, interpreter, synthesizer, certificates and lowerings — all
//    written for whole axes — apply unchanged. Functions that take a plan or a step refine
//    internally when they meet a sub-axis (CheckStep, CheckSteps, ComputeMetrics, RunPlan,
//    Synthesize, CertifyPlan, the lowerings); their results are canonical on the user's mesh.
//    So do those that take two types and return no type (OnWholeAxes below: MinimalPermute,
//    DirectExchange, BytesLowerBound, TimeLowerBoundUs).
//
//   absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, {"y:(1)2"});
//   r->refined().ToString();                   // "x=2,y:(1)2=2,y:(2)2=2" for mesh x=2,y=4
//   r->Refine(t);                              // f32[8{y}] -> f32[8{y:(1)2,y:(2)2}]
//   Canonicalize(mesh, r->Refine(t)) == t;     // for canonical t
//
// The pieces one refinement can express must nest: the breakpoints of one axis must form a
// divisor chain (on x = 6, `x:(1)2` and `x:(1)3` do not nest; no plan can use both).
#ifndef RESHARD_TYPESYS_SUB_AXIS_H_
#define RESHARD_TYPESYS_SUB_AXIS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// Merges adjacent pieces of one axis in a major-to-minor list (`x:(1)2,x:(2)2` -> `x`); other
// references are kept in place. The references must be valid on `mesh`.
AxisList CanonicalAxisList(const Mesh& mesh, absl::Span<const AxisName> axes);
// The canonical form of a type valid on `mesh`: every dimension's list merged as above, and the
// partial axes merged as a set (pieces of one axis that are adjacent in any order merge).
DistType Canonicalize(const Mesh& mesh, DistType type);
// mesh_axes merged as above (collective_permute and all_to_all_v are returned unchanged).
Collective Canonicalize(const Mesh& mesh, Collective op);

// True when some reference in the type / collective / steps is a sub-axis that is not an axis
// of `mesh` (on a refined mesh, atoms are axes).
bool HasSubAxes(const Mesh& mesh, const DistType& type);
bool HasSubAxes(const Mesh& mesh, const Collective& op);
bool HasSubAxes(const Mesh& mesh, const DistType& source, absl::Span<const Step> steps);

// Every such sub-axis reference in the arguments (duplicates kept), for AxisRefinement::Create.
AxisList SubAxisRefs(const Mesh& mesh, const DistType& type);
// Of both endpoints of a resharding, `from`'s first.
AxisList SubAxisRefs(const Mesh& mesh, const DistType& from, const DistType& to);
AxisList SubAxisRefs(const Mesh& mesh, const DistType& source, absl::Span<const Step> steps);
// Of a plan on plan.mesh: its source's, its steps' and its target's.
AxisList SubAxisRefs(const Plan& plan);

// True when every axis of `mesh` has prime size (or size 1): without sub-axis references the
// prime-factor refinement of `mesh` is then `mesh` itself.
bool HasPrimeAxes(const Mesh& mesh);

// A refinement of a mesh (see the file comment). Immutable; cheap to copy for small meshes.
class AxisRefinement {
 public:
  // The coarsest refinement of `mesh` in which every reference of `refs` is a run of atoms;
  // with `prime_factors`, every atom is further split into prime factors (ascending within each
  // breakpoint interval), the finest refinement, which lets synthesis act on any part of an
  // axis. InvalidArgument naming the reference that is not valid on `mesh`, or two that do
  // not nest.
  static absl::StatusOr<AxisRefinement> Create(const Mesh& mesh,
                                               absl::Span<const AxisName> refs,
                                               bool prime_factors = false);

  const Mesh& mesh() const { return mesh_; }
  const Mesh& refined() const { return refined_; }
  // True when refined() == mesh() (no axis is split).
  bool trivial() const { return refined_.num_axes() == mesh_.num_axes(); }

  // The atoms `ref` covers, major to minor. `ref` must be valid on mesh() and nest with the
  // refinement (true for every reference passed to Create).
  AxisList Atoms(std::string_view ref) const;
  // The same value on refined(): every reference replaced by its atoms.
  DistType Refine(const DistType& type) const;
  Collective Refine(const Collective& op) const;
  std::vector<Step> Refine(absl::Span<const Step> steps) const;

 private:
  // Atoms(ref) appended to `out`, and the atoms of every reference of `axes` (the lists the
  // Refine overloads build, without a vector per reference).
  void AppendAtoms(std::string_view ref, AxisList& out) const;
  AxisList RefineList(absl::Span<const AxisName> axes) const;

  Mesh mesh_;
  Mesh refined_;
  // Per mesh axis: the breakpoints 1 = b_0 | b_1 | ... | b_r = size; atom j of the axis is
  // the piece (b_j)(b_{j+1}/b_j).
  std::vector<std::vector<int64_t>> breakpoints_;
};

// f(refined mesh, refined a, refined b) on the coarsest refinement in which the sub-axis
// references of `a` and `b` (valid on `mesh`) are whole axes; f(mesh, a, b) when there are
// none. For functions written for whole axes whose result names no axis (device ids, bytes,
// bounds): refining renumbers no device and moves no block. Aborts, like on invalid types,
// when the references do not nest (AxisRefinement::Create); Synthesize reports that case.
template <typename F>
auto OnWholeAxes(const Mesh& mesh, const DistType& a, const DistType& b, F&& f) {
  if (!HasSubAxes(mesh, a) && !HasSubAxes(mesh, b)) return f(mesh, a, b);
  absl::StatusOr<AxisRefinement> refinement = AxisRefinement::Create(mesh, SubAxisRefs(mesh, a, b));
  RESHARD_CHECK(refinement.ok()) << refinement.status();
  return f(refinement->refined(), refinement->Refine(a), refinement->Refine(b));
}

// The plan on the refinement its own references need (plan.mesh replaced by the refined mesh,
// types and collectives refined; metrics and strategy kept). The plan itself when it has no
// sub-axes. InvalidArgument as AxisRefinement::Create.
absl::StatusOr<Plan> RefinePlan(const Plan& plan);
// The same on a given refinement of plan.mesh, which every reference of the plan must nest
// with (aborts otherwise, like AxisRefinement::Refine), e.g. one the plan was synthesized on.
Plan RefinePlanOn(const AxisRefinement& refinement, const Plan& plan);
// The inverse for a plan synthesized on a refinement of `mesh`: mesh set back, every type and
// collective canonical on `mesh`.
Plan CoarsenPlan(const Mesh& mesh, Plan plan);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_SUB_AXIS_H_
