#include "typesys/cost_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"

namespace reshard {
namespace {

// CostModel::Between with the cost of axis i given by axis_cost(i); `fallback` when a == b.
template <typename AxisCostOf>
AxisCost SlowestLink(const Mesh& mesh, AxisCostOf&& axis_cost, AxisCost fallback, int64_t a,
                     int64_t b) {
  bool any = false;
  AxisCost cost = fallback;
  // Mixed-radix decomposition without allocating: last axis is least significant.
  for (int i = mesh.num_axes() - 1; i >= 0; --i) {
    const int64_t size = mesh.axes()[i].size;
    if (a % size != b % size) {
      AxisCost c = axis_cost(i);
      cost = any ? Slower(cost, c) : c;
      any = true;
    }
    a /= size;
    b /= size;
  }
  return cost;
}

// Receive and send time of every device for an all_to_all_v (see the header's table).
double AllToAllVCostUs(const CostModel& model, const Mesh& mesh, const DistType& in,
                       const Collective& op) {
  const int64_t n = mesh.num_devices();
  const int64_t element_bytes = ElementBytes(in.element_type);
  struct Side {
    int64_t messages = 0;
    double bytes = 0;
    bool any = false;
    AxisCost slowest;
  };
  std::vector<Side> recv(n), send(n);
  const std::vector<AxisCost> axis_cost = model.AxisCosts(mesh);
  for (const Transfer& t : op.transfers) {
    if (t.source == t.target) continue;
    double bytes = static_cast<double>(element_bytes);
    for (int64_t e : t.shape) bytes *= static_cast<double>(e);
    const AxisCost link = SlowestLink(
        mesh, [&](int i) { return axis_cost[i]; }, model.default_cost(), t.source, t.target);
    for (Side* side : {&recv[t.target], &send[t.source]}) {
      side->slowest = side->any ? Slower(side->slowest, link) : link;
      side->any = true;
      ++side->messages;
      side->bytes += bytes;
    }
  }
  double worst = 0;
  for (const std::vector<Side>* sides : {&recv, &send}) {
    for (const Side& side : *sides) {
      if (!side.any) continue;
      worst = std::max(worst, static_cast<double>(side.messages) * side.slowest.alpha_us +
                                  side.slowest.TransferUs(side.bytes));
    }
  }
  return worst;
}

}  // namespace

CostModel CostModel::OnAxesOf(const Mesh& mesh) const {
  CostModel restricted(default_);
  for (const auto& [name, cost] : axes_) {
    if (mesh.HasAxis(name)) restricted.SetAxis(name, cost);
  }
  return restricted;
}

void CostModel::SetAxis(std::string name, AxisCost cost) {
  RESHARD_CHECK(cost.alpha_us >= 0 && cost.gbps > 0) << "invalid axis cost for " << name;
  for (auto& [axis, c] : axes_) {
    if (axis == name) {
      c = cost;
      return;
    }
  }
  axes_.emplace_back(std::move(name), cost);
}

AxisCost CostModel::Axis(std::string_view name) const {
  if (axes_.empty()) return default_;  // The default model: asked for every step priced.
  // A sub-axis (or a refined mesh's atom) `x:(m)k` uses the links of its axis x.
  name = name.substr(0, name.find(':'));
  for (const auto& [axis, c] : axes_) {
    if (axis == name) return c;
  }
  return default_;
}

AxisCost CostModel::Group(const Mesh& mesh, absl::Span<const AxisName> axes) const {
  bool any = false;
  AxisCost cost = default_;
  for (const AxisName& axis : axes) {
    if (mesh.AxisSize(axis) == 1) continue;
    cost = any ? Slower(cost, Axis(axis)) : Axis(axis);
    any = true;
  }
  return cost;
}

AxisCost CostModel::Fastest(const Mesh& mesh) const {
  bool any = false;
  AxisCost best = Axis(mesh.axes()[0].name);
  for (const MeshAxis& axis : mesh.axes()) {
    if (axis.size == 1) continue;  // No two devices differ in it: it carries no message.
    const AxisCost c = Axis(axis.name);
    best.alpha_us = any ? std::min(best.alpha_us, c.alpha_us) : c.alpha_us;
    best.gbps = any ? std::max(best.gbps, c.gbps) : c.gbps;
    any = true;
  }
  return best;
}

bool CostModel::UniformOn(const Mesh& mesh) const {
  // The default model, without per-axis entries, is uniform on every mesh: the synthesizers
  // ask this per candidate.
  if (axes_.empty()) return true;
  for (const MeshAxis& axis : mesh.axes()) {
    if (!(Axis(axis.name) == Axis(mesh.axes()[0].name))) return false;
  }
  return true;
}

std::vector<AxisCost> CostModel::AxisCosts(const Mesh& mesh) const {
  std::vector<AxisCost> costs;
  costs.reserve(mesh.num_axes());
  for (const MeshAxis& axis : mesh.axes()) costs.push_back(Axis(axis.name));
  return costs;
}

double GroupCollectiveUs(CollectiveKind kind, double k, AxisCost group, double bytes) {
  switch (kind) {
    case CollectiveKind::kAllGather:
      return (k - 1) * group.alpha_us + group.TransferUs((k - 1) * bytes);
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kReduceScatter:
      return (k - 1) * group.alpha_us + group.TransferUs((k - 1) / k * bytes);
    case CollectiveKind::kAllReduce:
      return 2 * (k - 1) * group.alpha_us + group.TransferUs(2 * (k - 1) / k * bytes);
    case CollectiveKind::kAllSlice:
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kAllToAllV:
      return 0;
  }
  return 0;
}

AxisCost CostModel::Between(const Mesh& mesh, int64_t a, int64_t b) const {
  return SlowestLink(
      mesh, [&](int i) { return Axis(mesh.axes()[i].name); }, default_, a, b);
}

double CostModel::StepCostUs(const Mesh& mesh, const DistType& in, const Collective& op) const {
  return StepCostUs(mesh, in, op, LocalBytes(mesh, in));
}

double CostModel::StepCostUs(const Mesh& mesh, const DistType& in, const Collective& op,
                             int64_t in_bytes) const {
  const double bytes = static_cast<double>(in_bytes);
  const double k = static_cast<double>(mesh.GroupSize(op.mesh_axes));
  const AxisCost group = Group(mesh, op.mesh_axes);
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce:
      return GroupCollectiveUs(op.kind, k, group, bytes);
    case CollectiveKind::kCollectivePermute: {
      // Where every axis costs the same, so does every link: no pair needs its coordinates
      // (on 2^15 devices the pass below was a seventh of a `normal` call).
      if (UniformOn(mesh)) {
        const bool moves = std::any_of(op.source_target_pairs.begin(), op.source_target_pairs.end(),
                                       [](const auto& pair) { return pair.first != pair.second; });
        if (!moves) return 0;
        const AxisCost link = Axis(mesh.axes()[0].name);
        return link.alpha_us + link.TransferUs(bytes);
      }
      bool any = false;
      AxisCost slowest;
      const std::vector<AxisCost> axis_cost = AxisCosts(mesh);
      for (const auto& [s, t] : op.source_target_pairs) {
        if (s == t) continue;
        const AxisCost link =
            SlowestLink(mesh, [&](int i) { return axis_cost[i]; }, default_, s, t);
        slowest = any ? Slower(slowest, link) : link;
        any = true;
      }
      return any ? slowest.alpha_us + slowest.TransferUs(bytes) : 0;
    }
    case CollectiveKind::kAllToAllV:
      return AllToAllVCostUs(*this, mesh, in, op);
  }
  RESHARD_CHECK(false) << "unhandled collective kind";
  return 0;
}

