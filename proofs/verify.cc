#include "proofs/verify.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "proofs/lemmas.h"
#include "proofs/plan_certificate.h"
#include "synth/synthesize.h"
#include "typesys/absl_compat.h"

namespace reshard {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

struct Counts {
  int proved = 0, refuted = 0, unknown = 0, error = 0;
  void Add(const Obligation& o) {
    switch (o.status) {
      case ObligationStatus::kProved:
        ++proved;
        break;
      case ObligationStatus::kRefuted:
        ++refuted;
        break;
      case ObligationStatus::kUnknown:
        ++unknown;
        break;
      case ObligationStatus::kError:
        ++error;
        break;
    }
  }
  int total() const { return proved + refuted + unknown + error; }
};

Counts CountAll(const SuiteReport& report) {
  Counts c;
  for (const Obligation& o : report.lemmas) c.Add(o);
  for (const SuiteCaseResult& r : report.cases) {
    for (const Obligation& o : r.verification.obligations) c.Add(o);
  }
  return c;
}

std::string CaseLabel(const SuiteCase& c) {
  return absl::StrCat(c.mesh, " | ", c.from, " -> ", c.to, " | ", c.strategy);
}

// Markdown table cells cannot contain '|' or newlines.
std::string Cell(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

bool StrategyIsMemoryBounded(std::string_view strategy) {
  // Baselines documented in synth/synthesize.h as not memory-bounded; `direct` holds source
  // and target at once, and `auto` may choose it.
  return strategy != "naive" && strategy != "gspmd" && strategy != "greedy" &&
         strategy != "direct" && strategy != "auto";
}

ObligationStatus CombinedStatus(const std::vector<Obligation>& obligations) {
  bool refuted = false, unknown = false;
  for (const Obligation& o : obligations) {
    if (o.status == ObligationStatus::kError) return ObligationStatus::kError;
    refuted |= o.status == ObligationStatus::kRefuted;
    unknown |= o.status == ObligationStatus::kUnknown;
  }
  if (refuted) return ObligationStatus::kRefuted;
  if (unknown) return ObligationStatus::kUnknown;
  return ObligationStatus::kProved;
}

absl::StatusOr<PlanVerification> VerifyPlan(const Plan& plan, const VerifyOptions& options) {
  auto start = std::chrono::steady_clock::now();
  // Per-plan queries are linear (or concrete): the plain SMT kernel suffices and is cheap.
  ProveOptions prove = options.prove;
  prove.simple_solver = true;
  // One context for the certificate and the synthesizer obligations (see
  // ProveOptions::context). Creating a context only throws when Z3 is out of memory.
  std::optional<z3::context> shared;
  if (prove.context == nullptr) {
    try {
      prove.context = &shared.emplace();
    } catch (const z3::exception&) {
      prove.context = nullptr;  // Each call then reports its own Z3 error.
    }
  }
  absl::StatusOr<PlanCertificate> cert =
      CertifyPlan(plan.mesh, plan.source, plan.target, plan.steps, prove);
  if (!cert.ok()) return cert.status();
  PlanVerification v;
  v.obligations.push_back(cert->obligation);
  // A timed-out query interrupted the shared context (Z3_interrupt); the later queries get
  // a fresh one rather than rely on when Z3 clears the interrupt.
  if (cert->obligation.status == ObligationStatus::kUnknown && shared.has_value()) {
    prove.context = nullptr;
  }
  if (cert->local_shapes.size() == plan.steps.size() + 1) {
    absl::StatusOr<std::vector<Obligation>> synth = SynthesizerObligations(
        plan, cert->local_shapes, options.memory_bounded, prove);
    if (!synth.ok()) return synth.status();
    for (Obligation& o : *synth) v.obligations.push_back(std::move(o));
  }
  v.verdict = CombinedStatus(v.obligations);
  v.wall_ms = MsSince(start);
  return v;
}

absl::StatusOr<std::vector<SuiteCase>> ParseSuite(std::string_view text) {
  std::vector<SuiteCase> cases;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(Absl(text), '\n')) {
    ++line_number;
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    // bench/cases.txt separates fields with ';' (no type or mesh contains either character).
    const char separator = line.find('|') == absl::string_view::npos &&
                                   line.find(';') != absl::string_view::npos
                               ? ';'
                               : '|';
    std::vector<std::string> fields;
    for (absl::string_view f : absl::StrSplit(line, separator)) {
      fields.emplace_back(absl::StripAsciiWhitespace(f));
    }
    if (fields.size() < 3 || fields.size() > 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("suite line ", line_number, ": expected `mesh | from | to [| strategy]`, "
                       "got ", fields.size(), " fields"));
    }
    for (const std::string& f : fields) {
      if (f.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("suite line ", line_number, ": empty field"));
      }
    }
    SuiteCase c;
    c.line = line_number;
    c.mesh = fields[0];
    c.from = fields[1];
    c.to = fields[2];
    if (fields.size() == 4) c.strategy = fields[3];
    cases.push_back(std::move(c));
  }
  return cases;
}

