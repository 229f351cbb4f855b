// Property: on random plans — synthesized, and about half of them mutated — the Z3
// certificate's verdict equals the reference interpreter's (DESIGN §6):
//   the steps cannot execute on the interpreter  <=>  the certificate is kError;
//   the interpreter finds the target's data      <=>  the certificate is kProved;
//   RunPlan ok (data and every declared type)     =>  kProved;
// and a refutation of a plan without sums names a device and index that the interpreter
// confirms holds the wrong element. Z3 `unknown` fails the property (it must not happen on
// these small cases, and is never an acceptable "proved").
#include <rapidcheck.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "proofs/obligation.h"
#include "proofs/plan_certificate.h"
#include "synth/synthesize.h"
#include "tests/generators.h"
#include "tests/proofs_support.h"
#include "typesys/collective.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

using ::reshard::testing::ConfirmCounterexample;
using ::reshard::testing::GenReshardCase;
using ::reshard::testing::GenSubAxisReshardCase;
using ::reshard::testing::InterpreterVerdict;
using ::reshard::testing::NamesSubAxes;
using ::reshard::testing::ReshardCase;
using ::reshard::testing::SubAxisReshardCase;

// Applies one random mutation to `plan`'s steps; returns its name ("" when none applied).
// Mutations that name an axis draw it from `refs` (the mesh's axes, or pieces of them).
std::string Mutate(const AxisList& refs, Plan& plan) {
  std::vector<Step>& steps = plan.steps;
  const int rank = plan.source.rank();
  const int kind = *rc::gen::inRange(0, 8);
  if (steps.empty()) {
    // Add a step that changes data: a slice over some axis (may be a right or wrong plan).
    if (rank == 0) return "";
    const AxisName axis = refs[*rc::gen::inRange(0, static_cast<int>(refs.size()))];
    steps.push_back(Step{Collective::AllSlice({axis}, *rc::gen::inRange(0, rank)), plan.target});
    return "add_slice";
  }
  const size_t s = static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(steps.size())));
  Collective& op = steps[s].op;
  switch (kind) {
    case 0:  // Swap the targets of two permute pairs.
      if (op.kind == CollectiveKind::kCollectivePermute && op.source_target_pairs.size() >= 2) {
        const int n = static_cast<int>(op.source_target_pairs.size());
        const int a = *rc::gen::inRange(0, n);
        const int b = (a + *rc::gen::inRange(1, n)) % n;
        std::swap(op.source_target_pairs[a].second, op.source_target_pairs[b].second);
        return "swap_pairs";
      }
      break;
    case 1:  // Reverse a multi-axis collective's axes.
      if (op.mesh_axes.size() >= 2) {
        std::reverse(op.mesh_axes.begin(), op.mesh_axes.end());
        return "reverse_axes";
      }
      break;
    case 2:  // Another dimension (sometimes out of range).
      if (op.dim >= 0) {
        op.dim = *rc::gen::inRange(0, rank + 1);
        return "change_dim";
      }
      break;
    case 3:  // Drop a step.
      steps.erase(steps.begin() + s);
      return "drop_step";
    case 4: {  // Drop a reduction (or turn reduce_scatter into its slice).
      for (size_t i = 0; i < steps.size(); ++i) {
        if (steps[i].op.kind == CollectiveKind::kAllReduce) {
          steps.erase(steps.begin() + i);
          return "drop_all_reduce";
        }
        if (steps[i].op.kind == CollectiveKind::kReduceScatter) {
          steps[i].op.kind = CollectiveKind::kAllSlice;
          return "drop_reduction";
        }
      }
      break;
    }
    case 5:  // Replace the collective's axes by another single axis.
      if (!op.mesh_axes.empty()) {
        op.mesh_axes = {refs[*rc::gen::inRange(0, static_cast<int>(refs.size()))]};
        return "change_axes";
      }
      break;
    case 6:  // Repeat a step.
      steps.insert(steps.begin() + s, steps[s]);
      return "repeat_step";
    case 7:  // all_to_all_v: swap two transfers' sources, or shift one box's offset by ±1.
      if (op.kind == CollectiveKind::kAllToAllV && !op.transfers.empty()) {
        const int n = static_cast<int>(op.transfers.size());
        const int a = *rc::gen::inRange(0, n);
        if (n >= 2 && *rc::gen::inRange(0, 2) == 0) {
          const int b = (a + *rc::gen::inRange(1, n)) % n;
          std::swap(op.transfers[a].source, op.transfers[b].source);
          return "swap_transfer_sources";
        }
        Transfer& t = op.transfers[a];
        if (t.shape.empty()) break;
        const int i = *rc::gen::inRange(0, static_cast<int>(t.shape.size()));
        const int64_t delta = *rc::gen::inRange(0, 2) == 0 ? -1 : 1;
        (*rc::gen::inRange(0, 2) == 0 ? t.source_offset : t.target_offset)[i] += delta;
        return "shift_transfer_offset";
      }
      break;
  }
  return "";
}

