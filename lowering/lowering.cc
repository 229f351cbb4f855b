// Conversion between the mesh dialect and reshard types, plan emission, chain import and
// translation validation (see lowering.h).
#include "lowering/lowering.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "interp/interpreter.h"
#include "lowering/dialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "typesys/absl_compat.h"
#include "typesys/collective.h"
#include "typesys/sub_axis.h"

#ifdef RESHARD_LOWERING_HAVE_PROOFS
#include "proofs/plan_certificate.h"
#endif

namespace reshard::lowering {
namespace {

namespace mesh = ::mlir::mesh;
using ::mlir::Operation;
using ::mlir::RankedTensorType;

// MLIR types and attributes print through llvm::raw_ostream.
template <typename T>
std::string Print(const T& value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  return os.str();
}

std::vector<mesh::MeshAxis> AxisIndices(const Mesh& m, const AxisList& names) {
  std::vector<mesh::MeshAxis> indices;
  for (const AxisName& name : names) indices.push_back(m.AxisIndex(name));
  return indices;
}

absl::StatusOr<AxisList> AxisNames(const Mesh& m, llvm::ArrayRef<int16_t> axes,
                                   std::string_view what) {
  AxisList names;
  for (int16_t axis : axes) {
    if (axis < 0 || axis >= m.num_axes()) {
      return absl::InvalidArgumentError(absl::StrCat(Absl(what), ": mesh axis ", axis,
                                                     " is out of range for a mesh with ",
                                                     m.num_axes(), " axes"));
    }
    // The mesh's own axis names: a<i> on a converted mesh, atoms on a refinement (below).
    names.push_back(m.axes()[axis].name);
  }
  return names;
}

// The first reference in `plan` that is not an axis of `m` (a sub-axis), or "".
std::string FirstNonAxis(const Mesh& m, const Plan& plan) {
  auto first = [&](const AxisList& refs) -> std::string {
    for (const AxisName& ref : refs) {
      if (!m.HasAxis(ref)) return ref.str();
    }
    return "";
  };
  auto in_type = [&](const DistType& type) -> std::string {
    for (const Dim& dim : type.dims) {
      if (std::string ref = first(dim.axes); !ref.empty()) return ref;
    }
    return first(type.partial);
  };
  if (std::string ref = in_type(plan.source); !ref.empty()) return ref;
  for (const Step& step : plan.steps) {
    if (std::string ref = first(step.op.mesh_axes); !ref.empty()) return ref;
    if (std::string ref = in_type(step.type); !ref.empty()) return ref;
  }
  return "";
}

std::string ShapeSuffix(const Mesh& m) {
  std::vector<int64_t> sizes;
  for (const MeshAxis& axis : m.axes()) sizes.push_back(axis.size);
  return absl::StrJoin(sizes, "x");
}

}  // namespace

std::string MeshAxisName(int index) { return absl::StrCat("a", index); }

absl::StatusOr<Mesh> ConvertMesh(mlir::mesh::MeshOp mesh_op) {
  std::vector<MeshAxis> axes;
  llvm::ArrayRef<int64_t> shape = mesh_op.getShape();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (mlir::ShapedType::isDynamic(shape[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh @", mesh_op.getSymName().str(),
                       " has a dynamic size on axis ", i, "; reshard needs a static mesh"));
    }
    axes.push_back({MeshAxisName(static_cast<int>(i)), shape[i]});
  }
  return Mesh::Create(std::move(axes));
}

absl::StatusOr<ElementType> ConvertElementType(mlir::Type type) {
  if (type.isF32()) return ElementType::kF32;
  if (type.isF64()) return ElementType::kF64;
  if (type.isBF16()) return ElementType::kBF16;
  if (type.isF16()) return ElementType::kF16;
  if (type.isInteger(8)) return ElementType::kI8;
  if (type.isInteger(32)) return ElementType::kI32;
  if (type.isInteger(64)) return ElementType::kI64;
  return absl::InvalidArgumentError(
      absl::StrCat("element type ", Print(type),
                   " is not supported (reshard knows f32, f64, bf16, f16, i8, i32, i64)"));
}

