// proofs_support.h — helpers shared by the Z3 certificate tests: run a plan's steps on the
// reference interpreter (data semantics only, no declared types) and confirm a certificate's
// counterexample against the buffers.
#ifndef RESHARD_TESTS_PROOFS_SUPPORT_H_
#define RESHARD_TESTS_PROOFS_SUPPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "interp/interpreter.h"
#include "proofs/obligation.h"
#include "typesys/plan.h"

namespace reshard::testing {

// The source's canonical buffers (Materialize) with summand p of element e moved by a
// pseudo-random offset that sums to 0 over p: every partial group's sum is the canonical one,
// but a group that takes some element's summands more or less than once no longer matches it
// by coincidence, as canonical summands can ((33 + 1) * 1 == (16 + 1) * 2). Offsets are below
// 2^28 in magnitude (the last one, minus the others' sum, below 2^28 times the summands), so
// with at most 4 096 summands every group sum stays exact in doubles.
inline absl::StatusOr<DeviceBuffers> MaterializeGeneric(const Mesh& mesh,
                                                        const DistType& source) {
  absl::StatusOr<DeviceBuffers> buffers = Materialize(mesh, source);
  const int64_t summands = NumSummands(mesh, source);
  if (!buffers.ok() || summands == 1) return buffers;
  auto random = [summands](int64_t e, int64_t p) {
    uint64_t x = static_cast<uint64_t>(e * summands + p) + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return static_cast<int64_t>(x >> 35) - (int64_t{1} << 28);
  };
  auto offset = [&](int64_t e, int64_t p) {
    if (p + 1 < summands) return random(e, p);
    int64_t sum = 0;
    for (int64_t q = 0; q + 1 < summands; ++q) sum += random(e, q);
    return -sum;
  };
  for (int64_t d = 0; d < mesh.num_devices(); ++d) {
    const int64_t p = SummandIndex(mesh, source, d);
    for (double& value : (*buffers)[d].data) {
      // The canonical value (e + 1) * (p + 1) names its element (exact in a double).
      const int64_t e = static_cast<int64_t>(value) / (p + 1) - 1;
      value += static_cast<double>(offset(e, p));
    }
  }
  return buffers;
}

// Executes every step's collective (ExecuteCollective) on `buffers`, holding `source`: the
// interpreter's verdict on the data, independent of the declared step types.
inline absl::StatusOr<DeviceBuffers> ExecuteSteps(const Mesh& mesh, const DistType& source,
                                                  const std::vector<Step>& steps,
                                                  absl::StatusOr<DeviceBuffers> buffers) {
  if (!buffers.ok()) return buffers.status();
  std::vector<int64_t> received(mesh.num_devices(), 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    absl::Status status = ExecuteCollective(mesh, steps[s].op, ElementBytes(source.element_type),
                                            *buffers, received);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("step ", s + 1, ": ", status.message()));
    }
  }
  return buffers;
}

// The same from the source's canonical buffers.
inline absl::StatusOr<DeviceBuffers> ExecuteSteps(const Mesh& mesh, const DistType& source,
                                                  const std::vector<Step>& steps) {
  return ExecuteSteps(mesh, source, steps, Materialize(mesh, source));
}

// The interpreter's verdict: OK iff the buffers after the steps hold the target.
inline absl::Status InterpreterVerdict(const Mesh& mesh, const DistType& source,
                                       const DistType& target, const std::vector<Step>& steps,
                                       bool* cannot_execute) {
  absl::StatusOr<DeviceBuffers> buffers = ExecuteSteps(mesh, source, steps);
  *cannot_execute = !buffers.ok();
  if (!buffers.ok()) return buffers.status();
  return CheckBuffers(mesh, target, NumSummands(mesh, source), *buffers);
}

// "[1,2,3]" -> {1,2,3}.
inline std::vector<int64_t> ParseIndex(const std::string& text) {
  std::vector<int64_t> out;
  std::string inner = text.substr(1, text.size() - 2);
  if (inner.empty()) return out;
  for (absl::string_view part : absl::StrSplit(inner, ',')) {
    int64_t v = 0;
    if (absl::SimpleAtoi(part, &v)) out.push_back(v);
  }
  return out;
}

// Confirms a refutation on the interpreter: the device and local index the counterexample
// names really hold the wrong value (for partial targets, the target partial group's sum, on
// MaterializeGeneric's data so that wrong summands cannot sum right by coincidence), or (kind
// local_shape) the buffers have the wrong shape. Returns a failure message, or "" when
// confirmed.
inline std::string ConfirmCounterexample(const Mesh& mesh, const DistType& source,
                                         const DistType& target, const std::vector<Step>& steps,
                                         const Counterexample& cex) {
  absl::StatusOr<DeviceBuffers> canonical = ExecuteSteps(mesh, source, steps);
  if (!canonical.ok()) {
    return absl::StrCat("the interpreter cannot execute: ", canonical.status().message());
  }
  if (CheckBuffers(mesh, target, NumSummands(mesh, source), *canonical).ok()) {
    return "the interpreter finds the result correct";
  }
  absl::StatusOr<DeviceBuffers> buffers =
      ExecuteSteps(mesh, source, steps, MaterializeGeneric(mesh, source));
  if (!buffers.ok()) return absl::StrCat("the interpreter cannot execute: ", buffers.status().message());
  std::string kind = cex.Field("kind").value_or("");
  int64_t device = 0;
  if (!absl::SimpleAtoi(cex.Field("device").value_or("x"), &device)) return "no device field";
  if (kind == "local_shape") {
    return (*buffers)[device].shape != LocalShape(mesh, target)
               ? ""
               : "the buffers have the target's local shape";
  }
  std::vector<int64_t> local = ParseIndex(cex.Field("local_index").value_or("[]"));
  std::vector<int64_t> expected_global =
      ParseIndex(cex.Field("expected_global_index").value_or("[]"));
  if (expected_global != [&] {
        std::vector<int64_t> e = BlockOffset(mesh, target, device);
        for (size_t i = 0; i < e.size(); ++i) e[i] += local[i];
        return e;
      }()) {
    return "expected_global_index is not the target's element for that device and index";
  }
  // Row-major offsets.
  auto linear = [](const std::vector<int64_t>& index, const std::vector<int64_t>& shape) {
    int64_t e = 0;
    for (size_t i = 0; i < shape.size(); ++i) e = e * shape[i] + index[i];
    return e;
  };
  std::vector<int64_t> global_shape;
  for (const Dim& d : target.dims) global_shape.push_back(d.size);
  const int64_t s = NumSummands(mesh, source);
  const double expected = static_cast<double>(linear(expected_global, global_shape) + 1) *
                          static_cast<double>(s * (s + 1) / 2);
  std::vector<std::string> partial = PartialInMeshOrder(mesh, target);
  std::vector<int64_t> group =
      partial.empty() ? std::vector<int64_t>{device} : mesh.Group(device, partial);
  double actual = 0;
  for (int64_t member : group) {
    const Buffer& b = (*buffers)[member];
    actual += b.data[linear(local, b.shape)];
  }
  if (actual == expected) {
    return absl::StrCat("device ", device, " holds the right value ", actual, " at that index");
  }
  return "";
}

}  // namespace reshard::testing

#endif  // RESHARD_TESTS_PROOFS_SUPPORT_H_
