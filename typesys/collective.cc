#include "typesys/collective.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "typesys/absl_compat.h"
#include "typesys/check.h"
#include "typesys/sub_axis.h"

namespace reshard {
namespace {

constexpr std::pair<CollectiveKind, std::string_view> kNames[] = {
    {CollectiveKind::kAllSlice, "all_slice"},
    {CollectiveKind::kAllGather, "all_gather"},
    {CollectiveKind::kAllToAll, "all_to_all"},
    {CollectiveKind::kAllReduce, "all_reduce"},
    {CollectiveKind::kReduceScatter, "reduce_scatter"},
    {CollectiveKind::kCollectivePermute, "collective_permute"},
    {CollectiveKind::kAllToAllV, "all_to_all_v"},
};

// The MLIR attribute name of `op.dim` for each kind that has one.
std::string_view DimAttributeName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllSlice:
      return "slice_axis";
    case CollectiveKind::kAllGather:
      return "gather_axis";
    case CollectiveKind::kAllToAll:
      return "concat_axis";
    case CollectiveKind::kReduceScatter:
      return "scatter_axis";
    default:
      return "";
  }
}

std::string AxesText(const AxisList& axes) {
  return absl::StrCat("[", JoinAxes(axes, ","), "]");
}

bool EndsWith(const AxisList& list, const AxisList& suffix) {
  return list.size() >= suffix.size() &&
         std::equal(suffix.begin(), suffix.end(), list.end() - suffix.size());
}

absl::Status CheckDim(const DistType& in, int64_t dim, std::string_view attribute) {
  if (dim < 0 || dim >= in.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(attribute), " ", dim,
                                                   " is out of range for ", ToString(in),
                                                   " (rank ", in.rank(), ")"));
  }
  return absl::OkStatus();
}

// Appending `axes` to dimension `dim` must leave it divisible.
absl::Status CheckGains(const Mesh& mesh, const DistType& in, int64_t dim, const AxisList& axes) {
  for (const AxisName& axis : axes) {
    if (AxisUse(in, axis) != kUnused) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis '", Absl(axis), "' is already used in ", ToString(in)));
    }
  }
  const Dim& d = in.dims[dim];
  int64_t shards = mesh.GroupSize(d.axes) * mesh.GroupSize(axes);
  if (d.size % shards != 0) {
    return absl::InvalidArgumentError(absl::StrCat("dimension ", dim, " of size ", d.size,
                                                   " cannot be split ", shards, " ways"));
  }
  return absl::OkStatus();
}

absl::Status CheckEndsWith(const DistType& in, int64_t dim, const AxisList& axes) {
  if (!EndsWith(in.dims[dim].axes, axes)) {
    return absl::InvalidArgumentError(absl::StrCat("dimension ", dim, " of ", ToString(in),
                                                   " does not end with ", AxesText(axes)));
  }
  return absl::OkStatus();
}

absl::Status CheckPartial(const DistType& in, const AxisList& axes) {
  for (const AxisName& axis : axes) {
    if (AxisUse(in, axis) != kPartial) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh axis '", Absl(axis), "' is not a partial axis of ", ToString(in)));
    }
  }
  return absl::OkStatus();
}

void RemoveSuffix(AxisList& list, size_t count) { list.resize(list.size() - count); }

void RemovePartial(DistType& type, const AxisList& axes) {
  EraseAxesIf(type.partial, [&](const AxisName& axis) {
    return std::find(axes.begin(), axes.end(), axis) != axes.end();
  });
}

void Append(AxisList& list, const AxisList& axes) {
  list.insert(list.end(), axes.begin(), axes.end());
}