absl::StatusOr<DistType> ConvertSharding(const Mesh& m, RankedTensorType global,
                                         mlir::mesh::MeshShardingAttr sharding) {
  DistType type;
  absl::StatusOr<ElementType> element = ConvertElementType(global.getElementType());
  if (!element.ok()) return element.status();
  type.element_type = *element;
  for (int64_t i = 0; i < global.getRank(); ++i) {
    if (global.isDynamicDim(i)) {
      return absl::InvalidArgumentError(absl::StrCat("dimension ", i, " of ", Print(global),
                                                     " is dynamic; reshard needs static shapes"));
    }
    type.dims.push_back({global.getDimSize(i), {}});
  }
  auto split = sharding.getSplitAxes();
  if (static_cast<int64_t>(split.size()) > global.getRank()) {
    // `[[]]` on a rank-0 tensor is the replicated sharding; anything else is too long.
    bool all_empty = llvm::all_of(split, [](mesh::MeshAxesAttr a) { return a.empty(); });
    if (!all_empty) {
      return absl::InvalidArgumentError(
          absl::StrCat("sharding ", Print(sharding), " has ", split.size(),
                       " split_axes entries for ", Print(global), " of rank ", global.getRank()));
    }
  }
  for (size_t i = 0; i < split.size() && static_cast<int64_t>(i) < global.getRank(); ++i) {
    absl::StatusOr<AxisList> names =
        AxisNames(m, split[i].asArrayRef(), absl::StrCat("split_axes of dimension ", i));
    if (!names.ok()) return names.status();
    type.dims[i].axes = *std::move(names);
  }
  if (!sharding.getPartialAxes().empty()) {
    if (sharding.getPartialType() != mesh::ReductionKind::Sum) {
      return absl::InvalidArgumentError(absl::StrCat(
          "partial = ", mesh::stringifyReductionKind(sharding.getPartialType()).str(),
          " is not supported: reshard models pending sums only (partial = sum)"));
    }
    absl::StatusOr<AxisList> names = AxisNames(m, sharding.getPartialAxes(), "partial axes");
    if (!names.ok()) return names.status();
    type.partial = *std::move(names);
  }
  absl::Status valid = Validate(m, type);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("sharding ", Print(sharding), " of ",
                                                   Print(global), ": ", valid.message()));
  }
  return type;
}

mlir::mesh::MeshShardingAttr ToShardingAttr(mlir::MLIRContext* context, llvm::StringRef mesh_name,
                                            const Mesh& m, const DistType& type) {
  llvm::SmallVector<llvm::SmallVector<mesh::MeshAxis>> split;
  for (const Dim& dim : type.dims) {
    llvm::SmallVector<mesh::MeshAxis> axes;
    for (mesh::MeshAxis a : AxisIndices(m, dim.axes)) axes.push_back(a);
    split.push_back(std::move(axes));
  }
  mesh::removeTrailingEmptySubArray(split);
  if (split.empty()) split.emplace_back();  // `[[]]`: the parser needs one entry.
  llvm::SmallVector<mesh::MeshAxis> partial;
  for (const AxisName& axis : PartialInMeshOrder(m, type)) partial.push_back(m.AxisIndex(axis));
  return mesh::MeshShardingAttr::get(context, mlir::FlatSymbolRefAttr::get(context, mesh_name),
                                     split, partial, mesh::ReductionKind::Sum);
}

RankedTensorType LocalTensorType(const Mesh& m, const DistType& type, mlir::Type element_type) {
  std::vector<int64_t> shape = LocalShape(m, type);
  return RankedTensorType::get(shape, element_type);
}

