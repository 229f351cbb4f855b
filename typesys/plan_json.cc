// JSON form of plans (DESIGN §3). nlohmann_json stays private to this file so that consumers of
// the core need only Abseil.
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "typesys/absl_compat.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

using Json = nlohmann::ordered_json;

// Plans read from files are user input; a cap keeps metrics exact (see kMaxAccountedBytes).
constexpr size_t kMaxSteps = 64;

Json StepToJson(const Step& step) {
  const Collective& op = step.op;
  Json j;
  j["op"] = std::string(CollectiveName(op.kind));
  j["mesh_axes"] = op.mesh_axes;
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
      j["slice_axis"] = op.dim;
      break;
    case CollectiveKind::kAllGather:
      j["gather_axis"] = op.dim;
      break;
    case CollectiveKind::kAllToAll:
      j["split_axis"] = op.split_dim;
      j["concat_axis"] = op.dim;
      break;
    case CollectiveKind::kReduceScatter:
      j["scatter_axis"] = op.dim;
      break;
    case CollectiveKind::kAllReduce:
      break;
    case CollectiveKind::kCollectivePermute: {
      Json pairs = Json::array();
      for (const auto& [s, t] : op.source_target_pairs) pairs.push_back({s, t});
      j["source_target_pairs"] = std::move(pairs);
      break;
    }
    case CollectiveKind::kAllToAllV: {
      // Compact: [source, target, [source offset], [target offset], [shape]] per transfer.
      j["out_shape"] = op.out_shape;
      Json transfers = Json::array();
      for (const Transfer& t : op.transfers) {
        transfers.push_back({t.source, t.target, t.source_offset, t.target_offset, t.shape});
      }
      j["transfers"] = std::move(transfers);
      break;
    }
  }
  j["type"] = ToString(step.type);
  return j;
}

absl::Status FieldError(std::string_view where, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("plan JSON: ", Absl(where), " field '", Absl(field), "' ", Absl(what)));
}

absl::StatusOr<std::string> GetString(const Json& j, std::string_view where,
                                      const std::string& field) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(where, field, "is missing");
  if (!it->is_string()) return FieldError(where, field, "must be a string");
  return it->get<std::string>();
}

// `v` as an int64_t: false unless it is an integer that fits (an unsigned one above 2^63 - 1
// would wrap).
bool AsInt(const Json& v, int64_t& out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  out = v.get<int64_t>();
  return true;
}

absl::StatusOr<int64_t> GetInt(const Json& j, std::string_view where, const std::string& field) {
  auto it = j.find(field);
  if (it == j.end()) return FieldError(where, field, "is missing");
  int64_t value = 0;
  if (!AsInt(*it, value)) return FieldError(where, field, "must be a 64-bit signed integer");
  return value;
}

absl::StatusOr<Collective> CollectiveFromJson(const Json& j, std::string_view where) {
  absl::StatusOr<std::string> name = GetString(j, where, "op");
  if (!name.ok()) return name.status();
  absl::StatusOr<CollectiveKind> kind = ParseCollectiveKind(*name);
  if (!kind.ok()) return absl::InvalidArgumentError(absl::StrCat("plan JSON: ", Absl(where), ": ",
                                                                 kind.status().message()));
  // Only the fields StepToJson writes for this kind: a step with another (say a split_axis on
  // an all_gather) was not written by us and is rejected rather than half read.
  Step probe;
  probe.op.kind = *kind;
  const Json fields = StepToJson(probe);
  for (const auto& [key, value] : j.items()) {
    if (!fields.contains(key)) {
      return FieldError(where, key, absl::StrCat("does not belong to ", Absl(*name)));
    }
  }
  Collective op;
  op.kind = *kind;
  if (auto it = j.find("mesh_axes"); it != j.end()) {
    if (!it->is_array()) return FieldError(where, "mesh_axes", "must be an array of strings");
    for (const Json& axis : *it) {
      if (!axis.is_string()) return FieldError(where, "mesh_axes", "must be an array of strings");
      op.mesh_axes.push_back(axis.get<std::string>());
    }
  } else if (op.kind != CollectiveKind::kCollectivePermute &&
             op.kind != CollectiveKind::kAllToAllV) {
    return FieldError(where, "mesh_axes", "is missing");
  }
  auto read_dim = [&](const std::string& field, int64_t& out) -> absl::Status {
    absl::StatusOr<int64_t> value = GetInt(j, where, field);
    if (!value.ok()) return value.status();
    out = *value;
    return absl::OkStatus();
  };
  absl::Status s;
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
      s = read_dim("slice_axis", op.dim);
      break;
    case CollectiveKind::kAllGather:
      s = read_dim("gather_axis", op.dim);
      break;
    case CollectiveKind::kAllToAll:
      s = read_dim("concat_axis", op.dim);
      if (s.ok()) s = read_dim("split_axis", op.split_dim);
      break;
    case CollectiveKind::kReduceScatter:
      s = read_dim("scatter_axis", op.dim);
      break;
    case CollectiveKind::kAllReduce:
      break;
    case CollectiveKind::kCollectivePermute: {
      auto it = j.find("source_target_pairs");
      if (it == j.end()) return FieldError(where, "source_target_pairs", "is missing");
      const char* shape = "must be an array of [source, target] integer pairs";
      if (!it->is_array()) return FieldError(where, "source_target_pairs", shape);
      for (const Json& pair : *it) {
        int64_t source = 0, target = 0;
        if (!pair.is_array() || pair.size() != 2 || !AsInt(pair[0], source) ||
            !AsInt(pair[1], target)) {
          return FieldError(where, "source_target_pairs", shape);
        }
        op.source_target_pairs.emplace_back(source, target);
      }
      break;
    }
    case CollectiveKind::kAllToAllV: {
      auto ints = [](const Json& a, std::vector<int64_t>& out) {
        if (!a.is_array()) return false;
        for (const Json& v : a) {
          if (!AsInt(v, out.emplace_back())) return false;
        }
        return true;
      };
      auto shape = j.find("out_shape");
      if (shape == j.end()) return FieldError(where, "out_shape", "is missing");
      if (!ints(*shape, op.out_shape)) {
        return FieldError(where, "out_shape", "must be an array of integers");
      }
      auto it = j.find("transfers");
      if (it == j.end()) return FieldError(where, "transfers", "is missing");
      const char* form =
          "must be an array of [source, target, [source offset], [target offset], [shape]]";
      if (!it->is_array()) return FieldError(where, "transfers", form);
      for (const Json& t : *it) {
        Transfer transfer;
        if (!t.is_array() || t.size() != 5 || !AsInt(t[0], transfer.source) ||
            !AsInt(t[1], transfer.target) || !ints(t[2], transfer.source_offset) ||
            !ints(t[3], transfer.target_offset) || !ints(t[4], transfer.shape)) {
          return FieldError(where, "transfers", form);
        }
        op.transfers.push_back(std::move(transfer));
      }
      break;
    }
  }
  if (!s.ok()) return s;
  return op;
}

}  // namespace

