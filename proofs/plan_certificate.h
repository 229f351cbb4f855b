// plan_certificate.h — translation validation of one plan with Z3.
//
// CertifyPlan proves, for a concrete mesh, source, target and list of steps, that executing
// the steps' collectives (their *data* semantics, DESIGN §2) leaves every device holding
// exactly what the target type assigns it. It does not re-run the type checker: each step is
// an index map walked backwards from a symbolic (device, local index) of the target down to
// the source, and Z3 searches for a device and index where the element that arrives is not
// the target's (or where a pending sum counts a source summand twice or never).
//
//   absl::StatusOr<PlanCertificate> c =
//       reshard::CertifyPlan(plan.mesh, plan.source, plan.target, plan.steps, {});
//   // c->obligation.status: kProved (unsat), kRefuted (with a counterexample naming the
//   // device, local index, expected and actual global index, and the first step whose
//   // declared type disagrees), kUnknown (timeout), or kError (the plan cannot execute).
//
// The declared types of the steps are used only to explain a counterexample. See
// docs/proofs.md for the encoding.
#ifndef RESHARD_PROOFS_PLAN_CERTIFICATE_H_
#define RESHARD_PROOFS_PLAN_CERTIFICATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proofs/obligation.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// Name of the obligation CertifyPlan produces.
inline constexpr char kPlanCorrectnessObligation[] = "plan.correct";

struct PlanCertificate {
  // "plan.correct": kProved, kRefuted, kUnknown, or kError when the steps cannot execute on
  // buffers of the source's local shape (a dimension out of range, a size not divisible by
  // the group size, bad mesh_axes or permute pairs: the cases where the interpreter's
  // ExecuteCollective returns InvalidArgument; `message` names the step; for all_to_all_v:
  // a transfer out of range, or an output element written twice or never). A collective
  // kind the certificate does not model gives kUnknown, never kProved.
  Obligation obligation;
  // The local shape every device's buffer actually has: the source's, then after each step
  // (propagated through the ops' data semantics, ignoring declared types). Covers the steps
  // that could execute.
  std::vector<std::vector<int64_t>> local_shapes;
  // Number of summands (terms) each target element is the sum of after the plan.
  int64_t terms = 0;
};

// Counterexample field names (Counterexample::fields) set by CertifyPlan on kRefuted:
//   kind                   wrong_element | summand_twice | term_count | local_shape
//   device, coordinates    the device (linear id; "x=1,y=0")
//   local_index            "[i,j,...]" in the target's local shape
//   expected_global_index  the target's element for that device and index
//   actual_global_index    the element that arrives (per term for sums, "[..];[..]")
//   first_disagreeing_step "3 (all_gather mesh_axes=[y] gather_axis=0)" or "none"
//   declared_type          that step's declared type
// plus kind-specific fields (e.g. summand coordinates for summand_twice).

// Certifies that `steps` take `source` to `target` on `mesh` (see the file comment).
// InvalidArgument when `source` or `target` is not valid on `mesh`, their element types or
// global shapes differ, or `target` has a partial axis `source` lacks. Never throws.
absl::StatusOr<PlanCertificate> CertifyPlan(const Mesh& mesh, const DistType& source,
                                            const DistType& target, const std::vector<Step>& steps,
                                            const ProveOptions& options = {});

}  // namespace reshard

#endif  // RESHARD_PROOFS_PLAN_CERTIFICATE_H_
