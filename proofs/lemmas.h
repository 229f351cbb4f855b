// lemmas.h — rule-level typing-simulation lemmas and per-plan synthesizer obligations.
//
// The typing rules of typesys/collective.cc say which type a collective produces; the
// interpreter (and the plan certificate) execute the collective's data semantics. The lemmas
// prove, once and for symbolic sizes, that the two agree: running a collective's backward
// index map on a value distributed as τ yields a value distributed exactly as the rule's
// result type says. They are stated in docs/proofs.md next to the function names here.
//
//   std::vector<reshard::Obligation> lemmas = reshard::ProveTypingLemmas({});
//   // every lemma.*: kProved (or kUnknown if Z3 gave up: never counted as proved)
//
//   absl::StatusOr<std::vector<Obligation>> o =
//       reshard::SynthesizerObligations(plan, certificate.local_shapes,
//                                       /*memory_bounded=*/true, {});
//   // plan.memory_bound, plan.ends_at_target, plan.bytes_at_least_lower_bound
#ifndef RESHARD_PROOFS_LEMMAS_H_
#define RESHARD_PROOFS_LEMMAS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "proofs/obligation.h"
#include "typesys/plan.h"

namespace reshard {

// Proves every typing-simulation lemma (names `lemma.<rule>.<fact>`; see docs/proofs.md).
// Never fails: a lemma Z3 cannot decide within options.timeout_ms is kUnknown.
std::vector<Obligation> ProveTypingLemmas(const ProveOptions& options);

// The synthesizer's per-plan promises, encoded over the plan's concrete numbers:
//   plan.ends_at_target              the last declared type is plan.target and the buffers'
//                                    actual final local shape is the target's;
//   plan.memory_bound                (only when `memory_bounded`) every actual local size,
//                                    times the element size, is <= max(source, target) local
//                                    bytes;
//   plan.bytes_at_least_lower_bound  total bytes received (from the actual shapes and the
//                                    DESIGN §2 table) >= LowerBoundBytesTotal.
// `local_shapes` are the actual shapes from CertifyPlan (source first, one per step).
// InvalidArgument when local_shapes does not have steps + 1 entries.
absl::StatusOr<std::vector<Obligation>> SynthesizerObligations(
    const Plan& plan, const std::vector<std::vector<int64_t>>& local_shapes, bool memory_bounded,
    const ProveOptions& options);

}  // namespace reshard

#endif  // RESHARD_PROOFS_LEMMAS_H_
