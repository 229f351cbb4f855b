// executor.cc — see executor.h and docs/runtime.md.
//
// Every step follows the same discipline: allocate what the step needs through the tracker,
// release the input as soon as nothing reads it any more, and release scratch right after
// unpacking, so that ExecutionStats::peak_bytes is the true high-water mark of this code's
// buffers (docs/runtime.md lists it per collective).
#include "runtime/executor.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/local_array.h"
#include "runtime/pack.h"
#include "typesys/check.h"
#include "typesys/collective.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"

namespace reshard {

// Everything a rank needs to run one step without recomputing it from types.
struct PreparedPlan::PreparedStep {
  CollectiveKind kind = CollectiveKind::kAllSlice;
  ElementType element_type = ElementType::kF32;
  int64_t element_bytes = 0;
  std::vector<int64_t> in_shape;
  std::vector<int64_t> out_shape;
  int dim = -1;
  int split_dim = -1;
  // Group collectives: the sub-communicator, group size and this rank's index in the group.
  MPI_Comm comm = MPI_COMM_NULL;
  int64_t k = 1;
  int64_t index = 0;
  // collective_permute: partners on the world communicator.
  int send_to = MPI_PROC_NULL;
  int receive_from = MPI_PROC_NULL;
  // all_to_all_v: this rank's transfers, sends ordered by target and receives by source
  // (each stable, i.e. in plan order within a pair, which both ends agree on).
  std::vector<Transfer> local_copies;
  std::vector<Transfer> sends;
  std::vector<Transfer> receives;
  std::vector<int> send_counts, send_displs, receive_counts, receive_displs;
  int64_t send_bytes = 0;
  int64_t receive_bytes = 0;
};

namespace {

constexpr int kPermuteTag = 7;

void HalfSum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FloatToHalf(HalfToFloat(a[i]) + HalfToFloat(b[i]));
}

void BFloat16Sum(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    b[i] = FloatToBFloat16(BFloat16ToFloat(a[i]) + BFloat16ToFloat(b[i]));
  }
}

int64_t Volume(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// MPI counts are ints; one message beyond that would need derived datatypes (docs/runtime.md).
absl::Status CheckCount(int64_t count, size_t step, const Collective& op, const char* what) {
  if (count > INT_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step ", step, " (", ToString(op), "): ", what, " of ", count,
        " exceeds MPI's int count limit (2^31 - 1); use more devices or a smaller array"));
  }
  return absl::OkStatus();
}

// A tracked scratch buffer of `bytes` (empty for 0, so that zero-byte messages allocate nothing).
LocalArray Scratch(int64_t bytes, MemoryTracker* tracker) {
  if (bytes == 0) return LocalArray();
  return LocalArray({bytes}, ElementType::kI8, tracker);
}

// MPI wants a non-null pointer even for zero counts on some implementations.
std::byte* DataOrDummy(LocalArray& array) {
  static std::byte dummy[1];
  return array.empty() ? dummy : array.data();
}

}  // namespace

Executor::Executor(const Mesh& mesh, MPI_Comm comm, int64_t device)
    : mesh_(mesh), world_(comm), device_(device) {
  MPI_Op_create(&HalfSum, /*commute=*/1, &half_sum_);
  MPI_Op_create(&BFloat16Sum, /*commute=*/1, &bfloat16_sum_);
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(const Mesh& mesh, MPI_Comm comm) {
  if (mesh.num_axes() == 0) return absl::InvalidArgumentError("the mesh has no axes");
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  if (size != mesh.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh ", mesh.ToString(), " has ", mesh.num_devices(), " devices but MPI runs ", size,
        " ranks; launch with mpirun -np ", mesh.num_devices()));
  }
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &world);
  return std::unique_ptr<Executor>(new Executor(mesh, world, rank));
}

Executor::~Executor() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // Too late to free anything; the process is ending.
  for (auto& [axes, comm] : communicators_) MPI_Comm_free(&comm);
  if (half_sum_ != MPI_OP_NULL) MPI_Op_free(&half_sum_);
  if (bfloat16_sum_ != MPI_OP_NULL) MPI_Op_free(&bfloat16_sum_);
  MPI_Comm_free(&world_);
}

MPI_Comm Executor::Communicator(const AxisList& axes) {
  auto it = communicators_.find(axes);
  if (it != communicators_.end()) return it->second;
  // color: which group. Mesh::Group varies exactly the digits `axes` name (whole axes or
  // sub-axes) and orders the group by IndexOver(., axes), so its first device — the one whose
  // digits of `axes` are all 0 — identifies the group; devices agreeing on every other digit
  // share it. key: position in the group, so sub-communicator rank == IndexOver(device, axes).
  const int color = static_cast<int>(mesh_.Group(device_, axes).front());
  const int key = static_cast<int>(mesh_.IndexOver(device_, axes));
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(world_, color, key, &comm);
  int rank = -1;
  MPI_Comm_rank(comm, &rank);
  RESHARD_CHECK(rank == key) << "sub-communicator rank " << rank << " != group index " << key;
  communicators_.emplace(axes, comm);
  return comm;
}

