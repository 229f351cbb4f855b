#include "tools/verify_command.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "proofs/obligation.h"
#include "proofs/verify.h"
#include "synth/synthesize.h"
#include "typesys/absl_compat.h"
#include "tools/tool_io.h"
#include "typesys/plan.h"

namespace reshard {
namespace {

// DESIGN §3: 0 proved, 1 refuted, 2 bad input, 3 unknown.
constexpr int kExitProved = kExitOk;
constexpr int kExitRefuted = kExitWrongResult;
constexpr int kExitUnknown = kExitInternal;

// The CLI's contract is one line per error.
int Fail(absl::string_view message, int code) {
  std::cerr << "reshard: error: " << OneLine(message, kMaxErrorBytes) << std::endl;
  return code;
}

absl::StatusOr<Plan> ProblemPlan(const VerifyFlags& flags) {
  for (const auto& [value, name] : {std::pair{&flags.mesh, "--mesh"},
                                    std::pair{&flags.from, "--from"},
                                    std::pair{&flags.to, "--to"}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " is required (or --plan FILE, or --suite FILE --report DIR)"));
    }
  }
  absl::StatusOr<Mesh> mesh = ParseMesh(flags.mesh);
  if (!mesh.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--mesh '", flags.mesh, "': ",
                                                   mesh.status().message()));
  }
  absl::StatusOr<DistType> from = ParseValidType(*mesh, flags.from);
  if (!from.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--from '", flags.from, "': ",
                                                   from.status().message()));
  }
  absl::StatusOr<DistType> to = ParseValidType(*mesh, flags.to);
  if (!to.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--to '", flags.to, "': ",
                                                   to.status().message()));
  }
  absl::StatusOr<Strategy> strategy = ParseStrategy(flags.strategy);
  if (!strategy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--strategy '", flags.strategy, "': ",
                                                   strategy.status().message()));
  }
  absl::StatusOr<Objective> objective = ParseObjective(flags.objective);
  if (!objective.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--objective '", flags.objective, "': ",
                                                   objective.status().message()));
  }
  SynthesisOptions options;
  options.strategy = *strategy;
  options.objective = *objective;
  options.sub_axes = !flags.no_sub_axes;
  absl::StatusOr<Plan> plan = Synthesize(*mesh, *from, *to, options);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::IsNotFound(plan.status()) ? "no plan within the memory bound: "
                                                     : "cannot synthesize: ",
                     plan.status().message()));
  }
  return plan;
}