mlir::mesh::MeshOp RefinedMeshOp(mlir::mesh::MeshOp mesh_op, const Mesh& refined,
                                  mlir::SymbolTableCollection& symbols) {
  Operation* table_op = mlir::SymbolTable::getNearestSymbolTable(mesh_op->getParentOp());
  mlir::SymbolTable& table = symbols.getSymbolTable(table_op);
  llvm::SmallVector<int64_t> shape;
  for (const MeshAxis& axis : refined.axes()) shape.push_back(axis.size);
  const std::string base = absl::StrCat(mesh_op.getSymName().str(), "_", ShapeSuffix(refined));
  std::string name = base;
  for (int suffix = 1;; ++suffix) {
    Operation* existing = table.lookup(name);
    if (existing == nullptr) break;
    auto existing_mesh = mlir::dyn_cast<mesh::MeshOp>(existing);
    if (existing_mesh && existing_mesh.getShape() == llvm::ArrayRef<int64_t>(shape)) {
      return existing_mesh;
    }
    name = absl::StrCat(base, "_", suffix);
  }
  mlir::OpBuilder builder(mesh_op->getContext());
  auto fresh = builder.create<mesh::MeshOp>(mesh_op.getLoc(), name, shape);
  table.insert(fresh, std::next(mlir::Block::iterator(mesh_op)));
  return fresh;
}

absl::StatusOr<AxisRefinement> RefinementOf(const Mesh& coarse, const Mesh& fine) {
  auto not_a_refinement = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("mesh ", fine.ToString(),
                                                   " is not a refinement of ", coarse.ToString(),
                                                   ": ", Absl(why)));
  };
  if (fine.num_devices() != coarse.num_devices()) {
    return not_a_refinement("the device counts differ");
  }
  // Each coarse axis is a run of consecutive fine axes whose sizes multiply to its size (one
  // fine axis for a size-1 coarse axis); the run's members are its pieces, major to minor.
  AxisList refs;
  std::vector<int64_t> fine_sizes;
  int next = 0;
  for (int i = 0; i < coarse.num_axes(); ++i) {
    const MeshAxis& axis = coarse.axes()[i];
    int64_t covered = 1;
    int first = next;
    do {
      if (next >= fine.num_axes()) return not_a_refinement("its axes run out");
      covered *= fine.axes()[next].size;
      ++next;
    } while (covered < axis.size);
    if (covered != axis.size) {
      return not_a_refinement(absl::StrCat("no run of its axes has the size ", axis.size,
                                           " of axis ", i));
    }
    int64_t pre = 1;
    for (int j = first; j < next; ++j) {
      const int64_t size = fine.axes()[j].size;
      if (next - first == 1) {
        refs.push_back(axis.name);
      } else if (size == 1) {
        return not_a_refinement(absl::StrCat("axis ", j, " of size 1 splits axis ", i));
      } else {
        refs.push_back(absl::StrCat(axis.name, ":(", pre, ")", size));
      }
      fine_sizes.push_back(size);
      pre *= size;
    }
  }
  if (next != fine.num_axes()) return not_a_refinement("it has axes left over");
  absl::StatusOr<AxisRefinement> r = AxisRefinement::Create(coarse, refs);
  if (!r.ok()) return r.status();
  // Every piece is its own atom (the pieces tile each axis), so the refinement has exactly the
  // fine mesh's sizes; checked rather than assumed.
  std::vector<int64_t> got;
  for (const MeshAxis& atom : r->refined().axes()) got.push_back(atom.size);
  if (got != fine_sizes) return not_a_refinement("internal: refinement sizes differ");
  return r;
}

int64_t EmittedSteps(const Plan& plan) {
  const int64_t steps = std::ssize(plan.steps);
  if (steps > 0 && plan.steps.back().op.kind == CollectiveKind::kCollectivePermute &&
      plan.steps.back().op.source_target_pairs.empty()) {
    return steps - 1;
  }
  return steps;
}

