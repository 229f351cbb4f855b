#include "typesys/plan.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "typesys/check.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

int64_t Saturate(__int128 value) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return value > kMax ? kMax : static_cast<int64_t>(value);
}

}  // namespace

absl::Status CheckSteps(const Mesh& mesh, const DistType& source, const std::vector<Step>& steps) {
  if (absl::Status s = Validate(mesh, source); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("source type: ", s.message()));
  }
  const DistType* current = &source;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    absl::Status s = Validate(mesh, step.type);
    if (s.ok()) s = CheckStep(mesh, *current, step.op, step.type);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("step ", i + 1, " (", ToString(step.op), "): ", s.message()));
    }
    current = &step.type;
  }
  return absl::OkStatus();
}

absl::Status CheckPlan(const Plan& plan) {
  if (absl::Status s = CheckSteps(plan.mesh, plan.source, plan.steps); !s.ok()) return s;
  // Canonicalize below needs a valid target.
  if (absl::Status s = Validate(plan.mesh, plan.target); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("plan target: ", s.message()));
  }
  if (absl::Status s = CheckCostModel(plan.mesh, plan.cost_model); !s.ok()) return s;
  // Types with sub-axes may be written in more than one way; compare canonical forms.
  if (!(Canonicalize(plan.mesh, plan.result()) == Canonicalize(plan.mesh, plan.target))) {
    return absl::InvalidArgumentError(absl::StrCat("plan ends at ", ToString(plan.result()),
                                                   ", not at the target ",
                                                   ToString(plan.target)));
  }
  if (!(ComputeMetrics(plan.mesh, plan.source, plan.steps, plan.cost_model) == plan.metrics)) {
    return absl::InvalidArgumentError("plan metrics differ from the metrics of its steps");
  }
  return absl::OkStatus();
}

Metrics ComputeMetrics(const Mesh& mesh, const DistType& source, const std::vector<Step>& steps,
                       const CostModel& cost_model) {
  Metrics metrics = ComputeMetrics(mesh, source, steps, cost_model, 0);
  metrics.lower_bound_bytes_total =
      LowerBoundBytesTotal(mesh, source, steps.empty() ? source : steps.back().type);
  return metrics;
}

Metrics ComputeMetrics(const Mesh& mesh, const DistType& source, const std::vector<Step>& steps,
                       const CostModel& cost_model, int64_t lower_bound_bytes_total) {
  const int64_t n = mesh.num_devices();
  Metrics metrics;
  // Each type's local bytes once: a step's input is the previous step's result.
  int64_t current_bytes = LocalBytes(mesh, source);
  metrics.peak_local_bytes = current_bytes;
  std::vector<__int128> received(n, 0);
  __int128 everyone = 0;  // Received by every device (group collectives), besides `received`.
  const DistType* current = &source;
  double cost_us = 0;
  for (const Step& step : steps) {
    const int64_t step_bytes = LocalBytes(mesh, step.type);
    cost_us += cost_model.StepCostUs(mesh, *current, step.op, current_bytes);
    if (step.op.kind == CollectiveKind::kAllToAllV) {
      // One pass over the transfers (BytesReceived per device would be quadratic).
      const int64_t element_bytes = ElementBytes(current->element_type);
      for (const Transfer& t : step.op.transfers) {
        if (t.source == t.target || t.target < 0 || t.target >= n) continue;
        __int128 v = element_bytes;
        for (int64_t e : t.shape) v *= e;
        received[t.target] += v;
      }
      // Input and output buffers are both live during the exchange.
      metrics.peak_local_bytes = std::max(metrics.peak_local_bytes, current_bytes + step_bytes);
    } else if (step.op.kind == CollectiveKind::kCollectivePermute) {
      // One pass over the pairs (BytesReceived per device would be quadratic).
      for (const auto& [s, t] : step.op.source_target_pairs) {
        if (s != t && t >= 0 && t < n) received[t] += current_bytes;
      }
    } else {
      // Every device of a group collective receives the same amount.
      everyone += BytesReceived(mesh, *current, step.op, 0, current_bytes);
    }
    metrics.peak_local_bytes = std::max(metrics.peak_local_bytes, step_bytes);
    current = &step.type;
    current_bytes = step_bytes;
  }
  __int128 total = everyone * n, max = 0;
  for (__int128 r : received) {
    total += r;
    max = std::max(max, r);
  }
  metrics.bytes_received_max = Saturate(max + everyone);
  metrics.bytes_received_total = Saturate(total);
  metrics.lower_bound_bytes_total = lower_bound_bytes_total;
  metrics.cost_us = RoundCostUs(cost_us);
  return metrics;
}