MPI_Datatype Executor::SumType(ElementType type) const {
  switch (type) {
    case ElementType::kF32:
      return MPI_FLOAT;
    case ElementType::kF64:
      return MPI_DOUBLE;
    case ElementType::kBF16:
    case ElementType::kF16:
      return MPI_UINT16_T;
    case ElementType::kI8:
      return MPI_INT8_T;
    case ElementType::kI32:
      return MPI_INT32_T;
    case ElementType::kI64:
      return MPI_INT64_T;
  }
  RESHARD_CHECK(false) << "unknown element type";
  return MPI_DATATYPE_NULL;
}

MPI_Op Executor::SumOp(ElementType type) const {
  if (type == ElementType::kF16) return half_sum_;
  if (type == ElementType::kBF16) return bfloat16_sum_;
  return MPI_SUM;
}

absl::StatusOr<PreparedPlan> Executor::Prepare(const Plan& plan) {
  if (!(plan.mesh == mesh_)) {
    return absl::InvalidArgumentError(absl::StrCat("the plan is for mesh ", plan.mesh.ToString(),
                                                   ", the executor runs ", mesh_.ToString()));
  }
  if (absl::Status s = CheckSteps(mesh_, plan.source, plan.steps); !s.ok()) return s;
  if (!(plan.result() == plan.target)) {
    return absl::InvalidArgumentError(absl::StrCat("the plan ends at ", ToString(plan.result()),
                                                   ", not at its target ",
                                                   ToString(plan.target)));
  }
  PreparedPlan prepared;
  prepared.plan_ = plan;
  const int64_t n = mesh_.num_devices();
  const int64_t eb = ElementBytes(plan.source.element_type);
  const DistType* in = &plan.source;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    const Collective& op = step.op;
    auto s = std::make_shared<PreparedPlan::PreparedStep>();
    s->kind = op.kind;
    s->element_type = plan.source.element_type;
    s->element_bytes = eb;
    s->in_shape = LocalShape(mesh_, *in);
    s->out_shape = LocalShape(mesh_, step.type);
    s->dim = static_cast<int>(op.dim);
    s->split_dim = static_cast<int>(op.split_dim);
    const int64_t in_bytes = Volume(s->in_shape) * eb;
    const int64_t in_elements = Volume(s->in_shape);
    if (!op.mesh_axes.empty()) {
      s->comm = Communicator(op.mesh_axes);
      s->k = mesh_.GroupSize(op.mesh_axes);
      s->index = mesh_.IndexOver(device_, op.mesh_axes);
    }
    absl::Status count_ok;
    switch (op.kind) {
      case CollectiveKind::kAllSlice:
        break;
      case CollectiveKind::kAllGather:
        count_ok = CheckCount(in_bytes, i, op, "a per-rank message of bytes");
        break;
      case CollectiveKind::kAllToAll:
        count_ok = CheckCount(in_bytes / s->k, i, op, "a per-rank message of bytes");
        break;
      case CollectiveKind::kAllReduce:
        count_ok = CheckCount(in_elements, i, op, "an element count");
        break;
      case CollectiveKind::kReduceScatter:
        count_ok = CheckCount(in_elements / s->k, i, op, "an element count");
        break;
      case CollectiveKind::kCollectivePermute:
        count_ok = CheckCount(in_bytes, i, op, "a message of bytes");
        for (const auto& [source, target] : op.source_target_pairs) {
          if (source == target) continue;
          if (source == device_) s->send_to = static_cast<int>(target);
          if (target == device_) s->receive_from = static_cast<int>(source);
        }
        break;
      case CollectiveKind::kAllToAllV: {
        // Totals per device from the whole transfer list, so every rank reaches the same
        // verdict on the count limit.
        std::vector<int64_t> sent(n, 0), received(n, 0);
        for (const Transfer& t : op.transfers) {
          if (t.source == t.target) continue;
          int64_t bytes = Volume(t.shape) * eb;
          sent[t.source] += bytes;
          received[t.target] += bytes;
        }
        int64_t most = 0;
        for (int64_t d = 0; d < n; ++d) most = std::max({most, sent[d], received[d]});
        count_ok = CheckCount(most, i, op, "one rank's total all_to_all_v bytes");
        if (!count_ok.ok()) break;
        for (const Transfer& t : op.transfers) {
          if (t.source == device_ && t.target == device_) {
            s->local_copies.push_back(t);
          } else if (t.source == device_) {
            s->sends.push_back(t);
          } else if (t.target == device_) {
            s->receives.push_back(t);
          }
        }
        std::stable_sort(s->sends.begin(), s->sends.end(),
                         [](const Transfer& a, const Transfer& b) { return a.target < b.target; });
        std::stable_sort(
            s->receives.begin(), s->receives.end(),
            [](const Transfer& a, const Transfer& b) { return a.source < b.source; });
        s->send_counts.assign(n, 0);
        s->receive_counts.assign(n, 0);
        for (const Transfer& t : s->sends) s->send_counts[t.target] += Volume(t.shape) * eb;
        for (const Transfer& t : s->receives) s->receive_counts[t.source] += Volume(t.shape) * eb;
        s->send_displs.assign(n, 0);
        s->receive_displs.assign(n, 0);
        for (int64_t d = 1; d < n; ++d) {
          s->send_displs[d] = s->send_displs[d - 1] + s->send_counts[d - 1];
          s->receive_displs[d] = s->receive_displs[d - 1] + s->receive_counts[d - 1];
        }
        s->send_bytes = sent[device_];
        s->receive_bytes = received[device_];
        break;
      }
    }
    if (!count_ok.ok()) return count_ok;
    prepared.steps_.push_back(std::move(s));
    in = &step.type;
  }
  return prepared;
}