bool SuiteReport::AllProved() const {
  for (const Obligation& o : lemmas) {
    if (!o.proved()) return false;
  }
  for (const SuiteCaseResult& r : cases) {
    if (!r.error.empty() || r.verification.verdict != ObligationStatus::kProved) return false;
  }
  return true;
}

std::string SuiteReport::Summary() const {
  Counts c = CountAll(*this);
  int failed_cases = 0;
  int proved_plans = 0;
  for (const SuiteCaseResult& r : cases) {
    failed_cases += r.error.empty() ? 0 : 1;
    proved_plans +=
        r.error.empty() && r.verification.verdict == ObligationStatus::kProved ? 1 : 0;
  }
  return absl::StrFormat(
      "%s: %d obligations: %d proved, %d refuted, %d unknown, %d error; %d lemmas, %d plans "
      "(%d proved, %d cases failed before verification); per-plan verification p50 %.1f ms, "
      "p99 %.1f ms; total %.2f s",
      AllProved() ? "ALL PROVED" : "NOT ALL PROVED", c.total(), c.proved, c.refuted, c.unknown,
      c.error, static_cast<int>(lemmas.size()), static_cast<int>(cases.size()), proved_plans,
      failed_cases,
      p50_ms, p99_ms, total_ms / 1000);
}

SuiteReport RunSuite(const std::vector<SuiteCase>& cases, const VerifyOptions& options) {
  auto start = std::chrono::steady_clock::now();
  SuiteReport report;
  report.lemmas = ProveTypingLemmas(options.prove);
  for (const SuiteCase& c : cases) {
    SuiteCaseResult result;
    result.input = c;
    absl::StatusOr<Mesh> mesh = ParseMesh(c.mesh);
    absl::StatusOr<DistType> from = mesh.ok() ? ParseValidType(*mesh, c.from) : mesh.status();
    absl::StatusOr<DistType> to = from.ok() ? ParseValidType(*mesh, c.to) : from.status();
    absl::StatusOr<Strategy> strategy = ParseStrategy(c.strategy);
    absl::StatusOr<Plan> plan = absl::UnknownError("not run");
    if (!to.ok()) {
      result.error = std::string(to.status().message());
    } else if (!strategy.ok()) {
      result.error = std::string(strategy.status().message());
    } else {
      SynthesisOptions synthesis;
      synthesis.strategy = *strategy;
      plan = Synthesize(*mesh, *from, *to, synthesis);
      if (!plan.ok()) result.error = absl::StrCat("synthesis: ", plan.status().message());
    }
    if (plan.ok()) {
      for (const Step& step : plan->steps) {
        result.steps.push_back(absl::StrCat(ToString(step.op), " -> ", ToString(step.type)));
      }
      VerifyOptions o = options;
      o.memory_bounded = options.memory_bounded && StrategyIsMemoryBounded(plan->strategy);
      absl::StatusOr<PlanVerification> v = VerifyPlan(*plan, o);
      if (v.ok()) {
        result.verification = *std::move(v);
        report.plan_ms.push_back(result.verification.wall_ms);
      } else {
        result.error = absl::StrCat("verification: ", v.status().message());
      }
    }
    report.cases.push_back(std::move(result));
  }
  std::sort(report.plan_ms.begin(), report.plan_ms.end());
  report.p50_ms = Percentile(report.plan_ms, 0.50);
  report.p99_ms = Percentile(report.plan_ms, 0.99);
  report.total_ms = MsSince(start);
  return report;
}