absl::StatusOr<DistType> ApplyRuleUnlabelled(const Mesh& mesh, const DistType& in,
                                             const Collective& op) {
  if (op.kind == CollectiveKind::kCollectivePermute || op.kind == CollectiveKind::kAllToAllV) {
    return absl::InvalidArgumentError(absl::StrCat(
        Absl(CollectiveName(op.kind)),
        " has no result rule: its result type is given by the plan"));
  }
  if (absl::Status s = CheckCollectiveShape(mesh, op); !s.ok()) return s;
  DistType out = in;
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
      if (absl::Status s = CheckDim(in, op.dim, "slice_axis"); !s.ok()) return s;
      if (absl::Status s = CheckGains(mesh, in, op.dim, op.mesh_axes); !s.ok()) return s;
      Append(out.dims[op.dim].axes, op.mesh_axes);
      return out;
    case CollectiveKind::kAllGather:
      if (absl::Status s = CheckDim(in, op.dim, "gather_axis"); !s.ok()) return s;
      if (absl::Status s = CheckEndsWith(in, op.dim, op.mesh_axes); !s.ok()) return s;
      RemoveSuffix(out.dims[op.dim].axes, op.mesh_axes.size());
      return out;
    case CollectiveKind::kAllToAll: {
      if (absl::Status s = CheckDim(in, op.dim, "concat_axis"); !s.ok()) return s;
      if (absl::Status s = CheckDim(in, op.split_dim, "split_axis"); !s.ok()) return s;
      if (op.dim == op.split_dim) {
        return absl::InvalidArgumentError("split_axis and concat_axis are the same dimension");
      }
      if (absl::Status s = CheckEndsWith(in, op.dim, op.mesh_axes); !s.ok()) return s;
      RemoveSuffix(out.dims[op.dim].axes, op.mesh_axes.size());
      if (absl::Status s = CheckGains(mesh, out, op.split_dim, op.mesh_axes); !s.ok()) return s;
      Append(out.dims[op.split_dim].axes, op.mesh_axes);
      return out;
    }
    case CollectiveKind::kAllReduce:
      if (absl::Status s = CheckPartial(in, op.mesh_axes); !s.ok()) return s;
      RemovePartial(out, op.mesh_axes);
      return out;
    case CollectiveKind::kReduceScatter:
      if (absl::Status s = CheckDim(in, op.dim, "scatter_axis"); !s.ok()) return s;
      if (absl::Status s = CheckPartial(in, op.mesh_axes); !s.ok()) return s;
      RemovePartial(out, op.mesh_axes);
      if (absl::Status s = CheckGains(mesh, out, op.dim, op.mesh_axes); !s.ok()) return s;
      Append(out.dims[op.dim].axes, op.mesh_axes);
      return out;
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kAllToAllV:
      break;
  }
  RESHARD_CHECK(false) << "unhandled collective kind";
  return out;
}

// ApplyRule where `in` and `op` name only axes of `mesh`.
absl::StatusOr<DistType> ApplyRuleOnMeshAxes(const Mesh& mesh, const DistType& in,
                                             const Collective& op) {
  absl::StatusOr<DistType> out = ApplyRuleUnlabelled(mesh, in, op);
  if (!out.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToString(op), " on ", ToString(in), ": ", out.status().message()));
  }
  return out;
}

}  // namespace

std::string_view CollectiveName(CollectiveKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  RESHARD_CHECK(false) << "unknown collective kind";
  return "";
}

absl::StatusOr<CollectiveKind> ParseCollectiveKind(std::string_view name) {
  for (const auto& [kind, n] : kNames) {
    if (n == name) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown collective '", Absl(name),
      "' (expected all_slice, all_gather, all_to_all, all_reduce, reduce_scatter, "
      "collective_permute or all_to_all_v)"));
}

Collective Collective::AllSlice(AxisList axes, int64_t slice_dim) {
  return Collective{CollectiveKind::kAllSlice, std::move(axes), slice_dim, -1, {}, {}, {}};
}
Collective Collective::AllGather(AxisList axes, int64_t gather_dim) {
  return Collective{CollectiveKind::kAllGather, std::move(axes), gather_dim, -1, {}, {}, {}};
}
Collective Collective::AllToAll(AxisList axes, int64_t concat_dim, int64_t split_dim) {
  return Collective{CollectiveKind::kAllToAll, std::move(axes), concat_dim, split_dim, {}, {}, {}};
}
Collective Collective::AllReduce(AxisList axes) {
  return Collective{CollectiveKind::kAllReduce, std::move(axes), -1, -1, {}, {}, {}};
}
Collective Collective::ReduceScatter(AxisList axes, int64_t scatter_dim) {
  return Collective{CollectiveKind::kReduceScatter, std::move(axes), scatter_dim, -1, {}, {}, {}};
}
Collective Collective::Permute(std::vector<std::pair<int64_t, int64_t>> pairs) {
  return Collective{CollectiveKind::kCollectivePermute, {}, -1, -1, std::move(pairs), {}, {}};
}
Collective Collective::AllToAllV(std::vector<int64_t> out_shape, std::vector<Transfer> transfers) {
  return Collective{CollectiveKind::kAllToAllV, {}, -1, -1, {}, std::move(out_shape),
                    std::move(transfers)};
}

