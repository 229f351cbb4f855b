// step_builder.h — internal to synth/: builds a plan's steps one collective at a time.
//
//   StepBuilder b(mesh, from);
//   b.Apply(Collective::AllToAll({"x"}, 0, 1));   // type after the step from the typing rule
//   b.Permute(target);                           // MinimalPermute from the current type
//   std::vector<Step>& steps = b.steps();
//
// Strategies build ops that satisfy the rules by construction, so Apply treats a rule
// violation as a bug (RESHARD_CHECK, in debug builds); TryApply is for strategies that probe.
#ifndef RESHARD_SYNTH_STEP_BUILDER_H_
#define RESHARD_SYNTH_STEP_BUILDER_H_

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "synth/search.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/plan.h"

namespace reshard {

// The partial axes of `from` that `to` drops (reduced on the way), in mesh order.
inline AxisList ToReduce(const Mesh& mesh, const DistType& from, const DistType& to) {
  AxisList axes;
  for (const AxisName& axis : PartialInMeshOrder(mesh, from)) {
    if (std::find(to.partial.begin(), to.partial.end(), axis) == to.partial.end()) {
      axes.push_back(axis);
    }
  }
  return axes;
}

class StepBuilder {
 public:
  StepBuilder(const Mesh& mesh, DistType start) : mesh_(mesh), current_(std::move(start)) {}

  // The rule's checks run in debug builds only (ApplyAcceptedRule): the synthesizers check
  // the plans they return (CheckSynthesizedPlan), and checking every candidate's steps as
  // well cost 2.7 % of the instructions of `normal` on the 3-axis suite cases.
  void Apply(Collective op) {
#ifndef NDEBUG
    absl::StatusOr<DistType> checked = ApplyRule(mesh_, current_, op);
    RESHARD_CHECK(checked.ok()) << ToString(op) << " on " << ToString(current_) << ": "
                                << checked.status();
    RESHARD_CHECK(*checked == ApplyAcceptedRule(current_, op))
        << ToString(op) << " on " << ToString(current_) << ": ApplyAcceptedRule disagrees";
#endif
    current_ = ApplyAcceptedRule(std::move(current_), op);  // Edited in place.
    steps_.push_back(Step{std::move(op), current_});
  }
  // Applies `op` when the rule accepts it; false (and no change) otherwise.
  bool TryApply(Collective op) {
    absl::StatusOr<DistType> next = ApplyRule(mesh_, current_, op);
    if (!next.ok()) return false;
    // The step takes the new type; current_ copies it by assignment, which reuses the buffers
    // of the type it held (a fresh copy would allocate every list again).
    steps_.push_back(Step{std::move(op), *std::move(next)});
    current_ = steps_.back().type;
    return true;
  }
  // A minimal permute to `out`, which must have the current local shape; without its pairs
  // when `paired` is false (for plans priced from their types whose pairs are filled once the
  // plan is final, under the model that prices them: PairPermutes in synthesize.cc).
  void Permute(const DistType& out, bool paired = true) {
    steps_.push_back(
        Step{paired ? MinimalPermute(mesh_, current_, out) : Collective::Permute({}), out});
    current_ = out;
  }
  void Append(const std::vector<Step>& steps) {
    for (const Step& step : steps) steps_.push_back(step);
    if (!steps.empty()) current_ = steps.back().type;
  }

  const DistType& current() const { return current_; }
  std::vector<Step>& steps() { return steps_; }
  // The current type, moved out, for a caller done with the builder (it is left empty).
  DistType TakeCurrent() { return std::move(current_); }

 private:
  const Mesh& mesh_;
  DistType current_;
  std::vector<Step> steps_;
};

}  // namespace reshard

#endif  // RESHARD_SYNTH_STEP_BUILDER_H_
