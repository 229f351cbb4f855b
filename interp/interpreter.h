// interpreter.h — the reference interpreter: per-device buffers and real data movement.
//
// The test oracle for every synthesizer. It never consults the typing rules: collectives act
// on the buffers exactly as DESIGN §2 describes (groups, concatenation in group order, sums),
// and the result is compared with the target type's slicing of the global array.
//
//   absl::StatusOr<reshard::RunReport> report = reshard::RunPlan(plan);
//   // report->ok: every device holds exactly what plan.target assigns it.
//
// Canonical data: the global array's element with row-major linear index e has value e + 1.
// A partial type with P > 1 summands splits it into pseudo-random summands SummandValue(e, p,
// kSummandModulus) (typesys/dist_type.h), so the global value is CanonicalValue(e, P), their
// sum. A misplaced element, or a group that counts one summand twice and misses another, then
// sums right only by a coincidence of about 2^-20 per element: with a pattern such as
// (e + 1)(p + 1) a permute that swaps summands 0 and 3 for two copies each of 1 and 2 would
// pass (1 + 4 == 2 + 3; tests/interp_test.cc, RunPlanTest.WrongSummandsDoNotSumRight).
#ifndef RESHARD_INTERP_INTERPRETER_H_
#define RESHARD_INTERP_INTERPRETER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// A dense row-major local array.
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<double> data;

  bool operator==(const Buffer&) const = default;
};

// One buffer per device, indexed by linear device id.
using DeviceBuffers = std::vector<Buffer>;

// The interpreter refuses arrays larger than this many global elements (times summands).
// It also refuses meshes of more than 4096 devices, and any state whose buffers together
// exceed 2^26 elements (replicated layouts, or all_gathers of an ill-typed plan that would
// grow buffers without bound); the message says which limit was hit.
inline constexpr int64_t kMaxInterpretedElements = int64_t{1} << 24;

// The global value of element e of the canonical array of a source with `summands` summands:
// e + 1 for one, else the sum of its summands' SummandValue(e, p, kSummandModulus).
double CanonicalValue(int64_t element, int64_t summands);

// The canonical global array of `type` distributed as `type` says (summands for partial
// types). InvalidArgument when the mesh is empty, the type is invalid on mesh, or the result
// is too large to interpret.
absl::StatusOr<DeviceBuffers> Materialize(const Mesh& mesh, const DistType& type);

// Executes one collective on the buffers (element size `element_bytes` for accounting).
// Adds each device's received bytes to `bytes_received` (sized num_devices), computed from the
// actual buffer sizes. InvalidArgument when the buffers cannot take the op (a dimension out of
// range, a size not divisible by the group size, mismatched shapes within a group, unknown,
// repeated or missing mesh_axes, bad permute pairs, attributes the kind does not take, a
// buffer whose shape disagrees with its data, a wrong number of buffers); on error neither
// `buffers` nor `bytes_received` is changed.
absl::Status ExecuteCollective(const Mesh& mesh, const Collective& op, int64_t element_bytes,
                               DeviceBuffers& buffers, std::vector<int64_t>& bytes_received);

// OK when `buffers` hold exactly `type`'s canonical data: every device has type's local shape
// and its block of the global array; for partial types, the sum over each partial group
// (Mesh::Group over the partial axes) equals the group's block.
// The global values are those of a source with `source_summands` summands: element e is
// CanonicalValue(e, source_summands).
// InvalidArgument naming the first wrong device (id and coordinates), local index, expected and
// actual value; also for an invalid type or source_summands < 1.
absl::Status CheckBuffers(const Mesh& mesh, const DistType& type, int64_t source_summands,
                          const DeviceBuffers& buffers);

struct RunReport {
  bool ok = false;
  std::string message;  // The first mismatch when !ok.
  // Measured from the buffers, to compare with the plan's metrics.
  int64_t peak_local_bytes = 0;
  int64_t bytes_received_max = 0;
  int64_t bytes_received_total = 0;
};

// Materializes plan.source, executes every step's op, and checks the buffers after each step
// against the step's declared type and the final buffers against plan.target (the step types
// are data to check, never used to execute). A wrong result, a declared type the buffers do
// not hold, or a type that changes the element type or global shape is reported in RunReport
// (ok = false, first problem in `message`; the measurements still cover every step), not as
// an error. peak_local_bytes is over the source and every step; bytes are per device summed
// over the steps. InvalidArgument when the source or target is invalid, the plan cannot
// execute (see ExecuteCollective; the message names the step), or it is too large.
absl::StatusOr<RunReport> RunPlan(const Plan& plan);

}  // namespace reshard

#endif  // RESHARD_INTERP_INTERPRETER_H_