absl::StatusOr<mlir::Value> EmitPlan(mlir::OpBuilder& builder, mlir::Location loc,
                                     llvm::StringRef mesh_name, const Mesh& m, const Plan& plan,
                                     mlir::Value source) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].op.kind == CollectiveKind::kAllToAllV) {
      return absl::InvalidArgumentError(absl::StrCat(
          "strategy '", plan.strategy, "' produced all_to_all_v (step ", i + 1,
          "), which has no mesh-dialect equivalent; use strategy=normal or optimal"));
    }
  }
  if (std::string ref = FirstNonAxis(m, plan); !ref.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the plan names ", ref, ", which is not an axis of mesh @", mesh_name.str(), " (",
        m.ToString(), "); MLIR 19's mesh dialect has no sub-axes: emit RefinePlan(plan) on the "
        "mesh.mesh of its refined mesh (RefinedMeshOp)"));
  }
  mlir::Type element_type = mlir::cast<mlir::ShapedType>(source.getType()).getElementType();
  mlir::Value value = source;
  const int64_t emitted = EmittedSteps(plan);
  for (int64_t i = 0; i < emitted; ++i) {
    const Step& step = plan.steps[i];
    const Collective& op = step.op;
    RankedTensorType result = LocalTensorType(m, step.type, element_type);
    std::vector<mesh::MeshAxis> axes = AxisIndices(m, op.mesh_axes);
    llvm::APInt dim(64, op.dim);
    switch (op.kind) {
      case CollectiveKind::kAllSlice:
        value = builder.create<mesh::AllSliceOp>(loc, result, mesh_name, axes, value, dim);
        break;
      case CollectiveKind::kAllGather:
        value = builder.create<mesh::AllGatherOp>(loc, result, mesh_name, axes, value, dim);
        break;
      case CollectiveKind::kAllToAll:
        value = builder.create<mesh::AllToAllOp>(loc, result, mesh_name, axes, value,
                                                 llvm::APInt(64, op.split_dim), dim);
        break;
      case CollectiveKind::kAllReduce:
        value = builder.create<mesh::AllReduceOp>(loc, result, mesh_name, axes, value,
                                                  mesh::ReductionKind::Sum);
        break;
      case CollectiveKind::kReduceScatter:
        value = builder.create<mesh::ReduceScatterOp>(loc, result, mesh_name, axes, value,
                                                      mesh::ReductionKind::Sum, dim);
        break;
      case CollectiveKind::kCollectivePermute: {
        llvm::SmallVector<int64_t> flat;
        for (const auto& [s, t] : op.source_target_pairs) {
          flat.push_back(s);
          flat.push_back(t);
        }
        value = builder.create<CollectivePermuteOp>(
            loc, result, value, mlir::FlatSymbolRefAttr::get(builder.getContext(), mesh_name),
            builder.getDenseI64ArrayAttr(flat));
        break;
      }
      case CollectiveKind::kAllToAllV:
        break;  // Rejected above.
    }
  }
  return value;
}

void AnnotateChain(Operation* last, mlir::mesh::MeshShardingAttr from,
                   mlir::mesh::MeshShardingAttr to, RankedTensorType global, int64_t steps) {
  mlir::Builder b(last->getContext());
  last->setAttr(kReshardingAttrName,
                b.getDictionaryAttr({b.getNamedAttr("from", from), b.getNamedAttr("to", to),
                                     b.getNamedAttr("global_type", mlir::TypeAttr::get(global)),
                                     b.getNamedAttr("steps", b.getI64IntegerAttr(steps))}));
}

bool IsChainCollective(Operation* op) {
  return mlir::isa<mesh::AllSliceOp, mesh::AllGatherOp, mesh::AllToAllOp, mesh::AllReduceOp,
                   mesh::ReduceScatterOp, CollectivePermuteOp>(op);
}

namespace {

// One op of a chain as a collective. `permute` ops leave the result type open.
absl::StatusOr<Collective> ReadCollective(const Mesh& m, llvm::StringRef mesh_name,
                                          Operation* op) {
  std::string where = absl::StrCat("'", op->getName().getStringRef().str(), "'");
  auto check_mesh = [&](mlir::FlatSymbolRefAttr attr) -> absl::Status {
    if (attr.getValue() != mesh_name) {
      return absl::InvalidArgumentError(absl::StrCat(where, " runs on @", attr.getValue().str(),
                                                     " but the chain is on @", mesh_name.str()));
    }
    return absl::OkStatus();
  };
  auto names = [&](llvm::ArrayRef<int16_t> axes) { return AxisNames(m, axes, where); };
  auto sum_only = [&](mesh::ReductionKind kind) -> absl::Status {
    if (kind != mesh::ReductionKind::Sum) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " reduces with ", mesh::stringifyReductionKind(kind).str(),
          "; only sum maps to reshard"));
    }
    return absl::OkStatus();
  };