std::string PlanToJson(const Plan& plan) {
  Json j;
  j["mesh"] = plan.mesh.ToString();
  j["from"] = ToString(plan.source);
  j["to"] = ToString(plan.target);
  j["strategy"] = plan.strategy;
  Json steps = Json::array();
  for (const Step& step : plan.steps) steps.push_back(StepToJson(step));
  j["steps"] = std::move(steps);
  j["metrics"] = {
      {"peak_local_bytes", plan.metrics.peak_local_bytes},
      {"bytes_received_max", plan.metrics.bytes_received_max},
      {"bytes_received_total", plan.metrics.bytes_received_total},
      {"lower_bound_bytes_total", plan.metrics.lower_bound_bytes_total},
      {"cost_us", plan.metrics.cost_us},
  };
  return j.dump();
}

absl::StatusOr<Plan> PlanFromJson(std::string_view text, const CostModel& cost_model) {
  Json j = Json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("plan JSON: not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("plan JSON: expected an object");

  Plan plan;
  absl::StatusOr<std::string> mesh_text = GetString(j, "plan", "mesh");
  if (!mesh_text.ok()) return mesh_text.status();
  absl::StatusOr<Mesh> mesh = ParseMesh(*mesh_text);
  if (!mesh.ok()) return mesh.status();
  plan.mesh = *std::move(mesh);
  for (auto [field, type] : {std::pair{"from", &plan.source}, std::pair{"to", &plan.target}}) {
    absl::StatusOr<std::string> type_text = GetString(j, "plan", field);
    if (!type_text.ok()) return type_text.status();
    absl::StatusOr<DistType> parsed = ParseValidType(plan.mesh, *type_text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan JSON: '", field, "': ", parsed.status().message()));
    }
    *type = *std::move(parsed);
  }
  if (auto it = j.find("strategy"); it != j.end()) {
    // verify's memory-bound obligation depends on it: never read a wrong one as "".
    if (!it->is_string()) return FieldError("plan", "strategy", "must be a string");
    plan.strategy = it->get<std::string>();
  }
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array()) {
    return FieldError("plan", "steps", "must be an array");
  }
  if (steps->size() > kMaxSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan JSON: ", steps->size(), " steps; at most ", kMaxSteps, " supported"));
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    const Json& step_json = (*steps)[i];
    std::string where = absl::StrCat("step ", i + 1);
    if (!step_json.is_object()) return absl::InvalidArgumentError(
        absl::StrCat("plan JSON: ", where, " is not an object"));
    absl::StatusOr<Collective> op = CollectiveFromJson(step_json, where);
    if (!op.ok()) return op.status();
    absl::StatusOr<std::string> type_text = GetString(step_json, where, "type");
    if (!type_text.ok()) return type_text.status();
    absl::StatusOr<DistType> type = ParseType(*type_text);
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan JSON: ", where, " type: ", type.status().message()));
    }
    plan.steps.push_back(Step{*std::move(op), *std::move(type)});
  }
  if (absl::Status s = CheckSteps(plan.mesh, plan.source, plan.steps); !s.ok()) return s;
  if (!(Canonicalize(plan.mesh, plan.result()) == Canonicalize(plan.mesh, plan.target))) {
    return absl::InvalidArgumentError(absl::StrCat("plan ends at ", ToString(plan.result()),
                                                   ", not at its 'to' type ",
                                                   ToString(plan.target)));
  }
  if (absl::Status s = CheckCostModel(plan.mesh, cost_model); !s.ok()) return s;
  plan.cost_model = cost_model;
  plan.metrics = ComputeMetrics(plan.mesh, plan.source, plan.steps, cost_model);
  return plan;
}

}  // namespace reshard
