// reshard_main.cc — the `reshard` command-line tool (DESIGN §3).
//
//   reshard plan --mesh x=4,y=2 --from 'f32[8{x},16,8{y}]' --to 'f32[8,16{x,y},8]' [--json]
//   reshard run --mesh x=4,y=2 --from ... --to ...      # synthesize, execute, check
//   reshard plan ... --json | reshard run --plan -       # execute a plan read from stdin
//   reshard                                              # description, example, usage
//
// Exit codes: 0 success; 1 `run` found wrong data (or measured metrics that disagree with the
// plan's); 2 bad input, including "no plan within the memory bound"; 3 an internal error.
// Every error is exactly one line on stderr, `reshard: error: <message>`, because scripts and
// other tools read it.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "interp/interpreter.h"
#include "synth/synthesize.h"
#include "tools/tool_io.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "tools/verify_command.h"

#ifndef RESHARD_VERSION
#define RESHARD_VERSION "unknown"
#endif

namespace reshard {
namespace {

// The built-in example: an axis move on which XLA's fallback, "involuntary full
// rematerialization" (all-gather everything, then slice; `naive`), takes 8x the local size of
// either side.
constexpr absl::string_view kExampleMesh = "x=4,y=2";
constexpr absl::string_view kExampleFrom = "f32[8{x},16,8{y}]";
constexpr absl::string_view kExampleTo = "f32[8,16{x,y},8]";

// --- Errors. ---

// Messages from lower layers may span lines; the contract is one line per error.
int ReportError(absl::string_view message, int exit_code = kExitBadInput) {
  std::cerr << "reshard: error: " << OneLine(message, kMaxErrorBytes) << std::endl;
  return exit_code;
}

// Same code, message prefixed with the context it came from.
absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// --- Formatting. ---

std::string StrategyList() {
  std::vector<std::string> names;
  for (Strategy s : AllStrategies()) names.emplace_back(StrategyName(s));
  return absl::StrJoin(names, ", ");
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// Exact bytes (scripts compare them), plus a human-readable size once it gets large.
std::string Bytes(int64_t bytes) {
  std::string out = absl::StrCat(bytes, " B");
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 10 * 1024) return out;
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024.0 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%s (%.1f %s)", out, value, kUnits[unit]);
}

// numerator / denominator as "8.00x"; "n/a" when the denominator is 0 (e.g. no bytes moved).
std::string Ratio(double numerator, double denominator) {
  if (denominator == 0) return numerator == 0 ? "1.00x" : "n/a";
  return absl::StrFormat("%.2fx", numerator / denominator);
}

std::string Micros(double us) { return absl::StrFormat("%.3f us", us); }

std::string Pad(absl::string_view text, size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A permute over a large mesh lists thousands of pairs; the readable form shows the first few
// (--json always has all of them).
constexpr size_t kMaxPairsShown = 8;

std::string StepString(const Collective& op) {
  if (op.kind != CollectiveKind::kCollectivePermute ||
      op.source_target_pairs.size() <= kMaxPairsShown) {
    return ToString(op);
  }
  std::vector<std::string> pairs;
  for (size_t i = 0; i < kMaxPairsShown; ++i) {
    const auto& [source, target] = op.source_target_pairs[i];
    pairs.push_back(absl::StrCat("[", source, ",", target, "]"));
  }
  return absl::StrCat(std::string(CollectiveName(op.kind)), " source_target_pairs=[",
                      absl::StrJoin(pairs, ","), ",...] (", op.source_target_pairs.size(),
                      " pairs; --json lists all)");
}

// Type, local shape and local bytes as aligned columns.
class TypeTable {
 public:
  explicit TypeTable(const Plan& plan) : mesh_(plan.mesh) {
    Widen(plan.source);
    Widen(plan.target);
    for (const Step& step : plan.steps) Widen(step.type);
  }

  std::string Row(const DistType& type) const {
    return absl::StrCat(Pad(ToString(type), type_width_), "  local ",
                        Pad(ShapeString(LocalShape(mesh_, type)), shape_width_), "  ",
                        Bytes(LocalBytes(mesh_, type)));
  }

 private:
  void Widen(const DistType& type) {
    type_width_ = std::max(type_width_, ToString(type).size());
    shape_width_ = std::max(shape_width_, ShapeString(LocalShape(mesh_, type)).size());
  }

  const Mesh& mesh_;
  size_t type_width_ = 0;
  size_t shape_width_ = 0;
};

struct MetricRow {
  std::string name;
  std::string value;
  std::string note;
};

// Rows of `name  value  note`; names are padded to the longest metric name so that tables
// printed one after another line up.
void PrintRows(std::ostream& out, const std::vector<MetricRow>& rows) {
  size_t name_width = std::string_view("lower_bound_bytes_total").size();
  size_t value_width = 0;
  for (const MetricRow& row : rows) {
    name_width = std::max(name_width, row.name.size());
    value_width = std::max(value_width, row.value.size());
  }
  for (const MetricRow& row : rows) {
    std::string line =
        absl::StrCat("  ", Pad(row.name, name_width), "  ", Pad(row.value, value_width));
    if (!row.note.empty()) absl::StrAppend(&line, "  ", row.note);
    out << OneLine(line) << "\n";
  }
}

std::string StepCount(size_t steps) { return absl::StrCat(steps, steps == 1 ? " step" : " steps"); }

// Whether the peak respects max(from, to); exceeding it is by design for some strategies.
std::string BoundNote(const std::string& strategy, int64_t peak, int64_t bound) {
  if (peak <= bound) return ": within";
  absl::StatusOr<Strategy> parsed = ParseStrategy(strategy);
  if (parsed.ok() && !IsMemoryBounded(*parsed)) {
    return absl::StrCat(": above (strategy ", strategy, " is not memory-bounded)");
  }
  return ": EXCEEDED";
}

// What `optimal` proved of its plan, in words; empty when nothing is claimed.
std::string_view OptimalityNote(Optimality optimality) {
  switch (optimality) {
    case Optimality::kNotClaimed:
      return "";
    case Optimality::kProven:
      return "proven optimal: no plan of the collective vocabulary within the memory bound is "
             "cheaper";
    case Optimality::kWholeAxesOnly:
      return "optimal among plans on whole axes only: the search over sub-axes gave up (work "
             "budget or permute-class cap), and a plan splitting axes further may be cheaper";
  }
  return "";
}

// The line under a listing's plan header that says OptimalityNote; empty when it is.
std::string OptimalityLine(const Plan& plan) {
  const std::string_view note = OptimalityNote(plan.optimality);
  return note.empty() ? "" : "  (" + std::string(note) + ")\n";
}

// The readable listing of `plan`; `naive` is the baseline to compare with (or why there is
// none).
void PrintPlan(std::ostream& out, const Plan& plan, const absl::StatusOr<Plan>& naive) {
  const Mesh& mesh = plan.mesh;
  TypeTable table(plan);
  int64_t bound = std::max(LocalBytes(mesh, plan.source), LocalBytes(mesh, plan.target));

  out << "mesh  " << mesh.ToString() << "  (" << mesh.num_devices() << " devices)\n";
  out << "from  " << table.Row(plan.source) << "\n";
  out << "to    " << table.Row(plan.target) << "\n";
  out << "\nplan  strategy " << plan.strategy << ", " << StepCount(plan.steps.size()) << "\n"
      << OptimalityLine(plan);
  if (plan.steps.empty()) out << "  (none: the source already has the target type)\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    std::string number = absl::StrCat(i + 1, ". ");
    out << "  " << number << StepString(step.op) << "\n";
    out << "  " << std::string(number.size(), ' ') << "-> " << table.Row(step.type) << "\n";
  }

  const Metrics& m = plan.metrics;
  out << "\nmetrics\n";
  PrintRows(out, {
                     {"peak_local_bytes", Bytes(m.peak_local_bytes),
                      absl::StrCat("memory bound max(from, to) = ", Bytes(bound),
                                   BoundNote(plan.strategy, m.peak_local_bytes, bound))},
                     {"bytes_received_max", Bytes(m.bytes_received_max), "(busiest device)"},
                     {"bytes_received_total", Bytes(m.bytes_received_total),
                      absl::StrCat("(all devices; ",
                                   Ratio(m.bytes_received_total, m.lower_bound_bytes_total),
                                   " the lower bound)")},
                     {"lower_bound_bytes_total", Bytes(m.lower_bound_bytes_total),
                      "(no plan can receive less)"},
                     {"cost_us", Micros(m.cost_us), "(modeled time, alpha-beta per mesh axis)"},
                 });

  if (plan.strategy == StrategyName(Strategy::kNaive)) return;
  if (!naive.ok()) {
    out << "\nvs naive  not available: " << OneLine(naive.status().message()) << "\n";
    return;
  }
  const Metrics& n = naive->metrics;
  out << "\nvs naive  (gather to full size, then slice: " << StepCount(naive->steps.size())
      << ")\n";
  auto row = [](absl::string_view name, int64_t baseline, int64_t ours) {
    return MetricRow{std::string(name), Bytes(baseline),
                     absl::StrCat(Ratio(baseline, ours), " this plan")};
  };
  PrintRows(out, {row("peak_local_bytes", n.peak_local_bytes, m.peak_local_bytes),
                  row("bytes_received_max", n.bytes_received_max, m.bytes_received_max),
                  row("bytes_received_total", n.bytes_received_total, m.bytes_received_total),
                  {"cost_us", Micros(n.cost_us),
                   absl::StrCat(Ratio(n.cost_us, m.cost_us), " this plan")}});
}

// --- Inputs. ---

struct ProblemFlags {
  std::string mesh;
  std::string from;
  std::string to;
  std::string strategy = std::string(StrategyName(Strategy::kNormal));
  std::string axis_cost;  // Empty: the default cost model.
  std::string objective = std::string(ObjectiveName(Objective::kModeledTime));
  bool no_sub_axes = false;
};

struct Problem {
  Mesh mesh;
  DistType from;
  DistType to;
  SynthesisOptions options;
};

absl::StatusOr<Problem> ParseProblem(const ProblemFlags& flags) {
  Problem problem;
  absl::StatusOr<Mesh> mesh = ParseMesh(flags.mesh);
  if (!mesh.ok()) return Annotate(mesh.status(), absl::StrCat("--mesh '", flags.mesh, "'"));
  problem.mesh = *std::move(mesh);
  absl::StatusOr<DistType> from = ParseValidType(problem.mesh, flags.from);
  if (!from.ok()) return Annotate(from.status(), absl::StrCat("--from '", flags.from, "'"));
  problem.from = *std::move(from);
  absl::StatusOr<DistType> to = ParseValidType(problem.mesh, flags.to);
  if (!to.ok()) return Annotate(to.status(), absl::StrCat("--to '", flags.to, "'"));
  problem.to = *std::move(to);
  absl::StatusOr<Strategy> strategy = ParseStrategy(flags.strategy);
  if (!strategy.ok()) {
    return Annotate(strategy.status(), absl::StrCat("--strategy '", flags.strategy, "'"));
  }
  problem.options.strategy = *strategy;
  absl::StatusOr<Objective> objective = ParseObjective(flags.objective);
  if (!objective.ok()) {
    return Annotate(objective.status(), absl::StrCat("--objective '", flags.objective, "'"));
  }
  problem.options.objective = *objective;
  problem.options.sub_axes = !flags.no_sub_axes;
  if (!flags.axis_cost.empty()) {
    absl::StatusOr<CostModel> model = ParseCostModel(flags.axis_cost);
    if (!model.ok()) {
      return Annotate(model.status(), absl::StrCat("--axis-cost '", flags.axis_cost, "'"));
    }
    if (absl::Status s = CheckCostModel(problem.mesh, *model); !s.ok()) {
      return Annotate(s, absl::StrCat("--axis-cost '", flags.axis_cost, "'"));
    }
    problem.options.cost_model = *std::move(model);
  }
  return problem;
}

absl::StatusOr<Plan> SynthesizeProblem(const Problem& problem) {
  absl::StatusOr<Plan> plan = Synthesize(problem.mesh, problem.from, problem.to, problem.options);
  if (plan.ok()) return plan;
  // The synthesizer's NotFound message already names both types and the bound.
  if (absl::IsNotFound(plan.status())) {
    return Annotate(plan.status(), "no plan within the memory bound");
  }
  return Annotate(
      plan.status(),
      absl::StrCat("cannot synthesize ", ToString(problem.from), " -> ", ToString(problem.to),
                   " on mesh ", problem.mesh.ToString(), " (strategy ",
                   std::string(StrategyName(problem.options.strategy)), ")"));
}

// --- Subcommands. ---

struct PlanCommand {
  ProblemFlags problem;
  bool json = false;
};

int RunPlanCommand(const PlanCommand& flags) {
  absl::StatusOr<Problem> problem = ParseProblem(flags.problem);
  if (!problem.ok()) return ReportError(problem.status().message());
  absl::StatusOr<Plan> plan = SynthesizeProblem(*problem);
  if (!plan.ok()) return ReportError(plan.status().message());
  if (flags.json) {
    std::cout << PlanToJson(*plan) << std::endl;
    // The JSON form has no field for it (DESIGN §3): an unproven claim is said on stderr.
    if (plan->optimality == Optimality::kWholeAxesOnly) {
      std::cerr << "reshard: note: " << OptimalityNote(plan->optimality) << std::endl;
    }
    return kExitOk;
  }
  absl::StatusOr<Plan> naive = absl::UnavailableError("not computed");
  if (problem->options.strategy != Strategy::kNaive) {
    Problem naive_problem = *problem;
    naive_problem.options.strategy = Strategy::kNaive;
    naive = SynthesizeProblem(naive_problem);
  }
  PrintPlan(std::cout, *plan, naive);
  return kExitOk;
}

struct RunCommand {
  ProblemFlags problem;
  std::string plan_file;
  bool json = false;
};

// With --plan, the plan file is the problem; --mesh/--from/--to, when also given, must agree
// with it (a cheap guard against running the wrong file).
absl::StatusOr<Plan> LoadPlan(const RunCommand& flags) {
  absl::StatusOr<std::string> text = ReadInputFile("--plan", flags.plan_file);
  if (!text.ok()) return text.status();
  CostModel cost_model;
  if (!flags.problem.axis_cost.empty()) {
    absl::StatusOr<CostModel> model = ParseCostModel(flags.problem.axis_cost);
    if (!model.ok()) {
      return Annotate(model.status(), absl::StrCat("--axis-cost '", flags.problem.axis_cost, "'"));
    }
    cost_model = *std::move(model);
  }
  absl::StatusOr<Plan> plan = PlanFromJson(*text, cost_model);
  if (!plan.ok()) {
    return Annotate(plan.status(), absl::StrCat("--plan '", flags.plan_file, "'"));
  }
  if (absl::Status s = CheckPlan(*plan); !s.ok()) {
    return Annotate(s, absl::StrCat("--plan '", flags.plan_file, "'"));
  }
  if (absl::Status s =
          CheckPlanMatchesFlags(*plan, flags.problem.mesh, flags.problem.from, flags.problem.to);
      !s.ok()) {
    return s;
  }
  return plan;
}

int RunRunCommand(const RunCommand& flags) {
  absl::StatusOr<Plan> plan;
  if (!flags.plan_file.empty()) {
    plan = LoadPlan(flags);
    if (!plan.ok()) return ReportError(plan.status().message());
  } else {
    for (const auto& [value, name] :
         {std::pair{&flags.problem.mesh, "--mesh"}, std::pair{&flags.problem.from, "--from"},
          std::pair{&flags.problem.to, "--to"}}) {
      if (value->empty()) return ReportError(absl::StrCat(name, " is required (or --plan FILE)"));
    }
    absl::StatusOr<Problem> problem = ParseProblem(flags.problem);
    if (!problem.ok()) return ReportError(problem.status().message());
    plan = SynthesizeProblem(*problem);
    if (!plan.ok()) return ReportError(plan.status().message());
    // The synthesizer promises this; `run` is where a broken promise should surface.
    if (absl::Status s = CheckPlan(*plan); !s.ok()) {
      return ReportError(absl::StrCat("synthesized plan does not type-check: ", s.message()),
                         kExitWrongResult);
    }
  }

  absl::StatusOr<RunReport> report = RunPlan(*plan);
  if (!report.ok()) {
    return ReportError(
        absl::StrCat("cannot run the plan on the interpreter: ", report.status().message()));
  }
  const Metrics& m = plan->metrics;
  bool metrics_match = report->peak_local_bytes == m.peak_local_bytes &&
                       report->bytes_received_max == m.bytes_received_max &&
                       report->bytes_received_total == m.bytes_received_total;
  bool ok = report->ok && metrics_match;

  if (flags.json) {
    std::cout << "{\"ok\":" << (ok ? "true" : "false")
              << ",\"data_ok\":" << (report->ok ? "true" : "false")
              << ",\"metrics_match\":" << (metrics_match ? "true" : "false")
              << ",\"message\":" << JsonString(report->message) << ",\"measured\":{"
              << "\"peak_local_bytes\":" << report->peak_local_bytes
              << ",\"bytes_received_max\":" << report->bytes_received_max
              << ",\"bytes_received_total\":" << report->bytes_received_total
              << "},\"plan\":" << PlanToJson(*plan) << "}" << std::endl;
  } else {
    const Mesh& mesh = plan->mesh;
    std::cout << "mesh  " << mesh.ToString() << "  (" << mesh.num_devices() << " devices)\n"
              << "from  " << ToString(plan->source) << "\n"
              << "to    " << ToString(plan->target) << "\n"
              << "plan  strategy " << plan->strategy << ", " << plan->steps.size()
              << (plan->steps.size() == 1 ? " step" : " steps") << "\n"
              << OptimalityLine(*plan) << "\n";
    if (report->ok) {
      std::cout << "data     OK: all " << mesh.num_devices()
                << " devices hold exactly their block of the target\n";
    } else {
      std::cout << "data     WRONG: " << OneLine(report->message) << "\n";
    }
    std::cout << "metrics  " << (metrics_match ? "OK" : "MISMATCH")
              << ": measured on the interpreter vs the plan's\n";
    auto row = [](absl::string_view name, int64_t measured, int64_t planned) {
      return MetricRow{
          std::string(name), Bytes(measured),
          absl::StrCat("plan ", Bytes(planned), measured == planned ? "" : "  <-- differs")};
    };
    PrintRows(std::cout,
              {row("peak_local_bytes", report->peak_local_bytes, m.peak_local_bytes),
               row("bytes_received_max", report->bytes_received_max, m.bytes_received_max),
               row("bytes_received_total", report->bytes_received_total, m.bytes_received_total)});
  }
  std::cout.flush();
  if (!report->ok) {
    return ReportError(absl::StrCat("wrong data: ", report->message), kExitWrongResult);
  }
  if (!metrics_match) {
    return ReportError("measured metrics differ from the plan's", kExitWrongResult);
  }
  return kExitOk;
}

constexpr absl::string_view kDescription =
    "reshard synthesizes the collectives (all_slice, all_to_all, collective_permute,\n"
    "all_gather, all_reduce, reduce_scatter) that move a distributed array from one sharding\n"
    "to another on a device mesh, never holding more memory per device than\n"
    "max(source, target) local size.";

constexpr absl::string_view kSyntax =
    "Syntax: a mesh is `x=4,y=2` (devices numbered row-major, first axis major); a type is\n"
    "`f32[16{x,y},8] partial{z}`: dimension 0 split over x then y (x major), dimension 1 whole,\n"
    "a pending sum over z; axes not mentioned are replicated. A sub-axis `y:(m)k` names the\n"
    "middle part of axis y viewed as [m, k, size/(m*k)], e.g. `f32[16{y:(1)2},8] partial{y:(2)2}`.";

// `reshard` with no arguments: what it is, a real example, and how to use it.
int PrintIntro() {
  std::cout << "reshard " << RESHARD_VERSION << "\n\n"
            << kDescription << "\n\n"
            << "Example: moving axes x and y into dimension 1. XLA's fallback, \"involuntary full\n"
            << "rematerialization\" (gather everything, then slice), would take 8x the memory.\n\n"
            << "  $ reshard plan --mesh " << kExampleMesh << " --from '" << kExampleFrom
            << "' --to '" << kExampleTo << "'\n\n";
  ProblemFlags example;
  example.mesh = std::string(kExampleMesh);
  example.from = std::string(kExampleFrom);
  example.to = std::string(kExampleTo);
  absl::StatusOr<Problem> problem = ParseProblem(example);
  if (!problem.ok()) return ReportError(problem.status().message(), kExitInternal);
  absl::StatusOr<Plan> plan = SynthesizeProblem(*problem);
  if (!plan.ok()) return ReportError(plan.status().message(), kExitInternal);
  Problem naive_problem = *problem;
  naive_problem.options.strategy = Strategy::kNaive;
  PrintPlan(std::cout, *plan, SynthesizeProblem(naive_problem));
  std::cout
      << "\nUsage:\n"
      << "  reshard plan --mesh M --from T --to T [--strategy S] [--axis-cost C] [--no-sub-axes]\n"
      << "               [--objective time|bytes] [--json]\n"
      << "      Synthesize a plan and list it; --json prints one JSON object (DESIGN §3).\n"
      << "  reshard run (--mesh M --from T --to T [--strategy S] | --plan FILE) [--axis-cost C]\n"
      << "              [--json]\n"
      << "      Execute the plan on the reference interpreter with real data and check every\n"
      << "      device; --plan - reads `reshard plan --json` output from stdin.\n"
      << "  reshard verify (--mesh M --from T --to T [--strategy S] | --plan FILE) [--json]\n"
      << "  reshard verify --suite FILE --report DIR\n"
      << "      Prove the plan correct with Z3 (exit 0 proved, 1 refuted, 3 unknown).\n"
      << "  reshard <command> --help\n\n"
      << kSyntax << "\n"
      << "Strategies: " << StrategyList() << " (default normal).\n"
      << "Exit codes: 0 ok; 1 run found wrong data; 2 bad input or no plan within the memory "
         "bound.\n";
  return kExitOk;
}

// Adds --mesh, --from, --to and the synthesis options; returns the latter (which a plan
// file makes meaningless).
std::vector<CLI::Option*> AddProblemOptions(CLI::App& command, ProblemFlags& flags,
                                            bool required) {
  CLI::Option* mesh = command.add_option("--mesh", flags.mesh, "Device mesh, e.g. x=4,y=2");
  CLI::Option* from =
      command.add_option("--from", flags.from, "Source type, e.g. 'f32[8{x},16,8{y}]'");
  CLI::Option* to = command.add_option("--to", flags.to, "Target type, e.g. 'f32[8,16{x,y},8]'");
  for (CLI::Option* option : {mesh, from, to}) {
    option->type_name(option == mesh ? "M" : "T");
    if (required) option->required();
  }
  std::vector<CLI::Option*> synthesis;
  synthesis.push_back(command
                          .add_option("--strategy", flags.strategy,
                                      absl::StrCat("Synthesis strategy: ", StrategyList()))
                          ->type_name("S")
                          ->capture_default_str());
  command
      .add_option("--axis-cost", flags.axis_cost,
                  "Cost model: name=alpha_us:GBps per mesh axis, '*' for the rest "
                  "(default 5:100 everywhere), e.g. x=1.5:300,y=10:25")
      ->type_name("C");
  synthesis.push_back(
      command
          .add_option("--objective", flags.objective,
                      "What normal, optimal and auto minimise: time (modeled time, then bytes "
                      "received) or bytes (bytes received, then fewer steps)")
          ->type_name("O")
          ->capture_default_str());
  synthesis.push_back(command.add_flag(
      "--no-sub-axes", flags.no_sub_axes,
      "Do not split mesh axes into sub-axes x:(m)k (normal, optimal and auto split them when "
      "that moves fewer bytes or costs less)"));
  return synthesis;
}

int Main(int argc, char** argv) {
  if (argc <= 1) return PrintIntro();

  CLI::App app(std::string(kDescription), "reshard");
  app.set_version_flag("--version", "reshard " RESHARD_VERSION);
  app.require_subcommand(1);
  app.footer(absl::StrCat(kSyntax, "\nRun `reshard` with no arguments for an example."));

  PlanCommand plan_flags;
  CLI::App* plan = app.add_subcommand("plan", "Synthesize a plan and print it");
  AddProblemOptions(*plan, plan_flags.problem, /*required=*/true);
  plan->add_flag("--json", plan_flags.json, "Print one JSON object (DESIGN §3)");

  RunCommand run_flags;
  CLI::App* run = app.add_subcommand(
      "run", "Execute a plan on the reference interpreter with real data and check it");
  const std::vector<CLI::Option*> run_synthesis =
      AddProblemOptions(*run, run_flags.problem, /*required=*/false);
  CLI::Option* run_plan =
      run->add_option("--plan", run_flags.plan_file,
                      "Plan JSON from `reshard plan --json` ('-' = stdin) instead of "
                      "synthesizing; --mesh/--from/--to, if given, must match it")
          ->type_name("FILE");
  for (CLI::Option* option : run_synthesis) run_plan->excludes(option);
  run->add_flag("--json", run_flags.json, "Print the result as one JSON object");
  plan->footer(
      absl::StrCat(kSyntax, "\nExit codes: 0 ok, 2 bad input or no plan within the memory bound."));
  run->footer(
      absl::StrCat(kSyntax, "\nExit codes: 0 correct, 1 wrong data or metrics, 2 bad input."));

  VerifyFlags verify_flags;  // `reshard verify` lives in tools/verify_command.cc (proofs/).
  CLI::App* verify = AddVerifyCommand(app, verify_flags);

  // CLI11 would only say "A subcommand is required" for a mistyped command.
  if (std::string first = argv[1]; !first.empty() && first[0] != '-' &&
                                   !plan->check_name(first) && !run->check_name(first) &&
                                   !verify->check_name(first)) {
    return ReportError(
        absl::StrCat("unknown command '", first, "' (expected plan, run or verify)"));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive as "errors" with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e);
    return ReportError(e.what());
  }
  if (plan->parsed()) return RunPlanCommand(plan_flags);
  if (run->parsed()) return RunRunCommand(run_flags);
  if (verify->parsed()) return RunVerifyCommand(verify_flags);
  return ReportError("no command given; run `reshard` for usage");
}

}  // namespace
}  // namespace reshard

int main(int argc, char** argv) {
  // No exception may escape: the contract is one stderr line and a defined exit code.
  try {
    return reshard::Main(argc, argv);
  } catch (const std::exception& e) {
    return reshard::ReportError(absl::StrCat("internal error: ", e.what()), reshard::kExitInternal);
  } catch (...) {
    return reshard::ReportError("internal error: unknown exception", reshard::kExitInternal);
  }
}
