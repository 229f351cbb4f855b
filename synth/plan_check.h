// plan_check.h — internal to synth/: the type check Synthesize applies to every plan it
// returns, without CheckPlan's per-device allocations.
//
//   plan.metrics = ComputeMetrics(...);
//   absl::Status s = internal::CheckSynthesizedPlan(plan);   // RESHARD_CHECK(s.ok())
//
// CheckPlan(plan) minus what Synthesize already guarantees: the source is valid (Synthesize
// checked it before synthesizing), and plan.metrics are ComputeMetrics of the steps (computed
// from them just before; recomputing them would compare a function with itself). What it does
// check is CheckSteps: every step's type is valid on the mesh and is the result of its
// collective (ApplyRule for group collectives, CheckAllToAllV for all_to_all_v); a permute is
// checked as CheckPermute does (same array, same local shape, each device ends with the block
// and summand its result type assigns it) but with placement keys, which are linear in the
// device coordinates (synth/placement.h), over an odometer instead of per-device BlockIndex
// calls. Then, that the plan ends at its target. On a failing permute it returns
// CheckPermute's own message. Debug builds run CheckPlan as well (synthesize.cc).
#ifndef RESHARD_SYNTH_PLAN_CHECK_H_
#define RESHARD_SYNTH_PLAN_CHECK_H_

#include "absl/status/status.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard::internal {

// InvalidArgument naming the failing step (CheckSteps' format) or the wrong result.
// `finest`: when not null and a refinement of plan.mesh, a plan with sub-axes is checked on it
// (every reference of the plan must nest with it: Synthesize passes the prime-factor
// refinement it synthesized on) instead of on the refinement its own references need, which
// saves building that one; the same check, on finer atoms.
absl::Status CheckSynthesizedPlan(const Plan& plan, const AxisRefinement* finest = nullptr);

}  // namespace reshard::internal

#endif  // RESHARD_SYNTH_PLAN_CHECK_H_
