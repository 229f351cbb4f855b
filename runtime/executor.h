// executor.h — runs reshard plans on real MPI ranks, one rank per mesh device.
//
//   absl::StatusOr<std::unique_ptr<Executor>> executor = Executor::Create(mesh, MPI_COMM_WORLD);
//   absl::StatusOr<PreparedPlan> prepared = (*executor)->Prepare(plan);   // collective
//   LocalArray buffer(LocalShape(mesh, plan.source), plan.source.element_type);
//   ... fill this rank's block of plan.source ...
//   ExecutionStats stats;
//   absl::Status s = (*executor)->Run(*prepared, buffer, &stats);         // collective
//   // buffer now holds this rank's block of plan.target.
//
// Rank r of the communicator is mesh device r (row-major linear id, DESIGN §2). Each step maps
// to one MPI collective on a sub-communicator of the step's mesh_axes (docs/runtime.md):
//   all_slice          local copy of the own piece (no communication)
//   all_gather         MPI_Allgather, then unpack when gather_axis has non-unit outer dims
//   all_to_all         pack along split_axis, MPI_Alltoall, unpack along concat_axis
//   all_reduce         MPI_Allreduce in place
//   reduce_scatter     pack along scatter_axis, MPI_Reduce_scatter_block
//   collective_permute MPI_Sendrecv (MPI_PROC_NULL without partner; non-targets keep their data)
//   all_to_all_v       box packing, MPI_Alltoallv on the whole communicator
// Sub-communicators are made once per ordered axis list with MPI_Comm_split (color = the
// group's first device, key = index over the listed axes, so sub-communicator rank = group
// order) and cached for the executor's lifetime.
//
// Sub-axes (`y:(m)k`, typesys/sub_axis.h) are accepted wherever axes are: a collective over
// y:(2)2 on x=2,y=4 runs on the devices that agree on x and on the other digit of y
// (Mesh::Group), which are the groups of axis y:(2)2 of the refined mesh x=2,y:(1)2=2,y:(2)2=2
// with the same device numbering — so rank r is still device r and no plan needs rewriting.
//
// Element types: data moves as bytes. Sums use MPI_FLOAT, MPI_DOUBLE, MPI_INT8_T, MPI_INT32_T,
// MPI_INT64_T with MPI_SUM; f16 and bf16 are carried as MPI_UINT16_T and summed by a
// user-defined commutative MPI_Op that converts each pair through float and rounds back to
// nearest even (so partial sums round once per addition, as on accelerators).
//
// Every method that communicates is collective: all ranks must call it with the same
// arguments (the same plan), in the same order. Validation uses only information every rank
// has (the plan), so a bad plan fails on every rank alike instead of hanging some of them.
#ifndef RESHARD_RUNTIME_EXECUTOR_H_
#define RESHARD_RUNTIME_EXECUTOR_H_

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/local_array.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// Per-rank measurements of one Run.
struct ExecutionStats {
  // Bytes this rank received from other ranks, summed over steps. all_gather, all_to_all,
  // collective_permute and all_to_all_v: the receive counts passed to MPI (own piece
  // excluded). all_reduce and reduce_scatter: DESIGN §2's ring figure on the actual buffer,
  // since what MPI moves inside a reduction depends on its algorithm.
  int64_t bytes_received = 0;
  // High-water mark of the bytes of buffers the executor held on this rank: the input, every
  // output and every pack/unpack scratch buffer, each counted from allocation to release.
  // Buffers MPI allocates internally are not counted (docs/runtime.md "Memory").
  int64_t peak_bytes = 0;
};

// A plan checked and bound to an executor's communicators. Opaque; from Executor::Prepare.
class PreparedPlan {
 public:
  const Plan& plan() const { return plan_; }

 private:
  friend class Executor;
  struct PreparedStep;
  Plan plan_;
  std::vector<std::shared_ptr<const PreparedStep>> steps_;
};

class Executor {
 public:
  // Collective over `comm`. InvalidArgument (on every rank) when the communicator's size is not
  // mesh.num_devices(). The executor duplicates `comm` (its traffic never mixes with the
  // caller's) and must be destroyed before MPI_Finalize.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(const Mesh& mesh, MPI_Comm comm);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  int64_t device() const { return device_; }
  const Mesh& mesh() const { return mesh_; }

  // Collective. Type-checks the plan (CheckSteps from plan.source; the result must equal
  // plan.target), creates (or reuses) the communicators of its steps, and precomputes each
  // step's local work. InvalidArgument when the plan is not on this executor's mesh, does not
  // type-check, or a single message would exceed MPI's int count (2^31 - 1 bytes).
  absl::StatusOr<PreparedPlan> Prepare(const Plan& plan);

  // Collective. Runs the plan on `buffer`, which must hold this rank's block of
  // plan.source (local shape and element type; InvalidArgument otherwise, before any
  // communication); on return it holds this rank's block of plan.target. The executor takes
  // over the buffer's memory accounting for the run. `stats` may be null.
  absl::Status Run(const PreparedPlan& prepared, LocalArray& buffer, ExecutionStats* stats);

  // Collective over the groups of `axes` (axes or sub-axes, distinct, not overlapping;
  // InvalidArgument otherwise): replaces `buffer` by the elementwise sum over its group
  // (MPI_Allreduce in place with the element type's sum). Used to check partial results.
  absl::Status AllReduce(const AxisList& axes, LocalArray& buffer);

  // The sub-communicator of `axes` (valid axis references of mesh(), sub-axes included; made
  // on first use, collective then). Rank in it = index of this device in its group.
  MPI_Comm Communicator(const AxisList& axes);

 private:
  Executor(const Mesh& mesh, MPI_Comm comm, int64_t device);

  MPI_Datatype SumType(ElementType type) const;
  MPI_Op SumOp(ElementType type) const;

  Mesh mesh_;
  MPI_Comm world_ = MPI_COMM_NULL;
  int64_t device_ = 0;
  std::map<AxisList, MPI_Comm> communicators_;
  MPI_Op half_sum_ = MPI_OP_NULL;
  MPI_Op bfloat16_sum_ = MPI_OP_NULL;
  MemoryTracker tracker_;
};

}  // namespace reshard

#endif  // RESHARD_RUNTIME_EXECUTOR_H_
