// lowering.h — between MLIR's mesh dialect and reshard's types and plans.
//
// The mapping (docs/mlir.md):
//   mesh.mesh @m(shape = 2x4)                     ->  Mesh "a0=2,a1=4" (axis i is named a<i>)
//   tensor<16x8xf32> + <@m, [[0], [1]]>           ->  f32[16{a0},8{a1}]
//   tensor<16x8xf32> + <@m, [[1, 0]], partial = sum[2]> on a 2x4x2 mesh
//                                                 ->  f32[16{a1,a0},8] partial{a2}
// Only `sum` partial shardings, static shapes and static meshes map; everything else is an
// InvalidArgument that names the offending part.
//
//   absl::StatusOr<reshard::Mesh> mesh = ConvertMesh(meshOp);
//   absl::StatusOr<reshard::DistType> from = ConvertSharding(*mesh, tensorType, sharding);
//   absl::StatusOr<mlir::Value> out = EmitPlan(builder, loc, "m", *mesh, plan, shard);
//   absl::StatusOr<reshard::Plan> back = ImportAnnotatedChain(out->getDefiningOp());
//   absl::Status ok = ValidatePlan(*back, /*prove=*/true, &summary);
//
// Emitted IR: mesh.all_slice / all_gather / all_to_all / all_reduce / reduce_scatter (sum)
// and reshard.collective_permute; all_to_all_v has no mesh-dialect form (InvalidArgument).
// With annotation on, the last op of a chain carries kReshardingAttrName =
// {from = #mesh.shard<..>, to = #mesh.shard<..>, global_type = tensor<..>, steps = N : i64},
// which is all ImportAnnotatedChain needs to read the chain back (translation validation).
//
// Sub-axes (typesys/sub_axis.h): MLIR 19's mesh dialect has none, so a plan naming `a1:(2)2`
// is emitted on the *refined* mesh (RefinePlan), declared as a mesh.mesh of its own shape
// (RefinedMeshOp: 2x4 refined for a1:(2)2 is `mesh.mesh @mesh_2x2x2(shape = 2x2x2)`). Both
// meshes number devices row-major, and refining splits one coordinate into its mixed-radix
// digits, so device ids (mesh.process_linear_index), every local block and every collective's
// device groups are the same on both. The annotation keeps the shardings on the user's mesh;
// ImportAnnotatedChain reads a chain on a refinement back into a plan on the user's mesh.
#ifndef RESHARD_LOWERING_LOWERING_H_
#define RESHARD_LOWERING_LOWERING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"
#include "typesys/plan.h"
#include "typesys/sub_axis.h"

