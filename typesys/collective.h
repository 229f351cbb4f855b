// collective.h — collectives as data, and their typing rules (DESIGN §2).
//
//   Collective c = Collective::AllToAll({"x"}, /*concat_dim=*/0, /*split_dim=*/1);
//   absl::StatusOr<DistType> out = ApplyRule(mesh, in, c);   // [8{x},16] -> [8,16{x}]
//
// Dimension attributes use MLIR's mesh-dialect names in text and JSON: slice_axis, gather_axis,
// scatter_axis, concat_axis, split_axis (tensor dimensions), mesh_axes (mesh axis names).
#ifndef RESHARD_TYPESYS_COLLECTIVE_H_
#define RESHARD_TYPESYS_COLLECTIVE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

namespace reshard {

enum class CollectiveKind {
  kAllSlice,
  kAllGather,
  kAllToAll,
  kAllReduce,
  kReduceScatter,
  kCollectivePermute,
  // An irregular point-to-point exchange (MPI_Alltoallv): explicit boxes of elements from
  // source buffers to target buffers. reshard's own extension of DESIGN §2, used by strategy
  // `direct`; see Transfer and CheckAllToAllV.
  kAllToAllV,
};

// "all_slice", "all_gather", "all_to_all", "all_reduce", "reduce_scatter", "collective_permute",
// "all_to_all_v".
std::string_view CollectiveName(CollectiveKind kind);
absl::StatusOr<CollectiveKind> ParseCollectiveKind(std::string_view name);

// all_to_all_v only: device `source` copies the box of its input buffer that starts at local
// index `source_offset` and has extent `shape` into the box of device `target`'s output
// buffer that starts at `target_offset`. source == target is a local copy (no bytes
// received). All three vectors have the array's rank.
struct Transfer {
  int64_t source = 0;
  int64_t target = 0;
  std::vector<int64_t> source_offset;
  std::vector<int64_t> target_offset;
  std::vector<int64_t> shape;

  bool operator==(const Transfer&) const = default;
};

// Walks the elements of a box of shape `box` placed at `offset` in a row-major array of shape
// `array` (a transfer's box in a buffer, a device's block in the global array), in the box's
// row-major order, keeping each element's linear index in the array: an odometer over the
// box's index, so no element's index is decomposed. Call Next() once per element after the
// first, at most volume - 1 times.
class BoxCursor {
 public:
  BoxCursor(const std::vector<int64_t>& box, const std::vector<int64_t>& array,
            const std::vector<int64_t>& offset)
      : box_(box), stride_(box.size()), index_(box.size(), 0) {
    int64_t stride = 1;
    for (int i = static_cast<int>(box.size()) - 1; i >= 0; --i) {
      stride_[i] = stride;
      linear_ += offset[i] * stride;
      stride *= array[i];
    }
  }
  int64_t linear() const { return linear_; }
  void Next() {
    for (int i = static_cast<int>(box_.size()) - 1; i >= 0; --i) {
      linear_ += stride_[i];
      if (++index_[i] < box_[i]) return;
      linear_ -= stride_[i] * box_[i];
      index_[i] = 0;
    }
  }

 private:
  std::vector<int64_t> box_, stride_, index_;
  int64_t linear_ = 0;
};

struct Collective {
  CollectiveKind kind = CollectiveKind::kAllSlice;
  // Axes of the groups, in group order (empty for collective_permute).
  AxisList mesh_axes;
  // slice_axis / gather_axis / scatter_axis / concat_axis (all_to_all); -1 when unused.
  int64_t dim = -1;
  // split_axis (all_to_all only); -1 otherwise.
  int64_t split_dim = -1;
  // collective_permute only: linear device ids, device `first` sends its buffer to `second`.
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  // all_to_all_v only: every device's output buffer has local shape `out_shape`, and is
  // written exactly once per element by `transfers` (local copies included). The input buffer
  // stays live until the exchange ends, so the step's transient footprint is input + output.
  std::vector<int64_t> out_shape;
  std::vector<Transfer> transfers;

  static Collective AllSlice(AxisList axes, int64_t slice_dim);
  static Collective AllGather(AxisList axes, int64_t gather_dim);
  static Collective AllToAll(AxisList axes, int64_t concat_dim, int64_t split_dim);
  static Collective AllReduce(AxisList axes);
  static Collective ReduceScatter(AxisList axes, int64_t scatter_dim);
  static Collective Permute(std::vector<std::pair<int64_t, int64_t>> pairs);
  static Collective AllToAllV(std::vector<int64_t> out_shape, std::vector<Transfer> transfers);

