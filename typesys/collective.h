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
};

// "all_slice", "all_gather", "all_to_all", "all_reduce", "reduce_scatter", "collective_permute".
std::string_view CollectiveName(CollectiveKind kind);
absl::StatusOr<CollectiveKind> ParseCollectiveKind(std::string_view name);

struct Collective {
  CollectiveKind kind = CollectiveKind::kAllSlice;
  // Axes of the groups, in group order (empty for collective_permute).
  std::vector<std::string> mesh_axes;
  // slice_axis / gather_axis / scatter_axis / concat_axis (all_to_all); -1 when unused.
  int64_t dim = -1;
  // split_axis (all_to_all only); -1 otherwise.
  int64_t split_dim = -1;
  // collective_permute only: linear device ids, device `first` sends its buffer to `second`.
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;

  static Collective AllSlice(std::vector<std::string> axes, int64_t slice_dim);
  static Collective AllGather(std::vector<std::string> axes, int64_t gather_dim);
  static Collective AllToAll(std::vector<std::string> axes, int64_t concat_dim, int64_t split_dim);
  static Collective AllReduce(std::vector<std::string> axes);
  static Collective ReduceScatter(std::vector<std::string> axes, int64_t scatter_dim);
  static Collective Permute(std::vector<std::pair<int64_t, int64_t>> pairs);

  bool operator==(const Collective&) const = default;
};

// Readable one-line form, e.g. `all_to_all mesh_axes=[x] split_axis=1 concat_axis=0` or
// `collective_permute source_target_pairs=[[0,1],[1,0]]`.
std::string ToString(const Collective& op);

// The type produced by `op` on `in` (in must be valid on mesh). Not defined for
// collective_permute, whose result is chosen by the plan: use CheckPermute. InvalidArgument
// naming the broken rule, e.g. "all_gather over [y] on dimension 0 needs the dimension to end
// with [y], but it is 8{x}".
absl::StatusOr<DistType> ApplyRule(const Mesh& mesh, const DistType& in, const Collective& op);

// collective_permute's rule: `out` is valid, has in's element type, global shape, partial axes
// and local shape; pairs name devices in range with no device twice as a source or target; and
// every device ends with the block (and summand) `out` assigns it: a target receives its
// source's block, any other device keeps its own.
absl::Status CheckPermute(const Mesh& mesh, const DistType& in, const Collective& op,
                          const DistType& out);

// `op` takes `in` to `out`: ApplyRule(...) == out, or CheckPermute for permutes.
absl::Status CheckStep(const Mesh& mesh, const DistType& in, const Collective& op,
                       const DistType& out);

// Bytes device `device` receives when `op` runs on a value of type `in` (DESIGN §2 table; B is
// in's local bytes, k the group size): all_slice 0; all_gather (k-1)B; all_to_all and
// reduce_scatter (k-1)B/k; all_reduce 2(k-1)B/k rounded up; permute B for a target whose
// source is another device. `op` must type-check on `in`.
int64_t BytesReceived(const Mesh& mesh, const DistType& in, const Collective& op, int64_t device);

}  // namespace reshard

#endif  // RESHARD_TYPESYS_COLLECTIVE_H_