absl::Status Executor::Run(const PreparedPlan& prepared, LocalArray& buffer,
                           ExecutionStats* stats) {
  const Plan& plan = prepared.plan();
  std::vector<int64_t> source_shape = LocalShape(mesh_, plan.source);
  if (buffer.shape() != source_shape || buffer.element_type() != plan.source.element_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the input buffer has shape [", absl::StrJoin(buffer.shape(), ","), "] ",
        std::string(ElementTypeName(buffer.element_type())), "; ", ToString(plan.source),
        " needs [", absl::StrJoin(source_shape, ","), "]"));
  }
  buffer.Track(&tracker_);
  tracker_.ResetPeak();
  int64_t received = 0;
  for (const auto& step_ptr : prepared.steps_) {
    const PreparedPlan::PreparedStep& s = *step_ptr;
    const int64_t eb = s.element_bytes;
    const int64_t in_bytes = buffer.size_bytes();
    switch (s.kind) {
      case CollectiveKind::kAllSlice: {
        PieceLayout layout = PieceLayoutOf(s.in_shape, s.dim, s.k, eb);
        LocalArray out(s.out_shape, s.element_type, &tracker_);
        CopyPiece(buffer.data(), out.data(), layout, s.index);
        buffer = std::move(out);
        break;
      }
      case CollectiveKind::kAllGather: {
        // The received blocks arrive as [k][outer][chunk]; the result is [outer][k][chunk].
        PieceLayout layout = PieceLayoutOf(s.out_shape, s.dim, s.k, eb);
        const int count = static_cast<int>(in_bytes);
        if (!NeedsPacking(layout)) {
          LocalArray out(s.out_shape, s.element_type, &tracker_);
          MPI_Allgather(buffer.data(), count, MPI_BYTE, out.data(), count, MPI_BYTE, s.comm);
          buffer = std::move(out);
        } else {
          LocalArray gathered = Scratch(s.k * in_bytes, &tracker_);
          MPI_Allgather(buffer.data(), count, MPI_BYTE, gathered.data(), count, MPI_BYTE, s.comm);
          buffer = LocalArray();
          LocalArray out(s.out_shape, s.element_type, &tracker_);
          ConcatPieces(gathered.data(), out.data(), layout);
          buffer = std::move(out);
        }
        received += (s.k - 1) * in_bytes;
        break;
      }
      case CollectiveKind::kAllToAll: {
        PieceLayout split = PieceLayoutOf(s.in_shape, s.split_dim, s.k, eb);
        PieceLayout concat = PieceLayoutOf(s.out_shape, s.dim, s.k, eb);
        const int count = static_cast<int>(in_bytes / s.k);
        LocalArray packed;
        if (NeedsPacking(split)) {
          packed = Scratch(in_bytes, &tracker_);
          SplitPieces(buffer.data(), packed.data(), split);
          buffer = LocalArray();
        }
        const std::byte* send = packed.empty() ? buffer.data() : packed.data();
        if (!NeedsPacking(concat)) {
          LocalArray out(s.out_shape, s.element_type, &tracker_);
          MPI_Alltoall(send, count, MPI_BYTE, out.data(), count, MPI_BYTE, s.comm);
          packed = LocalArray();
          buffer = std::move(out);
        } else {
          LocalArray pieces = Scratch(in_bytes, &tracker_);
          MPI_Alltoall(send, count, MPI_BYTE, pieces.data(), count, MPI_BYTE, s.comm);
          packed = LocalArray();
          buffer = LocalArray();
          LocalArray out(s.out_shape, s.element_type, &tracker_);
          ConcatPieces(pieces.data(), out.data(), concat);
          buffer = std::move(out);
        }
        received += (s.k - 1) * (in_bytes / s.k);
        break;
      }
      case CollectiveKind::kAllReduce: {
        MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.num_elements()),
                      SumType(s.element_type), SumOp(s.element_type), s.comm);
        received += (2 * (s.k - 1) * in_bytes + s.k - 1) / s.k;
        break;
      }
      case CollectiveKind::kReduceScatter: {
        PieceLayout split = PieceLayoutOf(s.in_shape, s.dim, s.k, eb);
        LocalArray packed;
        if (NeedsPacking(split)) {
          packed = Scratch(in_bytes, &tracker_);
          SplitPieces(buffer.data(), packed.data(), split);
          buffer = LocalArray();
        }
        const std::byte* send = packed.empty() ? buffer.data() : packed.data();
        LocalArray out(s.out_shape, s.element_type, &tracker_);
        MPI_Reduce_scatter_block(send, out.data(), static_cast<int>(out.num_elements()),
                                 SumType(s.element_type), SumOp(s.element_type), s.comm);
        packed = LocalArray();
        buffer = std::move(out);
        received += (s.k - 1) * (in_bytes / s.k);
        break;
      }
      case CollectiveKind::kCollectivePermute: {
        const int count = static_cast<int>(in_bytes);
        if (s.receive_from != MPI_PROC_NULL) {
          LocalArray out(s.out_shape, s.element_type, &tracker_);
          MPI_Sendrecv(buffer.data(), s.send_to == MPI_PROC_NULL ? 0 : count, MPI_BYTE,
                       s.send_to, kPermuteTag, out.data(), count, MPI_BYTE, s.receive_from,
                       kPermuteTag, world_, MPI_STATUS_IGNORE);
          buffer = std::move(out);
          received += in_bytes;
        } else if (s.send_to != MPI_PROC_NULL) {
          // Not a target: it keeps its buffer (DESIGN §2) and only sends.
          MPI_Send(buffer.data(), count, MPI_BYTE, s.send_to, kPermuteTag, world_);
        }
        break;
      }
      case CollectiveKind::kAllToAllV: {
        LocalArray out(s.out_shape, s.element_type, &tracker_);
        for (const Transfer& t : s.local_copies) {
          CopyBox(buffer.data(), s.in_shape, t.source_offset, out.data(), s.out_shape,
                  t.target_offset, t.shape, eb);
        }
        LocalArray packed = Scratch(s.send_bytes, &tracker_);
        int64_t at = 0;
        for (const Transfer& t : s.sends) {
          std::vector<int64_t> zero(t.shape.size(), 0);
          CopyBox(buffer.data(), s.in_shape, t.source_offset, packed.data() + at, t.shape, zero,
                  t.shape, eb);
          at += Volume(t.shape) * eb;
        }
        buffer = LocalArray();
        LocalArray pieces = Scratch(s.receive_bytes, &tracker_);
        MPI_Alltoallv(DataOrDummy(packed), s.send_counts.data(), s.send_displs.data(), MPI_BYTE,
                      DataOrDummy(pieces), s.receive_counts.data(), s.receive_displs.data(),
                      MPI_BYTE, world_);
        packed = LocalArray();
        at = 0;
        for (const Transfer& t : s.receives) {
          std::vector<int64_t> zero(t.shape.size(), 0);
          CopyBox(pieces.data() + at, t.shape, zero, out.data(), s.out_shape, t.target_offset,
                  t.shape, eb);
          at += Volume(t.shape) * eb;
        }
        buffer = std::move(out);
        received += s.receive_bytes;
        break;
      }
    }
  }
  if (stats != nullptr) {
    stats->bytes_received = received;
    stats->peak_bytes = tracker_.peak_bytes();
  }
  // The result belongs to the caller again; the executor may outlive or predecease it.
  buffer.Track(nullptr);
  return absl::OkStatus();
}

absl::Status Executor::AllReduce(const AxisList& axes, LocalArray& buffer) {
  if (axes.empty()) return absl::OkStatus();
  // The axes must be a valid partial clause: known axes or sub-axes, distinct and not
  // overlapping (overlapping pieces would make Group and GroupSize disagree).
  DistType sum_over;
  sum_over.partial = axes;
  if (absl::Status s = Validate(mesh_, sum_over); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot sum over {", JoinAxes(axes, ","), "}: ", s.message()));
  }
  if (buffer.num_elements() > INT_MAX) {
    return absl::InvalidArgumentError("buffer exceeds MPI's int count limit");
  }
  MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.num_elements()),
                SumType(buffer.element_type()), SumOp(buffer.element_type()), Communicator(axes));
  return absl::OkStatus();
}

}  // namespace reshard