int RunSuiteCommand(const VerifyFlags& flags, const VerifyOptions& options) {
  if (flags.report.empty()) return Fail("--suite needs --report DIR", kExitBadInput);
  absl::StatusOr<std::string> text = ReadInputFile("--suite", flags.suite);
  if (!text.ok()) return Fail(text.status().message(), kExitBadInput);
  absl::StatusOr<std::vector<SuiteCase>> cases = ParseSuite(*text);
  if (!cases.ok()) {
    return Fail(absl::StrCat("--suite '", flags.suite, "': ", cases.status().message()),
                kExitBadInput);
  }
  std::string command =
      absl::StrCat("reshard verify --suite ", flags.suite, " --report ", flags.report);
  if (!flags.strategies.empty()) {
    std::vector<std::string> names;
    if (flags.strategies == "all") {
      for (Strategy s : AllStrategies()) names.emplace_back(StrategyName(s));
    } else {
      names = absl::StrSplit(flags.strategies, ',');
    }
    for (const std::string& name : names) {
      if (!ParseStrategy(name).ok()) {
        return Fail(absl::StrCat("--strategies: unknown strategy '", name, "'"), kExitBadInput);
      }
    }
    // Strategy-major order keeps each strategy's cases together in the report.
    std::vector<SuiteCase> expanded;
    for (const std::string& name : names) {
      for (SuiteCase c : *cases) {
        c.strategy = name;
        expanded.push_back(std::move(c));
      }
    }
    *cases = std::move(expanded);
    absl::StrAppend(&command, " --strategies ", flags.strategies);
  }
  SuiteReport report = RunSuite(*cases, options);
  if (absl::Status s = WriteReport(report, flags.report, command); !s.ok()) {
    return Fail(s.message(), kExitBadInput);
  }
  std::cout << report.Summary() << "\n"
            << "report: " << flags.report << "/report.md, " << flags.report << "/report.json"
            << std::endl;
  if (report.AllProved()) return kExitProved;
  // The worst outcome decides: refuted (or a Z3 error), then a case that could not be read or
  // synthesized (bad input, named here as well as in the report), then unknown.
  bool refuted = false;
  const SuiteCaseResult* bad_case = nullptr;
  int bad_cases = 0;
  for (const SuiteCaseResult& r : report.cases) {
    if (!r.error.empty()) {
      if (bad_case == nullptr) bad_case = &r;
      ++bad_cases;
    } else if (r.verification.verdict != ObligationStatus::kProved &&
               r.verification.verdict != ObligationStatus::kUnknown) {
      refuted = true;
    }
  }
  for (const Obligation& o : report.lemmas) {
    if (o.status != ObligationStatus::kProved && o.status != ObligationStatus::kUnknown) {
      refuted = true;
    }
  }
  const std::string summary = absl::StrCat("not everything is proved: ", report.Summary());
  if (refuted) return Fail(summary, kExitRefuted);
  if (bad_case != nullptr) {
    return Fail(absl::StrCat("--suite '", flags.suite, "' line ", bad_case->input.line, ": ",
                             bad_case->error, " (", bad_cases,
                             bad_cases == 1 ? " case" : " cases",
                             " failed before verification; the report lists them)"),
                kExitBadInput);
  }
  return Fail(summary, kExitUnknown);
}

}  // namespace

CLI::App* AddVerifyCommand(CLI::App& app, VerifyFlags& flags) {
  CLI::App* verify = app.add_subcommand(
      "verify", "Prove a plan correct with Z3 (translation validation + typing lemmas)");
  verify->add_option("--mesh", flags.mesh, "Device mesh, e.g. x=4,y=2")->type_name("M");
  verify->add_option("--from", flags.from, "Source type, e.g. 'f32[8{x},16,8{y}]'")
      ->type_name("T");
  verify->add_option("--to", flags.to, "Target type, e.g. 'f32[8,16{x,y},8]'")->type_name("T");
  // Synthesis options, which a --plan file excludes.
  CLI::Option* synthesis[] = {
      verify->add_option("--strategy", flags.strategy, "Synthesis strategy when no --plan is given")
          ->type_name("S")
          ->capture_default_str(),
      verify
          ->add_option("--objective", flags.objective,
                       "What normal, optimal and auto minimise when synthesizing: time or bytes")
          ->type_name("O")
          ->capture_default_str(),
      verify->add_flag("--no-sub-axes", flags.no_sub_axes,
                       "Synthesize without splitting mesh axes into sub-axes")};
  CLI::Option* plan =
      verify
          ->add_option("--plan", flags.plan_file,
                       "Plan JSON from `reshard plan --json` ('-' = stdin) instead of "
                       "synthesizing; --mesh/--from/--to, if given, must match it")
          ->type_name("FILE");
  for (CLI::Option* option : synthesis) plan->excludes(option);
  verify->add_option("--timeout-ms", flags.timeout_ms, "Z3 timeout per query (0 = none)")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  verify->add_flag("--json", flags.json, "Print the result as one JSON object");
  verify->add_option("--suite", flags.suite,
                     "Verify every case of a suite file (`mesh | from | to [| strategy]`, or "
                     "bench/cases.txt's `mesh ; from ; to`)")
      ->type_name("FILE");
  verify->add_option("--report", flags.report, "With --suite: write report.md and report.json here")
      ->type_name("DIR");
  verify->add_option("--strategies", flags.strategies,
                     "With --suite: verify every case under each of these strategies "
                     "(comma-separated, or 'all'), overriding the cases' own")
      ->type_name("S,S,...");
  verify->footer(
      "Exit codes: 0 proved, 1 refuted (counterexample printed), 2 bad input, 3 unknown "
      "(timeout; never reported as proved).");
  return verify;
}