absl::Status WriteReport(const SuiteReport& report, const std::string& dir,
                         std::string_view command) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot create report directory '", dir, "': ", ec.message()));
  }

  // report.json
  nlohmann::ordered_json j;
  j["summary"] = report.Summary();
  j["all_proved"] = report.AllProved();
  if (!command.empty()) j["command"] = std::string(command);
  j["p50_ms"] = report.p50_ms;
  j["p99_ms"] = report.p99_ms;
  j["total_ms"] = report.total_ms;
  j["lemmas"] = nlohmann::ordered_json::array();
  for (const Obligation& o : report.lemmas) {
    j["lemmas"].push_back(nlohmann::ordered_json::parse(ObligationToJson(o)));
  }
  j["cases"] = nlohmann::ordered_json::array();
  for (const SuiteCaseResult& r : report.cases) {
    nlohmann::ordered_json c;
    c["line"] = r.input.line;
    c["mesh"] = r.input.mesh;
    c["from"] = r.input.from;
    c["to"] = r.input.to;
    c["strategy"] = r.input.strategy;
    c["error"] = r.error;
    c["steps"] = r.steps;
    c["verdict"] = r.error.empty()
                       ? std::string(ObligationStatusName(r.verification.verdict))
                       : "error";
    c["wall_ms"] = r.verification.wall_ms;
    c["obligations"] = nlohmann::ordered_json::array();
    for (const Obligation& o : r.verification.obligations) {
      c["obligations"].push_back(nlohmann::ordered_json::parse(ObligationToJson(o)));
    }
    j["cases"].push_back(std::move(c));
  }

  // report.md
  std::string md = "# reshard verification report\n\n";
  if (!command.empty()) absl::StrAppend(&md, "Regenerate: `", Absl(command), "`\n\n");
  absl::StrAppend(&md, "**", report.Summary(), "**\n\n");
  absl::StrAppend(&md, "## Typing-simulation lemmas\n\n| status | lemma | ms | statement |\n"
                       "|---|---|---|---|\n");
  for (const Obligation& o : report.lemmas) {
    absl::StrAppend(&md, absl::StrFormat("| %s | `%s` | %.1f | %s |\n",
                                         ObligationStatusName(o.status), o.name, o.solver_ms,
                                         Cell(o.statement)));
  }
  absl::StrAppend(&md, "\n## Plans\n\n| line | case | steps | verdict | wall ms | obligations |\n"
                       "|---|---|---|---|---|---|\n");
  for (const SuiteCaseResult& r : report.cases) {
    std::vector<std::string> obligations;
    for (const Obligation& o : r.verification.obligations) {
      obligations.push_back(absl::StrFormat("%s %s (%.1f ms)", o.name,
                                            ObligationStatusName(o.status), o.solver_ms));
    }
    absl::StrAppend(
        &md, absl::StrFormat("| %d | `%s` | %d | %s | %.1f | %s |\n", r.input.line,
                             Cell(CaseLabel(r.input)), static_cast<int>(r.steps.size()),
                             r.error.empty() ? ObligationStatusName(r.verification.verdict)
                                             : "error",
                             r.verification.wall_ms,
                             r.error.empty() ? absl::StrJoin(obligations, "; ") : Cell(r.error)));
  }
  std::string problems;
  for (const Obligation& o : report.lemmas) {
    if (!o.proved()) absl::StrAppend(&problems, "```\n", ObligationToText(o), "```\n\n");
  }
  for (const SuiteCaseResult& r : report.cases) {
    if (!r.error.empty()) {
      absl::StrAppend(&problems, "line ", r.input.line, " `", CaseLabel(r.input), "`: ", r.error,
                      "\n\n");
    }
    for (const Obligation& o : r.verification.obligations) {
      if (o.proved()) continue;
      absl::StrAppend(&problems, "line ", r.input.line, " `", CaseLabel(r.input), "`\n\n```\n",
                      ObligationToText(o), "```\n\n");
    }
  }
  if (!problems.empty()) absl::StrAppend(&md, "\n## Not proved\n\n", problems);

  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"report.json", j.dump(1) + "\n"},
        std::pair<std::string, std::string>{"report.md", md}}) {
    std::string path = absl::StrCat(dir, "/", name);
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << text;
    file.close();
    if (!file) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace reshard