#define RESHARD_RETURN_IF_ERROR(expr)   \
  do {                                  \
    absl::Status _status = (expr);      \
    if (!_status.ok()) return _status;  \
  } while (false)
  if (auto slice = mlir::dyn_cast<mesh::AllSliceOp>(op)) {
    RESHARD_RETURN_IF_ERROR(check_mesh(slice.getMeshAttr()));
    auto axes = names(slice.getMeshAxes());
    if (!axes.ok()) return axes.status();
    return Collective::AllSlice(*axes, slice.getSliceAxis().getSExtValue());
  }
  if (auto gather = mlir::dyn_cast<mesh::AllGatherOp>(op)) {
    RESHARD_RETURN_IF_ERROR(check_mesh(gather.getMeshAttr()));
    auto axes = names(gather.getMeshAxes());
    if (!axes.ok()) return axes.status();
    return Collective::AllGather(*axes, gather.getGatherAxis().getSExtValue());
  }
  if (auto a2a = mlir::dyn_cast<mesh::AllToAllOp>(op)) {
    RESHARD_RETURN_IF_ERROR(check_mesh(a2a.getMeshAttr()));
    auto axes = names(a2a.getMeshAxes());
    if (!axes.ok()) return axes.status();
    return Collective::AllToAll(*axes, a2a.getConcatAxis().getSExtValue(),
                                a2a.getSplitAxis().getSExtValue());
  }
  if (auto reduce = mlir::dyn_cast<mesh::AllReduceOp>(op)) {
    RESHARD_RETURN_IF_ERROR(check_mesh(reduce.getMeshAttr()));
    RESHARD_RETURN_IF_ERROR(sum_only(reduce.getReduction()));
    auto axes = names(reduce.getMeshAxes());
    if (!axes.ok()) return axes.status();
    return Collective::AllReduce(*axes);
  }
  if (auto scatter = mlir::dyn_cast<mesh::ReduceScatterOp>(op)) {
    RESHARD_RETURN_IF_ERROR(check_mesh(scatter.getMeshAttr()));
    RESHARD_RETURN_IF_ERROR(sum_only(scatter.getReduction()));
    auto axes = names(scatter.getMeshAxes());
    if (!axes.ok()) return axes.status();
    return Collective::ReduceScatter(*axes, scatter.getScatterAxis().getSExtValue());
  }
  if (auto permute = mlir::dyn_cast<CollectivePermuteOp>(op)) {
    RESHARD_RETURN_IF_ERROR(check_mesh(permute.getMeshAttr()));
    llvm::ArrayRef<int64_t> flat = permute.getSourceTargetPairs();
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (size_t i = 0; i + 1 < flat.size(); i += 2) pairs.emplace_back(flat[i], flat[i + 1]);
    return Collective::Permute(std::move(pairs));
  }
#undef RESHARD_RETURN_IF_ERROR
  return absl::InvalidArgumentError(
      absl::StrCat(where, " is not a collective reshard can read back (expected mesh.all_slice, "
                          "all_gather, all_to_all, all_reduce, reduce_scatter or "
                          "reshard.collective_permute)"));
}

// Every type with `in`'s element type, global shape and partial axes whose dimensions have
// `local` sizes, over the axes `in` does not use for partial sums. Calls `visit` for each
// until it returns true; returns whether one did. Bounded by `budget` candidates.
bool ForEachPermuteCandidate(const Mesh& m, const DistType& in, const std::vector<int64_t>& local,
                             int64_t& budget, const std::function<bool(const DistType&)>& visit) {
  std::vector<std::string> free_axes;
  for (const MeshAxis& axis : m.axes()) {
    if (AxisUse(in, axis.name) != kPartial) free_axes.push_back(axis.name);
  }
  DistType candidate = in;
  for (Dim& d : candidate.dims) d.axes.clear();
  std::vector<bool> used(free_axes.size(), false);
  // Fills dimension `dim` one axis at a time; `factor` is what is still to be covered.
  std::function<bool(int, int64_t)> fill = [&](int dim, int64_t factor) -> bool {
    if (budget <= 0) return false;
    if (dim == candidate.rank()) {
      --budget;
      return visit(candidate);
    }
    if (factor == 1) {
      int next = dim + 1;
      int64_t next_factor =
          next < candidate.rank() ? candidate.dims[next].size / local[next] : 1;
      if (fill(next, next_factor)) return true;
    }
    for (size_t a = 0; a < free_axes.size(); ++a) {
      int64_t size = m.AxisSize(free_axes[a]);
      if (used[a] || factor % size != 0 || (size == 1 && factor != 1)) continue;
      if (size == 1) continue;  // Size-1 axes change no block: leave them out.
      used[a] = true;
      candidate.dims[dim].axes.push_back(free_axes[a]);
      if (fill(dim, factor / size)) return true;
      candidate.dims[dim].axes.pop_back();
      used[a] = false;
    }
    return false;
  };
  if (candidate.rank() == 0) return visit(candidate);
  return fill(0, candidate.dims[0].size / local[0]);
}

}  // namespace