  bool operator==(const Collective&) const = default;
};

// The structure of `op` on `mesh`, independent of any type: the attributes its kind does not
// use are unset (dim and split_dim -1, no source_target_pairs, out_shape or transfers);
// mesh_axes are non-empty, known and distinct for group collectives and empty for
// collective_permute and all_to_all_v; permute pairs name devices of the mesh, none twice as a
// source or twice as a target. Every consumer that gives `op` meaning (typing rules,
// interpreter, certificates, runtime) checks this first. InvalidArgument naming the field.
absl::Status CheckCollectiveShape(const Mesh& mesh, const Collective& op);

// Readable one-line form, e.g. `all_to_all mesh_axes=[x] split_axis=1 concat_axis=0` or
// `collective_permute source_target_pairs=[[0,1],[1,0]]`; all_to_all_v prints its output
// shape and transfer count, e.g. `all_to_all_v out_shape=[2,8] transfers=24 (16 remote)`.
std::string ToString(const Collective& op);

// The type produced by `op` on `in` (in must be valid on mesh). Not defined for
// collective_permute and all_to_all_v, whose results are chosen by the plan: use CheckPermute
// and CheckAllToAllV. InvalidArgument
// naming the broken rule, e.g. "all_gather over [y] on dimension 0 needs the dimension to end
// with [y], but it is 8{x}".
absl::StatusOr<DistType> ApplyRule(const Mesh& mesh, const DistType& in, const Collective& op);

// ApplyRule's result for an op it accepts, computed without its checks: for synthesizers whose
// ops satisfy the rules by construction and whose plans are checked once complete, so that
// building a candidate does not check every step twice. `op` must be a collective with a
// rule that ApplyRule accepts on `in`, and neither may name a sub-axis of `mesh` (on a mesh
// whose axes are the atoms, as the synthesizer's passes run, none does); otherwise the result
// is unspecified.
DistType ApplyAcceptedRule(DistType in, const Collective& op);

// collective_permute's rule: `out` is valid, has in's element type, global shape, partial axes
// and local shape; pairs name devices in range with no device twice as a source or target; and
// every device ends with the block (and summand) `out` assigns it: a target receives its
// source's block, any other device keeps its own.
absl::Status CheckPermute(const Mesh& mesh, const DistType& in, const Collective& op,
                          const DistType& out);

// all_to_all_v's rule (the result type is given by the plan and verified, not computed):
// `out` is valid with in's element type, global shape and partial axes; mesh_axes is empty;
// op.out_shape == LocalShape(out); every transfer names devices in range, has boxes of the
// array's rank with non-negative offsets and positive extents inside the source's input and
// the target's output local shape, moves global elements to the same global position
// (BlockOffset(in, source) + source_offset == BlockOffset(out, target) + target_offset) and
// keeps the summand (equal SummandIndex of source under `in` and target under `out`); and the
// boxes written into each device's output are pairwise disjoint and cover it exactly (their
// volumes sum to the local element count). Together: every device receives exactly the
// elements `out` assigns it. InvalidArgument naming the first broken rule and transfer.
absl::Status CheckAllToAllV(const Mesh& mesh, const DistType& in, const Collective& op,
                            const DistType& out);

// `op` takes `in` to `out`: ApplyRule(...) == out, or CheckPermute / CheckAllToAllV.
absl::Status CheckStep(const Mesh& mesh, const DistType& in, const Collective& op,
                       const DistType& out);
// CheckStep where `in`, `op` and `out` name only axes of `mesh`, no sub-axis references (e.g.
// types refined onto a mesh of atoms): the same verdict, without looking for references to
// refine, which was a third of the step checks of plans Synthesize returns.
absl::Status CheckStepOnMeshAxes(const Mesh& mesh, const DistType& in, const Collective& op,
                                 const DistType& out);

// Bytes device `device` receives when `op` runs on a value of type `in` (DESIGN §2 table; B is
// in's local bytes, k the group size): all_slice 0; all_gather (k-1)B; all_to_all and
// reduce_scatter (k-1)B/k; all_reduce 2(k-1)B/k rounded up; permute B for a target whose
// source is another device; all_to_all_v the element bytes of the boxes `device` receives from
// other devices. `op` must type-check on `in`.
int64_t BytesReceived(const Mesh& mesh, const DistType& in, const Collective& op, int64_t device);
// The same where the caller has B: `in_bytes` must be LocalBytes(mesh, in) (metrics and
// pricing walk a plan's types in order, and computing B again per use was a measurable share
// of a call's latency).
int64_t BytesReceived(const Mesh& mesh, const DistType& in, const Collective& op, int64_t device,
                      int64_t in_bytes);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_COLLECTIVE_H_