absl::Status CheckCollectiveShape(const Mesh& mesh, const Collective& op) {
  const bool uses_dim = op.kind == CollectiveKind::kAllSlice ||
                        op.kind == CollectiveKind::kAllGather ||
                        op.kind == CollectiveKind::kAllToAll ||
                        op.kind == CollectiveKind::kReduceScatter;
  const bool is_permute = op.kind == CollectiveKind::kCollectivePermute;
  const bool is_v = op.kind == CollectiveKind::kAllToAllV;
  if (!uses_dim && op.dim != -1) {
    return absl::InvalidArgumentError(absl::StrCat("takes no dimension, but dim is ", op.dim));
  }
  if (op.kind != CollectiveKind::kAllToAll && op.split_dim != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("takes no split_axis, but split_dim is ", op.split_dim));
  }
  if (!is_permute && !op.source_target_pairs.empty()) {
    return absl::InvalidArgumentError("takes no source_target_pairs");
  }
  if (!is_v && (!op.out_shape.empty() || !op.transfers.empty())) {
    return absl::InvalidArgumentError("takes no out_shape or transfers");
  }
  if (is_permute || is_v) {
    if (!op.mesh_axes.empty()) return absl::InvalidArgumentError("takes no mesh_axes");
  } else {
    if (op.mesh_axes.empty()) return absl::InvalidArgumentError("mesh_axes is empty");
    for (size_t i = 0; i < op.mesh_axes.size(); ++i) {
      if (!mesh.CheckAxisRef(op.mesh_axes[i]).ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "mesh_axes names '", Absl(op.mesh_axes[i]), "', which is not an axis of ", mesh.ToString()));
      }
      for (size_t j = 0; j < i; ++j) {
        if (op.mesh_axes[j] == op.mesh_axes[i]) {
          return absl::InvalidArgumentError(
              absl::StrCat("mesh_axes names '", Absl(op.mesh_axes[i]), "' twice"));
        }
        if (!Mesh::Compatible(mesh.Resolve(op.mesh_axes[j]), mesh.Resolve(op.mesh_axes[i]))) {
          return absl::InvalidArgumentError(absl::StrCat("mesh_axes pieces '", Absl(op.mesh_axes[j]),
                                                         "' and '", Absl(op.mesh_axes[i]),
                                                         "' overlap or do not nest"));
        }
      }
    }
  }
  if (op.source_target_pairs.empty()) return absl::OkStatus();
  const int64_t n = mesh.num_devices();
  // Per device, whether it is a source (bit 0) and a target (bit 1) so far: one byte each
  // (vector<bool>'s bit twiddling cost more than the rest of the final check of a permute).
  constexpr uint8_t kSource = 1, kTarget = 2;
  std::vector<uint8_t> role(n, 0);
  for (const auto& [source, target] : op.source_target_pairs) {
    for (int64_t device : {source, target}) {
      if (device < 0 || device >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("source_target_pairs names device ", device, ", but mesh ",
                         mesh.ToString(), " has devices 0..", n - 1));
      }
    }
    if (role[source] & kSource) {
      return absl::InvalidArgumentError(
          absl::StrCat("source_target_pairs uses device ", source, " twice as a source"));
    }
    if (role[target] & kTarget) {
      return absl::InvalidArgumentError(
          absl::StrCat("source_target_pairs uses device ", target, " twice as a target"));
    }
    role[source] |= kSource;
    role[target] |= kTarget;
  }
  return absl::OkStatus();
}

std::string ToString(const Collective& op) {
  std::string out(CollectiveName(op.kind));
  if (op.kind == CollectiveKind::kAllToAllV) {
    int64_t remote = std::count_if(op.transfers.begin(), op.transfers.end(),
                                   [](const Transfer& t) { return t.source != t.target; });
    absl::StrAppend(&out, " out_shape=[", absl::StrJoin(op.out_shape, ","),
                    "] transfers=", op.transfers.size(), " (", remote, " remote)");
    return out;
  }
  if (op.kind == CollectiveKind::kCollectivePermute) {
    absl::StrAppend(&out, " source_target_pairs=[",
                    absl::StrJoin(op.source_target_pairs, ",",
                                  [](std::string* s, const std::pair<int64_t, int64_t>& p) {
                                    absl::StrAppend(s, "[", p.first, ",", p.second, "]");
                                  }),
                    "]");
    return out;
  }
  absl::StrAppend(&out, " mesh_axes=", AxesText(op.mesh_axes));
  if (op.kind == CollectiveKind::kAllToAll) absl::StrAppend(&out, " split_axis=", op.split_dim);
  std::string_view dim_name = DimAttributeName(op.kind);
  if (!dim_name.empty()) absl::StrAppend(&out, " ", Absl(dim_name), "=", op.dim);
  return out;
}