namespace reshard::lowering {

// Discardable attribute marking the last op of an emitted resharding chain.
inline constexpr char kReshardingAttrName[] = "reshard.resharding";

// The reshard name of mesh axis `index`: "a0", "a1", ...
std::string MeshAxisName(int index);

// A mesh.mesh as a reshard Mesh. InvalidArgument for a dynamic axis size.
absl::StatusOr<Mesh> ConvertMesh(mlir::mesh::MeshOp mesh);

// The reshard element type of `type` (f32, f64, bf16, f16, and integers of 8, 32, 64 bits).
// InvalidArgument naming the type otherwise.
absl::StatusOr<ElementType> ConvertElementType(mlir::Type type);

// `global` distributed by `sharding` as a reshard type, validated on `mesh` (the converted
// mesh `sharding` refers to). InvalidArgument naming the problem: dynamic dimension, element
// type, more split_axes entries than dimensions, a mesh axis out of range or used twice, a
// partial type other than sum, a size not divisible by its axes' product.
absl::StatusOr<DistType> ConvertSharding(const Mesh& mesh, mlir::RankedTensorType global,
                                         mlir::mesh::MeshShardingAttr sharding);

// The inverse of ConvertSharding for types on a converted mesh (axis names a<i>).
mlir::mesh::MeshShardingAttr ToShardingAttr(mlir::MLIRContext* context, llvm::StringRef mesh_name,
                                            const Mesh& mesh, const DistType& type);

// Each device's local tensor for `type`, with element type `element_type`.
mlir::RankedTensorType LocalTensorType(const Mesh& mesh, const DistType& type,
                                       mlir::Type element_type);

// How many of plan.steps EmitPlan emits: all but a final permute without pairs, which moves
// nothing and only renames size-1 axes (Synthesize ends a plan with one where the size-1 axes
// of its last type differ from the target's); its input and output have the same local tensor.
int64_t EmittedSteps(const Plan& plan);

// Emits the first EmittedSteps(plan) of plan.steps at the builder's insertion point, starting
// from `source` (a value of plan.source's local tensor type) and returns the final value
// (`source` when nothing is emitted). Every op's result type is the local tensor of its step's
// type. `mesh` is the mesh of `mesh_name`, and every axis reference of the plan must be one of
// its axes. InvalidArgument for an all_to_all_v step (no mesh-dialect equivalent) or a
// reference that is not an axis (a sub-axis: emit RefinePlan(plan) on RefinedMeshOp instead);
// nothing is emitted then.
absl::StatusOr<mlir::Value> EmitPlan(mlir::OpBuilder& builder, mlir::Location loc,
                                     llvm::StringRef mesh_name, const Mesh& mesh, const Plan& plan,
                                     mlir::Value source);

// The mesh.mesh whose shape is `refined` (a refinement of mesh_op's mesh, e.g. from
// RefinePlan): an existing mesh.mesh named <mesh>_<shape> (e.g. @mesh_2x2x2) of exactly that
// shape, or a new one inserted right after `mesh_op` (named <mesh>_<shape>_<n> if the name is
// taken by something else). Inserting modifies the symbol table that holds `mesh_op` (kept
// current in `symbols`): only for passes anchored on that op (the module).
mlir::mesh::MeshOp RefinedMeshOp(mlir::mesh::MeshOp mesh_op, const Mesh& refined,
                                 mlir::SymbolTableCollection& symbols);

// `fine` as a refinement of `coarse`: each coarse axis must be a run of consecutive fine axes
// whose sizes multiply to its size. The result's refined() is `fine` with its axes renamed to
// their sub-axis references on `coarse` (2x4 -> 2x2x2: a0, a1:(1)2, a1:(2)2). InvalidArgument
// naming why otherwise.
absl::StatusOr<AxisRefinement> RefinementOf(const Mesh& coarse, const Mesh& fine);

// Attaches kReshardingAttrName to `last` (see the file comment).
void AnnotateChain(mlir::Operation* last, mlir::mesh::MeshShardingAttr from,
                   mlir::mesh::MeshShardingAttr to, mlir::RankedTensorType global, int64_t steps);

// True for the ops a chain may consist of: mesh.all_slice, all_gather, all_to_all,
// all_reduce, reduce_scatter and reshard.collective_permute.
bool IsChainCollective(mlir::Operation* op);

// Reads `ops` (in order, each consuming the previous one's result; the first consumes a value
// of `source`'s local type) back into a plan from `source` to `target` on `mesh`. The
// collectives' attributes, not any plan, define the steps: mesh_axes indices become the
// names of `mesh`'s axes; step types follow from the typing rules, and a permute's type is the one
// (found by search) with which the rest of the chain ends at `target`. InvalidArgument naming the
// op that does not read back: an unknown op, a different mesh, a non-sum reduction, a result type
// that is not the local tensor of the step's type, a step that does not type-check. A chain that
// ends where every device holds the target's block and summand, with size-1 axes placed otherwise
// (EmitPlan leaves out that final renaming), reads back with a permute without pairs appended.
absl::StatusOr<Plan> ImportChain(const Mesh& mesh, llvm::StringRef mesh_name,
                                 const DistType& source, const DistType& target,
                                 llvm::ArrayRef<mlir::Operation*> ops);

// The mesh.mesh that `name` refers to from `from`, or null. With `symbols`, through that
// collection, which builds and keeps each symbol table it visits (for a pass anchored on the
// module, which looks up many names in one table). Without, by scanning the ops of the
// enclosing symbol tables up to the symbol: a pass anchored on functions would otherwise
// rebuild the module's table once per function, a time that grows with functions × module
// size (mesh.mesh ops usually come first, so the scan is short).
mlir::mesh::MeshOp LookupMesh(mlir::Operation* from, mlir::FlatSymbolRefAttr name,
                              mlir::SymbolTableCollection* symbols = nullptr);

// Reads the chain that ends at `last` (an op carrying kReshardingAttrName) back into a plan.
// When the chain's ops run on another mesh than the annotation's shardings, that mesh must be
// a refinement of the shardings' mesh (RefinementOf); the chain is read on it and the plan
// returned on the shardings' mesh, with sub-axes (CoarsenPlan). InvalidArgument when the
// attribute is malformed, the chain is shorter than `steps`, the meshes do not match, or as
// ImportChain.
// Meshes are looked up as LookupMesh does.
absl::StatusOr<Plan> ImportAnnotatedChain(mlir::Operation* last,
                                          mlir::SymbolTableCollection* symbols = nullptr);

// True when this build can prove plans with Z3 (proofs/ was built).
bool CanProve();

// Translation validation of an imported plan: runs it on the reference interpreter (real
// data, every step and the target checked) and, when `prove` and CanProve(), certifies it
// with Z3 (CertifyPlan). On success `summary` (if given) describes what was checked.
// InvalidArgument with the first wrong device/element, or when Z3 refutes the plan;
// Unknown when Z3 answers unknown (never reported as proved).
absl::Status ValidatePlan(const Plan& plan, bool prove, std::string* summary = nullptr);

}  // namespace reshard::lowering

#endif  // RESHARD_LOWERING_LOWERING_H_