absl::StatusOr<Plan> ImportChain(const Mesh& m, llvm::StringRef mesh_name, const DistType& source,
                                 const DistType& target, llvm::ArrayRef<Operation*> ops) {
  std::vector<Collective> collectives;
  std::vector<RankedTensorType> result_types;
  for (Operation* op : ops) {
    absl::StatusOr<Collective> c = ReadCollective(m, mesh_name, op);
    if (!c.ok()) return c.status();
    collectives.push_back(*std::move(c));
    auto type = op->getNumResults() == 1
                    ? mlir::dyn_cast<RankedTensorType>(op->getResult(0).getType())
                    : RankedTensorType();
    if (!type) {
      return absl::InvalidArgumentError("a chain op must have one ranked tensor result");
    }
    result_types.push_back(type);
  }
  std::vector<Step> steps;
  absl::Status first_error = absl::OkStatus();
  int64_t budget = 200000;
  // Depth-first over the steps; only permutes branch (over candidate result types).
  std::function<bool(const DistType&, size_t)> walk = [&](const DistType& in, size_t i) -> bool {
    if (i == collectives.size()) {
      if (in == target) return true;
      if (CheckPermute(m, in, Collective::Permute({}), target).ok()) {
        steps.push_back({Collective::Permute({}), target});  // EmittedSteps left it out.
        return true;
      }
      if (first_error.ok()) {
        first_error = absl::InvalidArgumentError(absl::StrCat(
            "the chain ends at ", ToString(in), " but the resharding's target is ",
            ToString(target)));
      }
      return false;
    }
    std::string where = absl::StrCat(
        "op ", i + 1, " of ", collectives.size(), " (", ToString(collectives[i]), ")");
    auto accept = [&](const DistType& out) -> bool {
      std::vector<int64_t> local = LocalShape(m, out);
      if (llvm::ArrayRef<int64_t>(local) != result_types[i].getShape()) {
        if (first_error.ok()) {
          first_error = absl::InvalidArgumentError(
              absl::StrCat(where, ": result type ", Print(result_types[i]),
                           " is not the local tensor of ", ToString(out)));
        }
        return false;
      }
      steps.push_back({collectives[i], out});
      if (walk(out, i + 1)) return true;
      steps.pop_back();
      return false;
    };
    if (collectives[i].kind == CollectiveKind::kCollectivePermute) {
      std::vector<int64_t> local(result_types[i].getShape().begin(),
                                 result_types[i].getShape().end());
      if (static_cast<int>(local.size()) != in.rank()) {
        if (first_error.ok()) {
          first_error = absl::InvalidArgumentError(absl::StrCat(where, ": rank changes"));
        }
        return false;
      }
      auto try_out = [&](const DistType& out) -> bool {
        if (!CheckPermute(m, in, collectives[i], out).ok()) return false;
        return accept(out);
      };
      // The target first (a final permute), then every layout with the result's local shape.
      if (i + 1 == collectives.size() && Validate(m, target).ok() &&
          CheckPermute(m, in, collectives[i], target).ok()) {
        return accept(target);
      }
      for (int64_t d = 0; d < in.rank(); ++d) {
        if (local[d] <= 0 || in.dims[d].size % local[d] != 0) {
          if (first_error.ok()) {
            first_error = absl::InvalidArgumentError(
                absl::StrCat(where, ": result type ", Print(result_types[i]),
                             " does not divide the global shape of ", ToString(in)));
          }
          return false;
        }
      }
      bool found = ForEachPermuteCandidate(m, in, local, budget, try_out);
      if (!found && first_error.ok()) {
        first_error = absl::InvalidArgumentError(
            absl::StrCat(where, ": no layout of ", Print(result_types[i]),
                         " is reached by these pairs from ", ToString(in),
                         " and leads to the target"));
      }
      return found;
    }
    absl::StatusOr<DistType> out = ApplyRule(m, in, collectives[i]);
    if (!out.ok()) {
      if (first_error.ok()) {
        first_error = absl::InvalidArgumentError(absl::StrCat(where, ": ", out.status().message()));
      }
      return false;
    }
    return accept(*out);
  };
  if (!walk(source, 0)) {
    if (!first_error.ok()) return first_error;
    return absl::InvalidArgumentError("the chain does not read back into a plan");
  }
  Plan plan;
  plan.mesh = m;
  plan.source = source;
  plan.target = target;
  plan.strategy = "imported";
  plan.steps = std::move(steps);
  absl::Status checked = CheckSteps(m, source, plan.steps);
  if (!checked.ok()) return checked;
  plan.metrics = ComputeMetrics(m, source, plan.steps);
  return plan;
}