int RunVerifyCommand(const VerifyFlags& flags) {
  VerifyOptions options;
  options.prove.timeout_ms = flags.timeout_ms;
  if (!flags.suite.empty()) {
    if (!flags.plan_file.empty() || !flags.mesh.empty()) {
      return Fail("--suite excludes --plan and --mesh/--from/--to", kExitBadInput);
    }
    options.prove.keep_encoding = false;
    return RunSuiteCommand(flags, options);
  }
  if (!flags.report.empty()) return Fail("--report needs --suite FILE", kExitBadInput);

  absl::StatusOr<Plan> plan;
  if (!flags.plan_file.empty()) {
    absl::StatusOr<std::string> text = ReadInputFile("--plan", flags.plan_file);
    if (!text.ok()) return Fail(text.status().message(), kExitBadInput);
    plan = PlanFromJson(*text);
    if (!plan.ok()) {
      return Fail(absl::StrCat("--plan '", flags.plan_file, "': ", plan.status().message()),
                  kExitBadInput);
    }
    if (absl::Status s = CheckPlanMatchesFlags(*plan, flags.mesh, flags.from, flags.to); !s.ok()) {
      return Fail(s.message(), kExitBadInput);
    }
  } else {
    plan = ProblemPlan(flags);
    if (!plan.ok()) return Fail(plan.status().message(), kExitBadInput);
  }
  options.memory_bounded = StrategyIsMemoryBounded(plan->strategy);
  options.prove.keep_encoding = false;
  absl::StatusOr<PlanVerification> v = VerifyPlan(*plan, options);
  if (!v.ok()) return Fail(v.status().message(), kExitBadInput);

  const Obligation* first_bad = nullptr;
  for (const Obligation& o : v->obligations) {
    if (!o.proved() && first_bad == nullptr) first_bad = &o;
  }
  if (flags.json) {
    std::vector<std::string> obligations, steps;
    for (const Obligation& o : v->obligations) obligations.push_back(ObligationToJson(o));
    std::cout << "{\"verdict\":\"" << ObligationStatusName(v->verdict) << "\",\"wall_ms\":"
              << absl::StrFormat("%.3f", v->wall_ms) << ",\"obligations\":["
              << absl::StrJoin(obligations, ",") << "],\"plan\":" << PlanToJson(*plan) << "}"
              << std::endl;
  } else {
    std::cout << "mesh  " << plan->mesh.ToString() << "  (" << plan->mesh.num_devices()
              << " devices)\nfrom  " << ToString(plan->source) << "\nto    "
              << ToString(plan->target) << "\nplan  strategy " << plan->strategy << ", "
              << plan->steps.size() << (plan->steps.size() == 1 ? " step" : " steps") << "\n";
    for (size_t i = 0; i < plan->steps.size(); ++i) {
      std::cout << "  " << i + 1 << ". " << ToString(plan->steps[i].op) << "\n     -> "
                << ToString(plan->steps[i].type) << "\n";
    }
    std::cout << "\n";
    for (const Obligation& o : v->obligations) std::cout << ObligationToText(o);
    std::cout << absl::StrFormat("\nverdict  %s (%.1f ms)\n", ObligationStatusName(v->verdict),
                                 v->wall_ms);
    std::cout.flush();
  }
  switch (v->verdict) {
    case ObligationStatus::kProved:
      return kExitProved;
    case ObligationStatus::kRefuted:
      return Fail(absl::StrCat(first_bad->name, " refuted: ",
                               first_bad->counterexample ? first_bad->counterexample->text
                                                         : first_bad->message),
                  kExitRefuted);
    case ObligationStatus::kUnknown:
      return Fail(absl::StrCat(first_bad->name, " not proved: ", first_bad->message),
                  kExitUnknown);
    case ObligationStatus::kError:
      return Fail(absl::StrCat(first_bad->name, ": ", first_bad->message), kExitBadInput);
  }
  return kExitUnknown;
}

}  // namespace reshard