int64_t LowerBoundBytesTotal(const Mesh& mesh, const DistType& source, const DistType& target) {
  RESHARD_CHECK(source.rank() == target.rank()) << "types of different rank";
  if (HasSubAxes(mesh, source) || HasSubAxes(mesh, target)) {
    // Partial pieces are compared by name below: compare canonical spellings.
    const DistType s = Canonicalize(mesh, source), t = Canonicalize(mesh, target);
    if (!(s == source && t == target)) return LowerBoundBytesTotal(mesh, s, t);
  }
  const int64_t n = mesh.num_devices();
  const int64_t element_bytes = ElementBytes(target.element_type);
  const int64_t target_elements = LocalElements(mesh, target);
  bool reduces = false;
  for (const AxisName& axis : source.partial) {
    // A size-1 partial axis sums a single summand: devices already hold the value.
    if (AxisUse(target, axis) != kPartial && mesh.AxisSize(axis) > 1) reduces = true;
  }
  if (reduces) return Saturate(__int128{n} * target_elements * element_bytes);

  const std::vector<int64_t> source_local = LocalShape(mesh, source);
  const std::vector<int64_t> target_local = LocalShape(mesh, target);
  // Block offsets as sums of coordinate * weight over each dimension's axes (what BlockOffset
  // computes), with the coordinates advanced as a mixed-radix counter: Synthesize calls this
  // once per plan, and per-device BlockOffset calls (axis lookups by name, two allocations)
  // were a large share of its latency.
  struct Term {
    int dim;
    Mesh::Digit digit;  // The axis or sub-axis: (coordinate / stride) % size.
    int64_t weight;
  };
  auto terms_of = [&mesh](const DistType& type, const std::vector<int64_t>& local) {
    absl::InlinedVector<Term, 8> terms;
    for (int i = 0; i < type.rank(); ++i) {
      int64_t stride = 1;
      const AxisList& axes = type.dims[i].axes;
      for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
        const Mesh::Digit digit = mesh.Resolve(*a);
        terms.push_back(Term{i, digit, stride * local[i]});
        stride *= digit.size;
      }
    }
    return terms;
  };
  const auto source_terms = terms_of(source, source_local);
  const auto target_terms = terms_of(target, target_local);
  // Only the mesh axes the terms read tell devices' blocks apart; every tuple of their
  // coordinates stands for `alike` devices.
  absl::InlinedVector<int, 8> walked;
  int64_t alike = n;
  for (int a = 0; a < mesh.num_axes(); ++a) {
    auto reads = [a](const Term& t) { return t.digit.index == a; };
    if (std::none_of(source_terms.begin(), source_terms.end(), reads) &&
        std::none_of(target_terms.begin(), target_terms.end(), reads)) {
      continue;
    }
    walked.push_back(a);
    alike /= mesh.axes()[a].size;
  }
  const int rank = target.rank();
  absl::InlinedVector<int64_t, 8> buffers(mesh.num_axes() + 2 * rank, 0);
  // (Raw pointers in the walk: InlinedVector's element access tests where the elements live.)
  int64_t* const coord = buffers.data();
  int64_t* const source_offset = coord + mesh.num_axes();
  int64_t* const target_offset = source_offset + rank;
  auto offsets = [coord](absl::Span<const Term> terms, int64_t* offset) {
    for (const Term& t : terms) {
      offset[t.dim] += coord[t.digit.index] / t.digit.stride % t.digit.size * t.weight;
    }
  };
  __int128 total = 0;
  for (int64_t d = 0; d < n / alike; ++d) {
    std::fill(source_offset, target_offset + rank, 0);
    offsets(source_terms, source_offset);
    offsets(target_terms, target_offset);
    int64_t held = 1;
    for (int i = 0; i < rank; ++i) {
      int64_t lo = std::max(source_offset[i], target_offset[i]);
      int64_t hi = std::min(source_offset[i] + source_local[i], target_offset[i] + target_local[i]);
      held *= std::max<int64_t>(0, hi - lo);
    }
    total += target_elements - held;
    // The next tuple, the last walked axis fastest.
    for (auto a = walked.rbegin(); a != walked.rend(); ++a) {
      if (++coord[*a] < mesh.axes()[*a].size) break;
      coord[*a] = 0;
    }
  }
  total *= alike;
  return Saturate(total * element_bytes);
}

}  // namespace reshard