std::string CostModel::ToString() const {
  std::vector<std::string> parts;
  if (!(default_ == AxisCost{})) {
    parts.push_back(absl::StrCat("*=", default_.alpha_us, ":", default_.gbps));
  }
  for (const auto& [axis, c] : axes_) {
    parts.push_back(absl::StrCat(axis, "=", c.alpha_us, ":", c.gbps));
  }
  return absl::StrJoin(parts, ",");
}

namespace {

// Digits with an optional sign, point and exponent: what SimpleAtod reads, less its hex,
// "inf" and "nan".
bool IsDecimal(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' ||
           c == 'E' || c == '+' || c == '-';
  });
}

// Why `cost` is outside the range of kMaxAlphaUs and kMinGbps, or "".
std::string OutOfRange(const AxisCost& cost) {
  if (!(cost.alpha_us >= 0 && cost.alpha_us <= kMaxAlphaUs)) {
    return absl::StrCat("alpha must be between 0 and ", kMaxAlphaUs, " µs");
  }
  if (!(cost.gbps >= kMinGbps && std::isfinite(cost.gbps))) {
    return absl::StrCat("bandwidth must be a finite number of at least ", kMinGbps, " GB/s");
  }
  return "";
}

}  // namespace

absl::StatusOr<CostModel> ParseCostModel(std::string_view text) {
  CostModel model;
  AxisList seen;
  std::string stripped(absl::StripAsciiWhitespace(Absl(text)));
  if (stripped.empty()) return model;
  for (absl::string_view raw : absl::StrSplit(stripped, ',')) {
    std::string entry;
    for (char c : raw) {
      if (!absl::ascii_isspace(static_cast<unsigned char>(c))) entry.push_back(c);
    }
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("axis cost '", entry, "': ", Absl(why),
                                                     " (expected name=alpha_us:GBps)"));
    };
    std::vector<std::string> name_value = absl::StrSplit(entry, '=');
    if (name_value.size() != 2 || name_value[0].empty()) return bad("no name=value");
    std::vector<std::string> numbers = absl::StrSplit(name_value[1], ':');
    AxisCost cost;
    if (numbers.size() != 2 || !IsDecimal(numbers[0]) || !IsDecimal(numbers[1]) ||
        !absl::SimpleAtod(numbers[0], &cost.alpha_us) ||
        !absl::SimpleAtod(numbers[1], &cost.gbps)) {
      return bad("value is not two decimal numbers");
    }
    if (std::string why = OutOfRange(cost); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("axis cost '", entry, "': ", why));
    }
    if (std::find(seen.begin(), seen.end(), name_value[0]) != seen.end()) {
      return bad("axis given twice");
    }
    seen.push_back(name_value[0]);
    if (name_value[0] == "*") {
      model = [&] {
        CostModel m(cost);
        for (const auto& [axis, c] : model.overrides()) m.SetAxis(axis, c);
        return m;
      }();
    } else {
      model.SetAxis(name_value[0], cost);
    }
  }
  return model;
}

absl::Status CheckCostModel(const Mesh& mesh, const CostModel& model) {
  if (std::string why = OutOfRange(model.default_cost()); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("default axis cost: ", why));
  }
  // Not a structured binding: clang before 16 cannot capture one in the lambda below.
  for (const std::pair<std::string, AxisCost>& entry : model.overrides()) {
    const std::string& axis = entry.first;
    const AxisCost& c = entry.second;
    if (std::string why = OutOfRange(c); !why.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("axis cost of '", axis, "': ", why));
    }
    // On a refined mesh an axis x may exist only as its atoms x:(m)k.
    const bool known = std::any_of(mesh.axes().begin(), mesh.axes().end(), [&](const MeshAxis& a) {
      return std::string_view(a.name).substr(0, a.name.find(':')) == axis;
    });
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("axis cost names axis '", axis,
                                                     "', which mesh ", mesh.ToString(),
                                                     " does not have"));
    }
  }
  return absl::OkStatus();
}

double RoundCostUs(double us) { return std::round(us * 1e3) / 1e3; }

}  // namespace reshard