mesh::MeshOp LookupMesh(Operation* from, mlir::FlatSymbolRefAttr name,
                        mlir::SymbolTableCollection* symbols) {
  if (symbols != nullptr) return mesh::getMeshOrNull(from, name, *symbols);
  return mlir::dyn_cast_or_null<mesh::MeshOp>(
      mlir::SymbolTable::lookupNearestSymbolFrom(from, name.getAttr()));
}

absl::StatusOr<Plan> ImportAnnotatedChain(Operation* last, mlir::SymbolTableCollection* symbols) {
  auto dict = last->getAttrOfType<mlir::DictionaryAttr>(kReshardingAttrName);
  if (!dict) {
    return absl::InvalidArgumentError(
        absl::StrCat("op has no ", kReshardingAttrName, " dictionary attribute"));
  }
  auto from = dict.getAs<mesh::MeshShardingAttr>("from");
  auto to = dict.getAs<mesh::MeshShardingAttr>("to");
  auto global_attr = dict.getAs<mlir::TypeAttr>("global_type");
  auto steps_attr = dict.getAs<mlir::IntegerAttr>("steps");
  RankedTensorType global =
      global_attr ? mlir::dyn_cast<RankedTensorType>(global_attr.getValue()) : RankedTensorType();
  if (!from || !to || !global || !steps_attr || steps_attr.getInt() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        kReshardingAttrName,
        " needs {from = #mesh.shard<..>, to = #mesh.shard<..>, global_type = tensor<..>, "
        "steps = N >= 1}"));
  }
  if (from.getMesh() != to.getMesh()) {
    return absl::InvalidArgumentError("from and to shardings name different meshes");
  }
  auto mesh_op = LookupMesh(last, from.getMesh(), symbols);
  if (!mesh_op) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown mesh ", Print(from.getMesh())));
  }
  absl::StatusOr<Mesh> m = ConvertMesh(mesh_op);
  if (!m.ok()) return m.status();
  absl::StatusOr<DistType> source = ConvertSharding(*m, global, from);
  if (!source.ok()) return source.status();
  absl::StatusOr<DistType> target = ConvertSharding(*m, global, to);
  if (!target.ok()) return target.status();
  // Walk back `steps` ops through the first operand.
  std::vector<Operation*> ops = {last};
  for (int64_t i = 1; i < steps_attr.getInt(); ++i) {
    Operation* front = ops.back();
    Operation* def = front->getNumOperands() == 1 ? front->getOperand(0).getDefiningOp() : nullptr;
    if (!def || !IsChainCollective(def)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the chain is shorter than the annotated ", steps_attr.getInt(), " steps: op ",
          steps_attr.getInt() - i, " is not a collective"));
    }
    ops.push_back(def);
  }
  std::reverse(ops.begin(), ops.end());
  // The chain may run on a refinement of the shardings' mesh (a plan with sub-axes, lowered
  // on the refined mesh; docs/mlir.md): read it on the refinement, whose axes are named by
  // their sub-axis references of the coarse mesh, and coarsen the plan back.
  auto chain_mesh = ops.front()->getAttrOfType<mlir::FlatSymbolRefAttr>("mesh");
  if (chain_mesh && chain_mesh != from.getMesh()) {
    auto chain_mesh_op = LookupMesh(ops.front(), chain_mesh, symbols);
    if (!chain_mesh_op) {
      return absl::InvalidArgumentError(absl::StrCat("unknown mesh ", Print(chain_mesh)));
    }
    absl::StatusOr<Mesh> fine = ConvertMesh(chain_mesh_op);
    if (!fine.ok()) return fine.status();
    absl::StatusOr<AxisRefinement> refinement = RefinementOf(*m, *fine);
    if (!refinement.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the chain runs on @", chain_mesh.getValue().str(), " but the resharding is on @",
          from.getMesh().getValue().str(), ": ", refinement.status().message()));
    }
    const Mesh& refined = refinement->refined();
    const DistType refined_source = refinement->Refine(*source);
    if (ops.front()->getNumOperands() != 1 ||
        ops.front()->getOperand(0).getType() !=
            LocalTensorType(refined, refined_source, global.getElementType())) {
      return absl::InvalidArgumentError(
          absl::StrCat("the chain's input is not the local tensor ",
                       Print(LocalTensorType(*m, *source, global.getElementType())), " of ",
                       ToString(*source)));
    }
    absl::StatusOr<Plan> plan = ImportChain(refined, chain_mesh.getValue(), refined_source,
                                            refinement->Refine(*target), ops);
    if (!plan.ok()) return plan.status();
    return CoarsenPlan(*m, *std::move(plan));
  }
  if (ops.front()->getNumOperands() != 1 ||
      ops.front()->getOperand(0).getType() !=
          LocalTensorType(*m, *source, global.getElementType())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the chain's input is not the local tensor ",
                     Print(LocalTensorType(*m, *source, global.getElementType())), " of ",
                     ToString(*source)));
  }
  return ImportChain(*m, from.getMesh().getValue(), *source, *target, ops);
}

