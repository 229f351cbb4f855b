// cost_model.h — the alpha-beta (latency-bandwidth) time model of collectives per mesh axis.
//
// Each mesh axis has a latency alpha (µs per message) and a bandwidth (GB/s, 1 GB = 10^9 bytes)
// for the links that connect devices differing in that axis's coordinate. A collective over
// several axes is limited by its slowest axis: max alpha and min bandwidth of the group's axes.
// With B = input local bytes, k = group size, alpha/bw of the group (ring algorithms):
//
//   all_slice            0                                   (local)
//   all_gather           (k-1)·alpha + (k-1)·B/bw
//   all_to_all           (k-1)·alpha + (k-1)/k·B/bw
//   reduce_scatter       (k-1)·alpha + (k-1)/k·B/bw
//   all_reduce           2(k-1)·alpha + 2(k-1)/k·B/bw          (reduce_scatter + all_gather)
//   collective_permute   alpha + B/bw, alpha/bw of the slowest axis any pair crosses (the axes
//                        in which source and target coordinates differ); 0 without pairs
//   all_to_all_v         max over devices of max(receive, send) time, where a device's
//                        receive time is m·alpha + r/bw for its m incoming messages of r
//                        bytes in total, alpha/bw of the slowest axis those messages cross
//                        (send time likewise); a plain all_to_all over k devices prices the same
//
// Defaults resemble one GPU node: alpha 5 µs, 100 GB/s on every axis. The model lives in
// typesys (it is arithmetic on types and collectives) so that ComputeMetrics can fill
// Metrics::cost_us and CheckPlan can recompute it; a Plan records the model it was priced with.
//
//   absl::StatusOr<CostModel> model = ParseCostModel("x=1.5:300,y=10:25");  // alpha_us:GBps
//   double us = model->StepCostUs(mesh, in, Collective::AllGather({"y"}, 0));
#ifndef RESHARD_TYPESYS_COST_MODEL_H_
#define RESHARD_TYPESYS_COST_MODEL_H_

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard {

struct AxisCost {
  double alpha_us = 5.0;   // Latency per message, µs.
  double gbps = 100.0;     // Bandwidth, 10^9 bytes per second.

  // Microseconds to move `bytes` bytes at this bandwidth.
  double TransferUs(double bytes) const { return bytes / (gbps * 1e3); }
  bool operator==(const AxisCost&) const = default;
};

// The slower of two links (larger alpha, smaller bandwidth, each on its own): the cost of a
// group of axes, or of a message crossing several.
inline AxisCost Slower(AxisCost a, AxisCost b) {
  return AxisCost{std::max(a.alpha_us, b.alpha_us), std::min(a.gbps, b.gbps)};
}

// Modeled µs of an all_slice, all_gather, all_to_all, reduce_scatter or all_reduce over a
// group of k devices whose links cost `group`, on `bytes` local input bytes (the table above);
// 0 for the other kinds, which the table prices per pair.
double GroupCollectiveUs(CollectiveKind kind, double k, AxisCost group, double bytes);

// Per-axis costs. Axes without an explicit entry use the default. Immutable once built;
// cheap to copy (a few entries).
class CostModel {
 public:
  CostModel() = default;
  explicit CostModel(AxisCost default_cost) : default_(default_cost) {}

  // Sets (or replaces) the cost of axis `name`. Requires alpha_us >= 0 and gbps > 0
  // (ParseCostModel validates user input).
  void SetAxis(std::string name, AxisCost cost);

  AxisCost default_cost() const { return default_; }
  const std::vector<std::pair<std::string, AxisCost>>& overrides() const { return axes_; }
  // This model without the entries for axes `mesh` lacks (CheckCostModel rejects those), e.g.
  // one model for meshes of different axes, or a mesh without its size-1 axes.
  CostModel OnAxesOf(const Mesh& mesh) const;

  // The cost of one axis (the default when it has no entry).
  AxisCost Axis(std::string_view name) const;
  // A group's cost: max alpha and min bandwidth over those of `axes` (references valid on
  // `mesh`) whose size is above 1; the default when there is none. An axis of size 1 exchanges
  // nothing, so its link does not slow the group.
  AxisCost Group(const Mesh& mesh, absl::Span<const AxisName> axes) const;
  // Axis(name) of every mesh axis, by axis index (for loops that would look names up often).
  std::vector<AxisCost> AxisCosts(const Mesh& mesh) const;
  // Whether every axis of `mesh` costs the same: then so does every link, and a permute costs
  // alpha + B/bw whatever pairs it uses.
  bool UniformOn(const Mesh& mesh) const;
  // The cheapest axis of the mesh of size above 1 (min alpha, max bandwidth separately; the
  // first axis when all have size 1): a lower bound for any message between two devices.
  AxisCost Fastest(const Mesh& mesh) const;
  // The slowest axis among those in which devices a and b differ (the default if a == b).
  AxisCost Between(const Mesh& mesh, int64_t a, int64_t b) const;

  // Modeled µs of `op` applied to `in` (op must type-check on in; see the table above).
  double StepCostUs(const Mesh& mesh, const DistType& in, const Collective& op) const;
  // The same where the caller has LocalBytes(mesh, in) (`in_bytes` must equal it).
  double StepCostUs(const Mesh& mesh, const DistType& in, const Collective& op,
                    int64_t in_bytes) const;

  // Canonical text "x=1.5:300,y=10:25" of the overrides; the default is printed as
  // "*=5:100" first when it differs from AxisCost{}.
  std::string ToString() const;

  bool operator==(const CostModel&) const = default;

 private:
  AxisCost default_;
  std::vector<std::pair<std::string, AxisCost>> axes_;
};

// The range of axis costs a model may hold: alpha_us in [0, kMaxAlphaUs], gbps at least
// kMinGbps (finite). Within it every plan's cost_us stays finite (the extreme bandwidth moves
// 2^63 bytes in ~10^22 µs); beyond it a cost could overflow to infinity.
inline constexpr double kMaxAlphaUs = 1e9;  // 1000 s per message.
inline constexpr double kMinGbps = 1e-6;    // 1 KB/s.

// Parses `name=alpha_us:GBps,...` (whitespace ignored; `*` sets the default for every other
// axis; numbers in decimal notation). InvalidArgument naming the entry for bad syntax, a value
// outside the range above or a repeated axis. Whether names exist in a mesh is checked by
// CheckCostModel.
absl::StatusOr<CostModel> ParseCostModel(std::string_view text);

// InvalidArgument when the model names an axis `mesh` lacks or holds a cost outside the range
// above (a model built through the API rather than parsed).
absl::Status CheckCostModel(const Mesh& mesh, const CostModel& model);

// Rounds a modeled time to whole nanoseconds, so metrics compare exactly and print briefly.
double RoundCostUs(double us);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_COST_MODEL_H_
