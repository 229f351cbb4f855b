// reshard_mpi_main.cc — `reshard-mpi`: run a plan on real MPI ranks, check it, time it.
//
//   mpirun -np 8 reshard-mpi --mesh x=2,y=4 --from 'f32[256{x,y},256]' --to 'f32[256,256{x,y}]'
//          [--strategy S | --plan FILE] [--scale K] [--repeat R] [--axis-cost C] [--json]
//
// One rank per mesh device (rank = linear device id). Rank 0 synthesizes the plan (or reads
// --plan) and broadcasts it as JSON; every rank fills its own block of the source with the
// canonical data (runtime/local_array.h; the global array never exists anywhere), runs the
// plan R times from the same source (MPI_Barrier before each run; a run's time is the slowest
// rank's MPI_Wtime interval), and checks its block of the result after every run (partial
// targets: summed over the partial group first). Rank 0 prints one report; with --json one
// JSON object on one line:
//   {"ok","mesh","from","to","strategy","ranks","scale","repeat","time_us_median",
//    "time_us_min","bytes_received_max","plan_bytes_received_max","peak_local_bytes",
//    "executor_peak_bytes","cost_us","value_modulus"}
// bytes_received_max and executor_peak_bytes are measured (max over ranks); peak_local_bytes
// and cost_us are the plan's metrics (cost_us under --axis-cost).
//
// Exit codes: 0 correct data; 1 wrong data on some rank (one stderr line naming the first
// wrong element); 2 bad input, including a rank count that differs from the mesh's device
// count (printed once, by rank 0; every rank reaches the same verdict and exits, no hang);
// 3 internal error.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "runtime/executor.h"
#include "runtime/local_array.h"
#include "synth/synthesize.h"
#include "typesys/absl_compat.h"
#include "typesys/cost_model.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "tools/tool_io.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

// --scale multiplies global sizes; beyond this a typo is likelier than a real request.
constexpr int64_t kMaxScale = int64_t{1} << 20;

int Rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int Size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// Every rank calls this with the same verdict; only rank 0 prints, so the message appears once.
int ReportError(absl::string_view message, int exit_code = kExitBadInput) {
  if (Rank() == 0) {
    std::cerr << "reshard-mpi: error: " << OneLine(message, kMaxErrorBytes) << std::endl;
  }
  return exit_code;
}

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// Agrees on `status` across ranks: OK only if OK everywhere; otherwise the lowest failing
// rank's status, on every rank. For steps whose outcome might differ between ranks.
absl::Status Agree(const absl::Status& status) {
  const int rank = Rank();
  int first_failing = status.ok() ? Size() : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first_failing, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_failing == Size()) return absl::OkStatus();
  std::string message(status.message());
  int64_t length = static_cast<int64_t>(message.size());
  MPI_Bcast(&length, 1, MPI_INT64_T, first_failing, MPI_COMM_WORLD);
  message.resize(length);
  MPI_Bcast(message.data(), static_cast<int>(length), MPI_CHAR, first_failing, MPI_COMM_WORLD);
  return absl::InvalidArgumentError(message);
}

struct Flags {
  std::string mesh, from, to;
  std::string strategy = "normal";
  std::string plan_file;
  std::string axis_cost;
  int64_t scale = 1;
  int64_t repeat = 5;
  bool json = false;
  // Test hook (hidden): corrupt one element of the last rank's result, to exercise the check.
  bool inject_fault = false;
};

absl::StatusOr<DistType> Scaled(DistType type, int64_t scale) {
  for (Dim& dim : type.dims) {
    if (__builtin_mul_overflow(dim.size, scale, &dim.size)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--scale ", scale, " makes a dimension overflow 64 bits"));
    }
  }
  return type;
}

absl::StatusOr<CostModel> ParseAxisCost(const Flags& flags) {
  if (flags.axis_cost.empty()) return CostModel();
  absl::StatusOr<CostModel> model = ParseCostModel(flags.axis_cost);
  if (!model.ok()) {
    return Annotate(model.status(), absl::StrCat("--axis-cost '", flags.axis_cost, "'"));
  }
  return model;
}