// ApplyRuleUnlabelled's edits without its checks.
DistType ApplyAcceptedRule(DistType type, const Collective& op) {
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
      Append(type.dims[op.dim].axes, op.mesh_axes);
      break;
    case CollectiveKind::kAllGather:
      RemoveSuffix(type.dims[op.dim].axes, op.mesh_axes.size());
      break;
    case CollectiveKind::kAllToAll:
      RemoveSuffix(type.dims[op.dim].axes, op.mesh_axes.size());
      Append(type.dims[op.split_dim].axes, op.mesh_axes);
      break;
    case CollectiveKind::kAllReduce:
      RemovePartial(type, op.mesh_axes);
      break;
    case CollectiveKind::kReduceScatter:
      RemovePartial(type, op.mesh_axes);
      Append(type.dims[op.dim].axes, op.mesh_axes);
      break;
    case CollectiveKind::kCollectivePermute:
    case CollectiveKind::kAllToAllV:
      RESHARD_CHECK(false) << CollectiveName(op.kind) << " has no result rule";
  }
  return type;
}

absl::StatusOr<DistType> ApplyRule(const Mesh& mesh, const DistType& in, const Collective& op) {
  if (HasSubAxes(mesh, in) || HasSubAxes(mesh, op)) {
    // The rules are written for whole axes: apply them on the refinement the pieces need.
    AxisList refs = SubAxisRefs(mesh, in);
    for (const AxisName& axis : op.mesh_axes) refs.push_back(axis);
    absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, refs);
    if (!r.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToString(op), " on ", ToString(in), ": ", r.status().message()));
    }
    absl::StatusOr<DistType> out = ApplyRule(r->refined(), r->Refine(in), r->Refine(op));
    if (!out.ok()) return out.status();
    return Canonicalize(mesh, *out);
  }
  return ApplyRuleOnMeshAxes(mesh, in, op);
}

namespace {

// The part of the rules of permute and all_to_all_v (whose result the plan chooses) that says
// the result is the same array: op well-formed, result valid, same element type, global shape
// and partial axes. The message says only why, for the caller to prefix.
absl::Status CheckSameArray(const Mesh& mesh, const DistType& in, const Collective& op,
                            const DistType& out) {
  if (absl::Status s = CheckCollectiveShape(mesh, op); !s.ok()) return s;
  if (absl::Status s = Validate(mesh, out); !s.ok()) return s;
  auto fail = [](const char* why) { return absl::InvalidArgumentError(why); };
  if (in.element_type != out.element_type) return fail("element types differ");
  if (in.rank() != out.rank()) return fail("ranks differ");
  for (int i = 0; i < in.rank(); ++i) {
    if (in.dims[i].size != out.dims[i].size) return fail("global shapes differ");
  }
  if (PartialInMeshOrder(mesh, in) != PartialInMeshOrder(mesh, out)) {
    return fail("partial axes differ");
  }
  return absl::OkStatus();
}

// Whether two of `boxes` (their target boxes, within a buffer of shape `local` whose element
// count they sum to) share an element. Pairwise where that is the cheaper walk, else by marking
// each box's elements once (their volume is the buffer's): plan files can hold ~10^6
// transfers, and pairs of them took minutes.
bool BoxesOverlap(const std::vector<const Transfer*>& boxes, const std::vector<int64_t>& local) {
  constexpr int64_t kMaxMarkedElements = int64_t{1} << 28;  // A 32 MiB bitmap.
  const int64_t m = static_cast<int64_t>(boxes.size());
  const int rank = static_cast<int>(local.size());
  const int64_t elements = std::accumulate(local.begin(), local.end(), int64_t{1},
                                           std::multiplies<int64_t>());
  if (m < 2) return false;
  if (elements > kMaxMarkedElements || (m - 1) * m / 2 * std::max(rank, 1) <= elements) {
    for (int64_t a = 1; a < m; ++a) {
      for (int64_t b = 0; b < a; ++b) {
        bool overlap = true;
        for (int i = 0; i < rank && overlap; ++i) {
          overlap = boxes[a]->target_offset[i] < boxes[b]->target_offset[i] + boxes[b]->shape[i] &&
                    boxes[b]->target_offset[i] < boxes[a]->target_offset[i] + boxes[a]->shape[i];
        }
        if (overlap) return true;
      }
    }
    return false;
  }
  std::vector<bool> marked(static_cast<size_t>(elements), false);
  for (const Transfer* box : boxes) {
    const int64_t volume = std::accumulate(box->shape.begin(), box->shape.end(), int64_t{1},
                                           std::multiplies<int64_t>());
    BoxCursor element(box->shape, local, box->target_offset);
    for (int64_t k = 0; k < volume; ++k, element.Next()) {
      std::vector<bool>::reference bit = marked[static_cast<size_t>(element.linear())];
      if (bit) return true;
      bit = true;
    }
  }
  return false;
}

}  // namespace

