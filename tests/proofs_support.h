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

// Executes every step's collective (ExecuteCollective) on the source's canonical buffers: the
// interpreter's verdict on the data, independent of the declared step types.
inline absl::StatusOr<DeviceBuffers> ExecuteSteps(const Mesh& mesh, const DistType& source,
                                                  const std::vector<Step>& steps) {
  absl::StatusOr<DeviceBuffers> buffers = Materialize(mesh, source);
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
// names really hold the wrong value (for partial targets, the target partial group's sum), or
// (kind local_shape) the buffers have the wrong shape. Returns a failure message, or "" when
// confirmed.
inline std::string ConfirmCounterexample(const Mesh& mesh, const DistType& source,
                                         const DistType& target, const std::vector<Step>& steps,
                                         const Counterexample& cex) {
  absl::StatusOr<DeviceBuffers> buffers = ExecuteSteps(mesh, source, steps);
  if (!buffers.ok()) {
    return absl::StrCat("the interpreter cannot execute: ", buffers.status().message());
  }
  if (CheckBuffers(mesh, target, NumSummands(mesh, source), *buffers).ok()) {
    return "the interpreter finds the result correct";
  }
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
  const double expected =
      CanonicalValue(linear(expected_global, global_shape), NumSummands(mesh, source));
  AxisList partial = PartialInMeshOrder(mesh, target);
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
