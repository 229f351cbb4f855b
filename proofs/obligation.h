// obligation.h — proof obligations: a named claim, its SMT encoding, and what Z3 said.
//
// Every certificate reshard produces (plan translation validation, typing-simulation lemmas,
// synthesizer guarantees, and later MLIR emission, MPI execution and the partitioning
// pipeline) is a list of Obligations. An obligation is *proved* only when Z3 answered unsat
// for the negation of its claim; `unknown` (timeout, incompleteness) is never proved.
//
//   #include <z3++.h>                       // only code that builds formulas needs Z3
//   z3::context ctx;
//   z3::expr x = ctx.int_const("x");
//   reshard::Obligation o = reshard::ProveClaim(
//       "x_plus_zero", "x + 0 = x for every integer x", x + 0 == x, {.timeout_ms = 1000});
//   // o.status == ObligationStatus::kProved; o.encoding is SMT-LIB2 for the negated claim.
//
// This header does not include <z3++.h> (it forward-declares the Z3 classes it mentions), so
// tools that only print or serialize obligations need no Z3 headers; the functions that take
// z3 objects are defined in proofs/ and link libz3. No z3::exception escapes them.
#ifndef RESHARD_PROOFS_OBLIGATION_H_
#define RESHARD_PROOFS_OBLIGATION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace z3 {
class context;
class expr;
class model;
}  // namespace z3

namespace reshard {

enum class ObligationStatus {
  kProved,   // Z3 answered unsat for the negated claim.
  kRefuted,  // A counterexample exists (Z3 sat, or a concrete check failed).
  kUnknown,  // Z3 answered unknown or timed out. Never counts as proved.
  kError,    // The obligation could not be stated (e.g. the plan cannot execute) or Z3 threw.
};

// "proved", "refuted", "unknown", "error".
std::string_view ObligationStatusName(ObligationStatus status);

// A witness against a claim: a human sentence plus the named values it is built from
// (e.g. {"device", "5"}, {"coordinates", "x=1,y=1"}, {"expected_global_index", "[3,0]"}), in
// the order they should be shown.
struct Counterexample {
  std::string text;
  std::vector<std::pair<std::string, std::string>> fields;

  // The value of field `name`, or nullopt.
  std::optional<std::string> Field(std::string_view name) const;
};

struct Obligation {
  std::string name;       // Stable identifier, e.g. "lemma.all_gather.index".
  std::string statement;  // The claim in words (or mathematical notation).
  std::string encoding;   // SMT-LIB2 text of the query (negated claim); empty if none was run.
  ObligationStatus status = ObligationStatus::kUnknown;
  double solver_ms = 0;   // Wall time spent in Z3 (0 for purely concrete checks).
  std::optional<Counterexample> counterexample;  // Set when status == kRefuted.
  std::string message;    // Why, for kUnknown and kError (e.g. "timeout after 1000 ms").

  bool proved() const { return status == ObligationStatus::kProved; }
};

struct ProveOptions {
  // Z3's per-query timeout. 0 (or less) means no timeout; values above kMaxTimeoutMs (about
  // two years) mean kMaxTimeoutMs, as a clock deadline further out would overflow.
  int64_t timeout_ms = 10000;
  static constexpr int64_t kMaxTimeoutMs = int64_t{1} << 36;
  // Keep the SMT-LIB2 text in Obligation::encoding (it can be large for big permutes).
  bool keep_encoding = true;
  // Z3's plain SMT kernel (z3::solver::simple()) instead of the default combined solver:
  // ~8x cheaper to create, and enough for quantifier-free linear queries such as plan
  // certificates. The nonlinear lemmas use the default (its nlsat tactic).
  bool simple_solver = false;
  // Where CertifyPlan and SynthesizerObligations build their formulas; nullptr: each creates
  // its own. VerifyPlan shares one per plan, because creating a context is most of a small
  // plan's fixed cost. Not owned; must outlive the call.
  z3::context* context = nullptr;
};

// Builds a counterexample from a model of the negated claim.
using CounterexampleFn = std::function<Counterexample(const z3::model&)>;

// Proves `claim` (a Boolean z3 expression whose free constants are universally quantified):
// asserts its negation and checks satisfiability. unsat -> kProved; sat -> kRefuted with
// `explain(model)` (or the model's text when `explain` is empty); unknown -> kUnknown with
// Z3's reason. A z3::exception (or one thrown by `explain`) becomes kError with its message.
// `assumptions` are asserted as they are (side conditions such as variable ranges).
Obligation ProveClaim(std::string name, std::string statement, const z3::expr& claim,
                      const ProveOptions& options, const CounterexampleFn& explain = {},
                      absl::Span<const z3::expr> assumptions = {});

// The same, but the caller states the violation directly: `violation` is asserted (together
// with `assumptions`) and must be unsatisfiable for the obligation to be proved.
Obligation RefuteViolation(std::string name, std::string statement, const z3::expr& violation,
                           const ProveOptions& options, const CounterexampleFn& explain = {},
                           absl::Span<const z3::expr> assumptions = {});

// An obligation decided without a solver (a concrete fact was computed and checked), e.g. a
// term-count mismatch found before any query is built.
Obligation ConcreteObligation(std::string name, std::string statement, bool holds,
                              std::optional<Counterexample> counterexample = std::nullopt);

// One-line JSON object: {"name","statement","status","solver_ms","message",
// "counterexample":{"text","fields":{...}}|null,"encoding"?}. The encoding is included only
// when `with_encoding`.
std::string ObligationToJson(const Obligation& obligation, bool with_encoding = false);

// Human-readable multi-line form: status, name, statement, time, and the counterexample.
std::string ObligationToText(const Obligation& obligation);

}  // namespace reshard

#endif  // RESHARD_PROOFS_OBLIGATION_H_