// Rank 0's part: the plan as JSON (synthesized, or the --plan file).
absl::StatusOr<std::string> MakePlanJson(const Flags& flags, const CostModel& cost_model) {
  if (!flags.plan_file.empty()) return ReadInputFile("--plan", flags.plan_file);
  absl::StatusOr<Mesh> mesh = ParseMesh(flags.mesh);
  if (!mesh.ok()) return Annotate(mesh.status(), absl::StrCat("--mesh '", flags.mesh, "'"));
  DistType types[2];
  const std::string* texts[2] = {&flags.from, &flags.to};
  const char* names[2] = {"--from", "--to"};
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<DistType> type = ParseType(*texts[i]);
    if (type.ok()) type = Scaled(*type, flags.scale);
    if (type.ok()) {
      if (absl::Status s = Validate(*mesh, *type); !s.ok()) type = s;
    }
    if (!type.ok()) {
      return Annotate(type.status(), absl::StrCat(names[i], " '", *texts[i], "'"));
    }
    // Canonical, as ParseValidType gives `reshard plan`: strategies that take the spelling
    // literally (greedy) would otherwise plan `12{x:(1)2,x:(2)2}` unlike `12{x}`.
    types[i] = Canonicalize(*mesh, *type);
  }
  absl::StatusOr<Strategy> strategy = ParseStrategy(flags.strategy);
  if (!strategy.ok()) {
    return Annotate(strategy.status(), absl::StrCat("--strategy '", flags.strategy, "'"));
  }
  if (absl::Status s = CheckCostModel(*mesh, cost_model); !s.ok()) {
    return Annotate(s, absl::StrCat("--axis-cost '", flags.axis_cost, "'"));
  }
  SynthesisOptions options;
  options.strategy = *strategy;
  options.cost_model = cost_model;
  absl::StatusOr<Plan> plan = Synthesize(*mesh, types[0], types[1], options);
  if (!plan.ok()) {
    return Annotate(plan.status(),
                    absl::StrCat("cannot synthesize ", ToString(types[0]), " -> ",
                                 ToString(types[1]), " (strategy ", flags.strategy, ")"));
  }
  return PlanToJson(*plan);
}