// Synthesizes a plan for `c` (normal, or for about a quarter of the cases direct), mutates
// about half of them (axes drawn from `refs`), and checks that the certificate's verdict is
// the interpreter's.
void CheckVerdict(const ReshardCase& c, const AxisList& refs) {
  // Some cases use strategy direct (all_to_all_v); RapidCheck favours 0 at small sizes, so
  // in practice about 40% do.
  SynthesisOptions synth_options;
  if (*rc::gen::inRange(0, 4) == 0) synth_options.strategy = Strategy::kDirect;
  RC_TAG(synth_options.strategy == Strategy::kDirect ? "direct" : "normal");
  absl::StatusOr<Plan> synthesized = Synthesize(c.mesh, c.from, c.to, synth_options);
  if (!synthesized.ok()) {
    RC_ASSERT(absl::IsNotFound(synthesized.status()));
    RC_TAG(::reshard::testing::kNotFoundTag);
    return;
  }
  Plan plan = *synthesized;
  std::string mutation;
  if (*rc::gen::inRange(0, 100) < 55) {
    // A drawn mutation may not apply to this plan (no permute to swap, ...): try again.
    for (int attempt = 0; attempt < 6 && mutation.empty(); ++attempt) {
      mutation = Mutate(refs, plan);
    }
  }
  RC_TAG(mutation.empty() ? "synthesized" : "mutated");

  bool cannot_execute = false;
  absl::Status interp = InterpreterVerdict(c.mesh, plan.source, plan.target, plan.steps,
                                           &cannot_execute);
  if (cannot_execute && interp.message().find("reference interpreter") != absl::string_view::npos) {
    RC_DISCARD("beyond the interpreter's size limits");
  }
  ProveOptions options;
  options.timeout_ms = 20000;
  options.keep_encoding = false;
  absl::StatusOr<PlanCertificate> cert =
      CertifyPlan(c.mesh, plan.source, plan.target, plan.steps, options);
  if (!cert.ok()) RC_FAIL("CertifyPlan: " + cert.status().ToString());
  const Obligation& o = cert->obligation;
  RC_LOG() << "mutation " << mutation << "\n" << ObligationToText(o) << "interpreter: " << interp
           << "\n";
  RC_TAG(std::string(ObligationStatusName(o.status)));
  RC_ASSERT(o.status != ObligationStatus::kUnknown);
  RC_ASSERT(cannot_execute == (o.status == ObligationStatus::kError));
  if (cannot_execute) return;
  RC_ASSERT(interp.ok() == (o.status == ObligationStatus::kProved));
  if (mutation.empty()) {
    RC_ASSERT(o.status == ObligationStatus::kProved);
  }
  absl::StatusOr<RunReport> run = RunPlan(plan);
  if (run.ok() && run->ok) RC_ASSERT(o.status == ObligationStatus::kProved);
  if (o.status == ObligationStatus::kRefuted && cert->terms == 1) {
    RC_ASSERT(ConfirmCounterexample(c.mesh, plan.source, plan.target, plan.steps,
                                    *o.counterexample) == "");
  }
}

AxisList AxisNames(const Mesh& mesh) {
  AxisList names;
  for (const MeshAxis& axis : mesh.axes()) names.push_back(axis.name);
  return names;
}

RESHARD_PROP(ProofsProperty, Z3VerdictEqualsInterpreter, 300) {
  const ReshardCase c = *GenReshardCase();
  CheckVerdict(c, AxisNames(c.mesh));
}

// The same on composite meshes with sub-axis types (generators.h). Mutations draw from the
// atoms of the case's prime-factor refinement, which nest with every piece the plan can name
// (pieces that do not nest cannot share a refinement, so CertifyPlan rejects them by design,
// and no plan contains them). 1000 cases: ~45 s in Release (docs/proofs.md §7).
RESHARD_PROP(ProofsProperty, Z3VerdictEqualsInterpreterWithSubAxes, 1000) {
  const SubAxisReshardCase s = *GenSubAxisReshardCase();
  const ReshardCase& c = s.c;
  RC_TAG(NamesSubAxes(c.from) || NamesSubAxes(c.to) ? "sub_axes" : "whole_axes");
  AxisList refs = SubAxisRefs(c.mesh, c.from);
  for (const AxisName& ref : SubAxisRefs(c.mesh, c.to)) refs.push_back(ref);
  absl::StatusOr<AxisRefinement> fine =
      AxisRefinement::Create(c.mesh, refs, /*prime_factors=*/true);
  RC_ASSERT(fine.ok());
  CheckVerdict(c, AxisNames(fine->refined()));
}

}  // namespace
}  // namespace reshard
