// verify.h — whole-plan verification and the verification report.
//
// VerifyPlan bundles the per-plan obligations: the translation-validation certificate
// (plan.correct, plan_certificate.h) and the synthesizer's promises (lemmas.h). RunSuite
// synthesizes and verifies every case of a suite file and, with the typing lemmas, yields a
// SuiteReport that WriteReport renders as report.md and report.json.
//
//   absl::StatusOr<PlanVerification> v = reshard::VerifyPlan(plan, {});
//   // v->verdict == ObligationStatus::kProved when every obligation is proved.
//
//   absl::StatusOr<std::vector<SuiteCase>> cases = reshard::ParseSuite(text);
//   SuiteReport report = reshard::RunSuite(*cases, {});
//   absl::Status s = reshard::WriteReport(report, "build/verification");
//
// Suite format: one case per line, `mesh | from | to [| strategy]`; `#` starts a comment;
// blank lines are ignored. Strategy defaults to normal. A line without '|' may separate its
// fields with ';' instead (bench/cases.txt's `mesh ; from ; to`).
#ifndef RESHARD_PROOFS_VERIFY_H_
#define RESHARD_PROOFS_VERIFY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proofs/obligation.h"
#include "typesys/plan.h"

namespace reshard {

struct VerifyOptions {
  ProveOptions prove;
  // Check plan.memory_bound. Baselines that do not promise it (naive, gspmd) turn it off;
  // see StrategyIsMemoryBounded.
  bool memory_bounded = true;
};

// False for the strategies documented as not memory-bounded ("naive", "gspmd", "greedy",
// "direct", "auto"); true for every other name (a new strategy is held to the bound until it
// says otherwise).
bool StrategyIsMemoryBounded(std::string_view strategy);

struct PlanVerification {
  // plan.correct first, then the synthesizer obligations (when the plan can execute).
  std::vector<Obligation> obligations;
  // kError if any obligation is kError, else kRefuted if any is refuted, else kUnknown if any
  // is unknown, else kProved.
  ObligationStatus verdict = ObligationStatus::kUnknown;
  // Wall time of the whole verification (building formulas included), in ms.
  double wall_ms = 0;
};

// The combined status of `obligations` (see PlanVerification::verdict); kProved for none.
ObligationStatus CombinedStatus(const std::vector<Obligation>& obligations);

// Verifies `plan` (steps are not type-checked first: a plan read from a file is validated by
// translation validation, the declared types only explain counterexamples). InvalidArgument
// for the cases of CertifyPlan.
absl::StatusOr<PlanVerification> VerifyPlan(const Plan& plan, const VerifyOptions& options);

struct SuiteCase {
  int line = 0;  // 1-based line in the suite file.
  std::string mesh;
  std::string from;
  std::string to;
  std::string strategy = "normal";
};

// Parses the suite format (see the file comment). InvalidArgument naming the line of a
// malformed case (wrong number of fields, an empty field).
absl::StatusOr<std::vector<SuiteCase>> ParseSuite(std::string_view text);

struct SuiteCaseResult {
  SuiteCase input;
  std::string error;             // Non-empty when the case could not be parsed/synthesized.
  std::vector<std::string> steps;  // Readable steps of the synthesized plan.
  PlanVerification verification;
};

struct SuiteReport {
  std::vector<Obligation> lemmas;
  std::vector<SuiteCaseResult> cases;
  double total_ms = 0;
  // Per-plan verification wall times (ms), sorted, and their percentiles.
  std::vector<double> plan_ms;
  double p50_ms = 0;
  double p99_ms = 0;

  // True when every lemma and every case's obligations are proved and no case failed.
  bool AllProved() const;
  // e.g. "312 obligations: 312 proved, 0 refuted, 0 unknown, 0 error; 45 plans; ..."
  std::string Summary() const;
};

// Proves the lemmas, then synthesizes (with the case's strategy) and verifies every case.
// A case that cannot be parsed or synthesized is recorded with its error (and makes
// AllProved false); it does not stop the suite.
SuiteReport RunSuite(const std::vector<SuiteCase>& cases, const VerifyOptions& options);

// Writes `dir`/report.md and `dir`/report.json (creating `dir`). InvalidArgument when the
// directory or files cannot be written.
absl::Status WriteReport(const SuiteReport& report, const std::string& dir,
                         std::string_view command = "");

}  // namespace reshard

#endif  // RESHARD_PROOFS_VERIFY_H_