absl::Status CheckPermute(const Mesh& mesh, const DistType& in, const Collective& op,
                          const DistType& out) {
  auto fail = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToString(op), " from ", ToString(in), " to ", ToString(out), ": ", Absl(why)));
  };
  if (op.kind != CollectiveKind::kCollectivePermute) return fail("not a collective_permute");
  if (absl::Status s = CheckSameArray(mesh, in, op, out); !s.ok()) return fail(Std(s.message()));
  if (!SameLocalShape(mesh, in, out)) return fail("local shapes differ");

  const int64_t n = mesh.num_devices();
  std::vector<int64_t> source_of(n);
  for (int64_t d = 0; d < n; ++d) source_of[d] = d;
  for (const auto& [s, t] : op.source_target_pairs) source_of[t] = s;
  for (int64_t t = 0; t < n; ++t) {
    int64_t s = source_of[t];
    if (BlockIndex(mesh, in, s) != BlockIndex(mesh, out, t) ||
        SummandIndex(mesh, in, s) != SummandIndex(mesh, out, t)) {
      return fail(absl::StrCat("device ", t, " ends with device ", s,
                               "'s block, which is not the block the result type assigns it"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAllToAllV(const Mesh& mesh, const DistType& in, const Collective& op,
                            const DistType& out) {
  auto fail = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToString(op), " from ", ToString(in), " to ", ToString(out), ": ", Absl(why)));
  };
  if (op.kind != CollectiveKind::kAllToAllV) return fail("not an all_to_all_v");
  if (absl::Status s = CheckSameArray(mesh, in, op, out); !s.ok()) return fail(Std(s.message()));
  const std::vector<int64_t> in_local = LocalShape(mesh, in);
  const std::vector<int64_t> out_local = LocalShape(mesh, out);
  if (op.out_shape != out_local) {
    return fail(absl::StrCat("out_shape [", absl::StrJoin(op.out_shape, ","),
                             "] is not the result's local shape [", absl::StrJoin(out_local, ","),
                             "]"));
  }
  const int64_t n = mesh.num_devices();
  const int rank = in.rank();
  // Per target: the boxes written into its output, for the exact-cover check.
  std::vector<std::vector<const Transfer*>> written(n);
  for (size_t k = 0; k < op.transfers.size(); ++k) {
    const Transfer& t = op.transfers[k];
    std::string where = absl::StrCat("transfer ", k, " (", t.source, " -> ", t.target, ")");
    if (t.source < 0 || t.source >= n || t.target < 0 || t.target >= n) {
      return fail(absl::StrCat(where, " names a device outside 0..", n - 1));
    }
    if (static_cast<int>(t.source_offset.size()) != rank ||
        static_cast<int>(t.target_offset.size()) != rank ||
        static_cast<int>(t.shape.size()) != rank) {
      return fail(absl::StrCat(where, ": offsets and shape must have rank ", rank));
    }
    std::vector<int64_t> source_block = BlockOffset(mesh, in, t.source);
    std::vector<int64_t> target_block = BlockOffset(mesh, out, t.target);
    for (int i = 0; i < rank; ++i) {
      if (t.shape[i] < 1 || t.source_offset[i] < 0 || t.target_offset[i] < 0 ||
          t.source_offset[i] > in_local[i] - t.shape[i] ||
          t.target_offset[i] > out_local[i] - t.shape[i]) {
        return fail(absl::StrCat(where, ": box leaves a buffer in dimension ", i));
      }
      if (source_block[i] + t.source_offset[i] != target_block[i] + t.target_offset[i]) {
        return fail(absl::StrCat(where, ": moves global index ",
                                 source_block[i] + t.source_offset[i], " to global index ",
                                 target_block[i] + t.target_offset[i], " in dimension ", i));
      }
    }
    if (SummandIndex(mesh, in, t.source) != SummandIndex(mesh, out, t.target)) {
      return fail(absl::StrCat(where, " moves a summand into another summand's place"));
    }
    written[t.target].push_back(&t);
  }
  const int64_t local_elements = LocalElements(mesh, out);
  for (int64_t d = 0; d < n; ++d) {
    const std::vector<const Transfer*>& boxes = written[d];
    __int128 volume = 0;
    for (const Transfer* box : boxes) {
      __int128 v = 1;
      for (int i = 0; i < rank; ++i) v *= box->shape[i];
      volume += v;
    }
    if (volume != local_elements) {
      return fail(absl::StrCat("transfers write ", static_cast<int64_t>(volume), " of device ", d,
                               "'s ", local_elements, " elements"));
    }
    if (BoxesOverlap(boxes, out_local)) {
      return fail(absl::StrCat("two transfers write the same elements of device ", d));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckStep(const Mesh& mesh, const DistType& in, const Collective& op,
                       const DistType& out) {
  if (HasSubAxes(mesh, in) || HasSubAxes(mesh, op) || HasSubAxes(mesh, out)) {
    // Refining resolves every reference: bad ones must be reported before, not abort there.
    if (absl::Status s = CheckCollectiveShape(mesh, op); !s.ok()) return s;
    if (absl::Status s = Validate(mesh, out); !s.ok()) return s;
    AxisList refs = SubAxisRefs(mesh, in);
    const Step step{op, out};
    AxisList more = SubAxisRefs(mesh, out, {&step, 1});
    refs.insert(refs.end(), more.begin(), more.end());
    absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(mesh, refs);
    if (!r.ok()) return r.status();
    return CheckStepOnMeshAxes(r->refined(), r->Refine(in), r->Refine(op), r->Refine(out));
  }
  return CheckStepOnMeshAxes(mesh, in, op, out);
}

absl::Status CheckStepOnMeshAxes(const Mesh& mesh, const DistType& in, const Collective& op,
                                 const DistType& out) {
  if (op.kind == CollectiveKind::kCollectivePermute) return CheckPermute(mesh, in, op, out);
  if (op.kind == CollectiveKind::kAllToAllV) return CheckAllToAllV(mesh, in, op, out);
  absl::StatusOr<DistType> expected = ApplyRuleOnMeshAxes(mesh, in, op);
  if (!expected.ok()) return expected.status();
  if (!(*expected == out)) {
    return absl::InvalidArgumentError(absl::StrCat(ToString(op), " on ", ToString(in),
                                                   " yields ", ToString(*expected), ", not ",
                                                   ToString(out)));
  }
  return absl::OkStatus();
}

int64_t BytesReceived(const Mesh& mesh, const DistType& in, const Collective& op,
                      int64_t device) {
  return BytesReceived(mesh, in, op, device, LocalBytes(mesh, in));
}

int64_t BytesReceived(const Mesh& mesh, const DistType& in, const Collective& op, int64_t device,
                      int64_t bytes) {
  const int64_t k = mesh.GroupSize(op.mesh_axes);
  switch (op.kind) {
    case CollectiveKind::kAllSlice:
      return 0;
    case CollectiveKind::kAllGather:
      return (k - 1) * bytes;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kReduceScatter:
      return (k - 1) * (bytes / k);
    case CollectiveKind::kAllReduce:
      // 128-bit: 2(k-1)B can exceed 64 bits even though the result does not.
      return static_cast<int64_t>((__int128{2} * (k - 1) * bytes + k - 1) / k);
    case CollectiveKind::kCollectivePermute:
      for (const auto& [s, t] : op.source_target_pairs) {
        if (t == device) return s == device ? 0 : bytes;
      }
      return 0;
    case CollectiveKind::kAllToAllV: {
      int64_t elements = 0;
      for (const Transfer& t : op.transfers) {
        if (t.target != device || t.source == device) continue;
        int64_t v = 1;
        for (int64_t e : t.shape) v *= e;
        elements += v;
      }
      return elements * ElementBytes(in.element_type);
    }
  }
  RESHARD_CHECK(false) << "unhandled collective kind";
  return 0;
}

}  // namespace reshard