// Every rank gets the same plan: rank 0 makes it, broadcasts its JSON (or its error), and
// every rank (rank 0 too) reads that JSON back, so they hold identical plans.
absl::StatusOr<Plan> DistributePlan(const Flags& flags, const CostModel& cost_model) {
  absl::StatusOr<std::string> json = absl::UnknownError("not rank 0");
  if (Rank() == 0) json = MakePlanJson(flags, cost_model);
  int ok = Rank() == 0 ? json.ok() : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string text = Rank() == 0 ? (ok ? *json : std::string(json.status().message())) : "";
  int64_t length = static_cast<int64_t>(text.size());
  MPI_Bcast(&length, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  text.resize(length);
  MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (!ok) return absl::InvalidArgumentError(text);
  absl::StatusOr<Plan> plan = PlanFromJson(text, cost_model);
  if (!plan.ok()) {
    return flags.plan_file.empty()
               ? plan.status()
               : Annotate(plan.status(), absl::StrCat("--plan '", flags.plan_file, "'"));
  }
  if (absl::Status s = CheckPlan(*plan); !s.ok()) return s;
  return plan;
}

// With --plan, --mesh/--from/--to are optional but must match the file when given.
absl::Status CheckPlanMatchesFlags(const Flags& flags, const Plan& plan) {
  if (!flags.mesh.empty()) {
    absl::StatusOr<Mesh> mesh = ParseMesh(flags.mesh);
    if (!mesh.ok()) return Annotate(mesh.status(), absl::StrCat("--mesh '", flags.mesh, "'"));
    if (!(*mesh == plan.mesh)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mesh ", mesh->ToString(), " differs from the plan's mesh ", plan.mesh.ToString()));
    }
  }
  const std::pair<const std::string*, const DistType*> types[] = {{&flags.from, &plan.source},
                                                                  {&flags.to, &plan.target}};
  for (const auto& [text, type] : types) {
    if (text->empty()) continue;
    absl::StatusOr<DistType> parsed = ParseType(*text);
    if (!parsed.ok()) return Annotate(parsed.status(), absl::StrCat("'", *text, "'"));
    if (!(*parsed == *type)) {
      return absl::InvalidArgumentError(absl::StrCat("'", *text, "' differs from the plan's ",
                                                     ToString(*type)));
    }
  }
  return absl::OkStatus();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

int Run(int argc, char** argv) {
  Flags flags;
  CLI::App app(
      "Run a reshard plan on MPI ranks (one per mesh device), check every rank's data against "
      "the target and time it. Launch with mpirun -np <devices>.",
      "reshard-mpi");
  app.add_option("--mesh", flags.mesh, "Device mesh, e.g. x=2,y=4")->type_name("M");
  app.add_option("--from", flags.from, "Source type, e.g. 'f32[256{x,y},256]'")->type_name("T");
  app.add_option("--to", flags.to, "Target type, e.g. 'f32[256,256{x,y}]'")->type_name("T");
  CLI::Option* strategy =
      app.add_option("--strategy", flags.strategy, "Synthesis strategy (see `reshard plan`)")
          ->type_name("S")
          ->capture_default_str();
  app.add_option("--plan", flags.plan_file,
                 "Plan JSON from `reshard plan --json` (rank 0 reads it)")
      ->type_name("FILE")
      ->excludes(strategy);
  app.add_option("--scale", flags.scale, "Multiply every global dimension by K (not with --plan)")
      ->type_name("K")
      ->capture_default_str();
  app.add_option("--repeat", flags.repeat, "Timed runs, each from the same source")
      ->type_name("R")
      ->capture_default_str();
  app.add_option("--axis-cost", flags.axis_cost,
                 "Cost model for the plan's cost_us, e.g. '*=2:5' (alpha_us:GBps per axis)")
      ->type_name("C");
  app.add_flag("--json", flags.json, "Print one JSON object on one line");
  app.add_flag("--inject-fault", flags.inject_fault)->group("");
  app.footer(
      "Exit codes: 0 correct, 1 wrong data, 2 bad input (including a rank count that is not the "
      "mesh's device count).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      if (Rank() == 0) app.exit(e);
      return kExitOk;
    }
    return ReportError(e.what());
  }
  // Argument checks every rank makes identically, before any communication.
  if (flags.plan_file.empty() && (flags.mesh.empty() || flags.from.empty() || flags.to.empty())) {
    return ReportError("--mesh, --from and --to are required (or --plan FILE)");
  }
  if (flags.scale < 1 || flags.scale > kMaxScale) {
    return ReportError(absl::StrCat("--scale must be in 1..", kMaxScale, ", got ", flags.scale));
  }
  if (!flags.plan_file.empty() && flags.scale != 1) {
    return ReportError("--scale cannot rescale a --plan file (its steps name sizes); "
                       "use --strategy");
  }
  if (flags.repeat < 1 || flags.repeat > 100000) {
    return ReportError(absl::StrCat("--repeat must be in 1..100000, got ", flags.repeat));
  }
  absl::StatusOr<CostModel> cost_model = ParseAxisCost(flags);
  if (!cost_model.ok()) return ReportError(cost_model.status().message());
  if (!flags.mesh.empty()) {
    // The rank-count check needs only the mesh, so it comes before rank 0 synthesizes.
    absl::StatusOr<Mesh> mesh = ParseMesh(flags.mesh);
    if (!mesh.ok()) return ReportError(absl::StrCat("--mesh '", flags.mesh, "': ",
                                                    mesh.status().message()));
    if (mesh->num_devices() != Size()) {
      return ReportError(absl::StrCat("mesh ", mesh->ToString(), " has ", mesh->num_devices(),
                                      " devices but MPI runs ", Size(),
                                      " ranks; launch with mpirun -np ", mesh->num_devices()));
    }
  }

  absl::StatusOr<Plan> plan = DistributePlan(flags, *cost_model);
  if (!plan.ok()) return ReportError(plan.status().message());
  if (!flags.plan_file.empty()) {
    if (absl::Status s = CheckPlanMatchesFlags(flags, *plan); !s.ok()) {
      return ReportError(s.message());
    }
  }
  const Mesh& mesh = plan->mesh;
  absl::StatusOr<CanonicalData> data = CanonicalData::Create(mesh, plan->source);
  if (!data.ok()) return ReportError(data.status().message());
  absl::StatusOr<std::unique_ptr<Executor>> executor = Executor::Create(mesh, MPI_COMM_WORLD);
  if (!executor.ok()) return ReportError(executor.status().message());
  absl::StatusOr<PreparedPlan> prepared = (*executor)->Prepare(*plan);
  if (!prepared.ok()) return ReportError(prepared.status().message());

  const int64_t device = (*executor)->device();
  const std::vector<int64_t> source_shape = LocalShape(mesh, plan->source);
  const AxisList target_partial = PartialInMeshOrder(mesh, plan->target);
  std::vector<double> times_us;
  int64_t bytes_received = 0;
  int64_t executor_peak = 0;
  absl::Status wrong;  // this rank's first wrong element
  for (int64_t r = 0; r < flags.repeat; ++r) {
    LocalArray buffer(source_shape, plan->source.element_type);
    data->Fill(mesh, plan->source, device, buffer);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    ExecutionStats stats;
    absl::Status run = (*executor)->Run(*prepared, buffer, &stats);
    double seconds = MPI_Wtime() - start;
    // Run only fails before communicating, identically on every rank (a plan problem).
    if (absl::Status agreed = Agree(run); !agreed.ok()) {
      return ReportError(agreed.message(), kExitInternal);
    }
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times_us.push_back(seconds * 1e6);
    bytes_received = std::max(bytes_received, stats.bytes_received);
    executor_peak = std::max(executor_peak, stats.peak_bytes);
    // A partial target's value is the sum over its partial group: form it, then compare.
    if (!target_partial.empty()) {
      if (absl::Status s = (*executor)->AllReduce(target_partial, buffer); !s.ok()) {
        return ReportError(s.message(), kExitInternal);
      }
    }
    if (flags.inject_fault && device == mesh.num_devices() - 1) {
      buffer.data()[buffer.size_bytes() - 1] ^= std::byte{0x5a};
    }
    if (wrong.ok()) {
      wrong = data->Check(mesh, plan->target, device, buffer);
      if (!wrong.ok()) wrong = Annotate(wrong, absl::StrCat("run ", r + 1));
    }
  }
  absl::Status verdict = Agree(wrong);
  MPI_Allreduce(MPI_IN_PLACE, &bytes_received, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &executor_peak, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);

  if (Rank() == 0) {
    const double median = Median(times_us);
    const double min = *std::min_element(times_us.begin(), times_us.end());
    if (flags.json) {
      nlohmann::ordered_json j;
      j["ok"] = verdict.ok();
      j["mesh"] = mesh.ToString();
      j["from"] = ToString(plan->source);
      j["to"] = ToString(plan->target);
      j["strategy"] = plan->strategy;
      j["ranks"] = Size();
      j["scale"] = flags.scale;
      j["repeat"] = flags.repeat;
      j["steps"] = plan->steps.size();
      // Whole nanoseconds: MPI_Wtime resolution, and brief lines.
      j["time_us_median"] = std::round(median * 1e3) / 1e3;
      j["time_us_min"] = std::round(min * 1e3) / 1e3;
      j["bytes_received_max"] = bytes_received;
      j["plan_bytes_received_max"] = plan->metrics.bytes_received_max;
      j["peak_local_bytes"] = plan->metrics.peak_local_bytes;
      j["executor_peak_bytes"] = executor_peak;
      j["cost_us"] = plan->metrics.cost_us;
      j["value_modulus"] = data->modulus();
      std::cout << j.dump() << std::endl;
    } else {
      std::cout << absl::StrFormat(
          "%s: %s -> %s on %s, strategy %s, %d steps, %d ranks\n"
          "  time: median %.1f us, min %.1f us over %d runs\n"
          "  bytes received (max per rank): %d; plan peak_local_bytes %d; executor peak %d\n"
          "  modeled cost_us %.3f; values modulo %d\n",
          verdict.ok() ? "correct" : "WRONG", ToString(plan->source), ToString(plan->target),
          mesh.ToString(), plan->strategy, plan->steps.size(), Size(), median, min, flags.repeat,
          bytes_received, plan->metrics.peak_local_bytes, executor_peak, plan->metrics.cost_us,
          data->modulus());
    }
  }
  if (!verdict.ok()) {
    return ReportError(absl::StrCat("wrong data: ", verdict.message()), kExitWrongResult);
  }
  return kExitOk;
}

}  // namespace
}  // namespace reshard

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = reshard::kExitInternal;
  // No exception may escape: one stderr line and a defined exit code, on every rank.
  try {
    code = reshard::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "reshard-mpi: error: internal error: " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, reshard::kExitInternal);
  }
  MPI_Finalize();
  return code;
}