bool CanProve() {
#ifdef RESHARD_LOWERING_HAVE_PROOFS
  return true;
#else
  return false;
#endif
}

absl::Status ValidatePlan(const Plan& plan, bool prove, std::string* summary) {
  absl::StatusOr<RunReport> report = RunPlan(plan);
  if (!report.ok()) return report.status();
  if (!report->ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("the interpreter finds wrong data: ", report->message));
  }
  std::string text = absl::StrCat(plan.steps.size(), " steps ", ToString(plan.source), " -> ",
                                  ToString(plan.target), ": interpreter ok (peak ",
                                  report->peak_local_bytes, " B/device, received max ",
                                  report->bytes_received_max, " B)");
#ifdef RESHARD_LOWERING_HAVE_PROOFS
  if (prove) {
    absl::StatusOr<PlanCertificate> certificate =
        CertifyPlan(plan.mesh, plan.source, plan.target, plan.steps);
    if (!certificate.ok()) return certificate.status();
    const Obligation& o = certificate->obligation;
    switch (o.status) {
      case ObligationStatus::kProved:
        absl::StrAppend(&text, "; proved by Z3");
        break;
      case ObligationStatus::kRefuted:
        return absl::InvalidArgumentError(absl::StrCat(
            "Z3 refutes the chain: ", o.counterexample ? o.counterexample->text : o.message));
      case ObligationStatus::kUnknown:
        return absl::UnknownError(absl::StrCat("Z3 could not decide the chain: ", o.message));
      case ObligationStatus::kError:
        return absl::InvalidArgumentError(absl::StrCat("Z3 certificate failed: ", o.message));
    }
  }
#else
  if (prove) absl::StrAppend(&text, "; not proved (built without proofs/)");
#endif
  if (summary != nullptr) *summary = std::move(text);
  return absl::OkStatus();
}

}  // namespace reshard::lowering
