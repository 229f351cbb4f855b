#include "proofs/obligation.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace reshard {

std::string_view ObligationStatusName(ObligationStatus status) {
  switch (status) {
    case ObligationStatus::kProved:
      return "proved";
    case ObligationStatus::kRefuted:
      return "refuted";
    case ObligationStatus::kUnknown:
      return "unknown";
    case ObligationStatus::kError:
      return "error";
  }
  return "error";
}

std::optional<std::string> Counterexample::Field(std::string_view name) const {
  for (const auto& [key, value] : fields) {
    if (key == name) return value;
  }
  return std::nullopt;
}

namespace {

// Interrupts `ctx` after `timeout_ms` (0: never; at most ProveOptions::kMaxTimeoutMs) unless
// destroyed first.
class Watchdog {
 public:
  Watchdog(z3::context& ctx, int64_t timeout_ms) {
    if (timeout_ms <= 0) return;
    const std::chrono::milliseconds wait(std::min(timeout_ms, ProveOptions::kMaxTimeoutMs));
    thread_ = std::thread([this, &ctx, wait] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!done_cv_.wait_for(lock, wait, [this] { return done_; })) {
        fired_ = true;
        ctx.interrupt();
      }
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

  // Whether it has interrupted the context. A check it interrupted may still return sat or
  // unsat (Z3 4.8.12 was seen returning sat with a meaningless model), so such a result proves
  // and refutes nothing.
  bool fired() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fired_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;
};

// Runs the query `violation ∧ assumptions`; unsat means the obligation holds.
Obligation Run(std::string name, std::string statement, const z3::expr& violation,
               const ProveOptions& options, const CounterexampleFn& explain,
               absl::Span<const z3::expr> assumptions) {
  Obligation o;
  o.name = std::move(name);
  o.statement = std::move(statement);
  try {
    z3::context& ctx = violation.ctx();
    z3::solver solver = options.simple_solver ? z3::solver(ctx, z3::solver::simple())
                                              : z3::solver(ctx);
    for (const z3::expr& a : assumptions) solver.add(a);
    solver.add(violation);
    if (options.keep_encoding) o.encoding = solver.to_smt2();
    auto start = std::chrono::steady_clock::now();
    z3::check_result result;
    bool interrupted = false;
    {
      // Z3 4.8.12's own "timeout" parameter runs a scoped_timer whose thread pool can
      // deadlock (Z3Prover/z3#5371, seen here as a hang in the lemma tests), so the timeout
      // is our own watchdog: it interrupts the context (Z3_interrupt is thread-safe), and the
      // check returns unknown with reason "canceled".
      Watchdog watchdog(ctx, options.timeout_ms);
      result = solver.check();
      interrupted = watchdog.fired();
    }
    o.solver_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                            start)
                      .count();
    if (interrupted) result = z3::unknown;
    switch (result) {
      case z3::unsat:
        o.status = ObligationStatus::kProved;
        break;
      case z3::sat: {
        o.status = ObligationStatus::kRefuted;
        z3::model model = solver.get_model();
        if (explain) {
          o.counterexample = explain(model);
        } else {
          std::ostringstream text;
          text << model;
          o.counterexample = Counterexample{text.str(), {}};
        }
        break;
      }
      case z3::unknown: {
        o.status = ObligationStatus::kUnknown;
        const std::string reason = interrupted ? "canceled" : solver.reason_unknown();
        o.message = reason == "timeout" || reason == "canceled"
                        ? absl::StrCat("timeout after ", options.timeout_ms, " ms")
                        : absl::StrCat("Z3 returned unknown: ", reason);
        break;
      }
    }
  } catch (const z3::exception& e) {
    o.status = ObligationStatus::kError;
    o.message = absl::StrCat("Z3 error: ", e.msg());
  } catch (const std::exception& e) {
    o.status = ObligationStatus::kError;
    o.message = absl::StrCat("error while building the counterexample: ", e.what());
  }
  return o;
}

}  // namespace

Obligation ProveClaim(std::string name, std::string statement, const z3::expr& claim,
                      const ProveOptions& options, const CounterexampleFn& explain,
                      absl::Span<const z3::expr> assumptions) {
  try {
    return Run(std::move(name), std::move(statement), !claim, options, explain, assumptions);
  } catch (const z3::exception& e) {  // Building the negation itself can throw.
    Obligation o;
    o.name = std::move(name);
    o.statement = std::move(statement);
    o.status = ObligationStatus::kError;
    o.message = absl::StrCat("Z3 error: ", e.msg());
    return o;
  }
}

Obligation RefuteViolation(std::string name, std::string statement, const z3::expr& violation,
                           const ProveOptions& options, const CounterexampleFn& explain,
                           absl::Span<const z3::expr> assumptions) {
  return Run(std::move(name), std::move(statement), violation, options, explain, assumptions);
}

Obligation ConcreteObligation(std::string name, std::string statement, bool holds,
                              std::optional<Counterexample> counterexample) {
  Obligation o;
  o.name = std::move(name);
  o.statement = std::move(statement);
  o.status = holds ? ObligationStatus::kProved : ObligationStatus::kRefuted;
  if (!holds) o.counterexample = std::move(counterexample);
  return o;
}

std::string ObligationToJson(const Obligation& o, bool with_encoding) {
  nlohmann::ordered_json j;
  j["name"] = o.name;
  j["statement"] = o.statement;
  j["status"] = std::string(ObligationStatusName(o.status));
  // Milliseconds with microsecond resolution keep the report stable to read.
  j["solver_ms"] = static_cast<double>(static_cast<int64_t>(o.solver_ms * 1000)) / 1000;
  j["message"] = o.message;
  if (o.counterexample) {
    nlohmann::ordered_json fields = nlohmann::ordered_json::object();
    for (const auto& [key, value] : o.counterexample->fields) fields[key] = value;
    j["counterexample"] = {{"text", o.counterexample->text}, {"fields", fields}};
  } else {
    j["counterexample"] = nullptr;
  }
  if (with_encoding) j["encoding"] = o.encoding;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ObligationToText(const Obligation& o) {
  std::string out = absl::StrFormat("%-8s %s  (%.1f ms)\n  %s\n", ObligationStatusName(o.status),
                                    o.name, o.solver_ms, o.statement);
  if (!o.message.empty()) absl::StrAppend(&out, "  ", o.message, "\n");
  if (o.counterexample) {
    absl::StrAppend(&out, "  counterexample: ", o.counterexample->text, "\n");
    for (const auto& [key, value] : o.counterexample->fields) {
      absl::StrAppend(&out, "    ", key, ": ", value, "\n");
    }
  }
  return out;
}

}  // namespace reshard
