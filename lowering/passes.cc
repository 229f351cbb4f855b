// reshard-spmdization and reshard-validate (see passes.h).
//
// The spmdization walk follows the contract of upstream's mesh-spmdization (MLIR 19): every
// ranked-tensor block argument has exactly one use, a mesh.shard; every ranked-tensor operand
// of another op is a mesh.shard result; every ranked-tensor result has exactly one use, a
// mesh.shard. A `mesh.shard %v to S` whose operand is itself `mesh.shard %x to R` (R not
// annotate_for_users, S annotate_for_users) is a resharding R -> S; that is where reshard
// differs from upstream. Where upstream asserts on a broken contract (or silently emits
// wrong IR), this pass emits an error and fails. All checks and all plans happen before the
// function is rewritten, so a failing function is left untouched.
//
// Sub-axes: a plan may use part of a mesh axis (`a1:(2)2`), which MLIR 19's mesh dialect cannot
// name; such a plan is emitted on its refined mesh, a mesh.mesh of its own added next to the
// user's (RefinedMeshOp, docs/mlir.md). Adding a symbol to the module is only allowed to a pass
// anchored on the module, so the pass can be scheduled on builtin.module (every func.func in
// it, sub-axes on) or on func.func (whole-axis plans only, as before sub-axes existed).
#include "lowering/passes.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lowering/dialect.h"
#include "lowering/lowering.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/Dialect/Mesh/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassRegistry.h"
#include "synth/plan_cache.h"
#include "synth/synthesize.h"
#include "typesys/absl_compat.h"

namespace reshard::lowering {
namespace {

namespace mesh = ::mlir::mesh;
using ::mlir::Block;
using ::mlir::LogicalResult;
using ::mlir::Operation;
using ::mlir::RankedTensorType;
using ::mlir::Value;

llvm::StringRef Ref(absl::string_view s) { return llvm::StringRef(s.data(), s.size()); }
llvm::StringRef Ref(const absl::Status& status) { return Ref(status.message()); }

// A planned resharding: source shard op -> target shard op.
struct Resharding {
  mesh::MeshOp mesh_op;
  Mesh mesh;
  RankedTensorType global;
  // RefinePlan of the synthesized plan: that plan itself when it has no sub-axes, else on its
  // refined mesh (emitted on RefinedMeshOp).
  Plan emitted;
};

struct ReshardSpmdizationPass
    : public mlir::PassWrapper<ReshardSpmdizationPass, mlir::OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReshardSpmdizationPass)

  ReshardSpmdizationPass() = default;
  // Clones (MLIR's per-thread copies) share the plan cache.
  ReshardSpmdizationPass(const ReshardSpmdizationPass& other)
      : PassWrapper(other), plans_(other.plans_) {}
  explicit ReshardSpmdizationPass(const SpmdizationOptions& options) {
    strategy = options.strategy;
    annotate = options.annotate;
    validate = options.validate;
  }

  llvm::StringRef getArgument() const override { return "reshard-spmdization"; }
  llvm::StringRef getDescription() const override {
    return "Partition a function annotated with mesh.shard (like mesh-spmdization), "
           "resharding with reshard's synthesizer on meshes of any rank";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registerDependentDialects(registry);
  }

  Option<std::string> strategy{*this, "strategy",
                               llvm::cl::desc("Synthesis strategy: normal (default), optimal, "
                                              "naive, gspmd, greedy (direct/auto may produce "
                                              "all_to_all_v, which is rejected)"),
                               llvm::cl::init("normal")};
  Option<bool> annotate{*this, "annotate",
                        llvm::cl::desc("Mark the last op of every emitted chain with "
                                       "reshard.resharding (read by reshard-validate)"),
                        llvm::cl::init(false)};
  Option<bool> validate{*this, "validate",
                        llvm::cl::desc("Read every emitted chain back from the IR and check it "
                                       "on the interpreter (and Z3 when built with proofs/)"),
                        llvm::cl::init(false)};

  // builtin.module: every function in it, plans may use sub-axes (the pass may add refined
  // mesh.mesh ops to the module). func.func: that function, whole-axis plans only.
  bool canScheduleOn(mlir::RegisteredOperationName name) const override {
    return name.getStringRef() == mlir::ModuleOp::getOperationName() ||
           name.getStringRef() == mlir::func::FuncOp::getOperationName();
  }

  void runOnOperation() override;

 private:
  LogicalResult runOnFunction(mlir::func::FuncOp func, Strategy parsed);
  LogicalResult check(mlir::func::FuncOp func, Strategy parsed);
  LogicalResult checkShard(mesh::ShardOp shard, Strategy parsed);
  LogicalResult checkOp(Operation& op);
  LogicalResult rewrite(mlir::func::FuncOp func);
  LogicalResult rewriteShard(mesh::ShardOp shard, mlir::IRMapping& map, mlir::OpBuilder& builder);
  LogicalResult rewriteOp(Operation& op, mlir::IRMapping& map, mlir::OpBuilder& builder);

  // How meshes are looked up (LookupMesh): through symbols_ when anchored on the module, by a
  // scan when anchored on a function.
  mlir::SymbolTableCollection* meshSymbols() { return sub_axes_ ? &symbols_ : nullptr; }

  // Upstream's spmdize and RefinedMeshOp take it; our mesh lookups only on the module.
  mlir::SymbolTableCollection symbols_;
  llvm::DenseMap<Operation*, Resharding> reshardings_;  // Keyed by the target shard op.
  // Models repeat one resharding in every layer: plans are cached per synthesis problem,
  // across the functions this pass and its clones run on (PlanCache is thread-safe).
  std::shared_ptr<PlanCache> plans_ = std::make_shared<PlanCache>();
  // True when anchored on a module: synthesis may use sub-axes, and plans that do are emitted
  // on refined meshes added to the module.
  bool sub_axes_ = false;
};

mesh::ShardOp SourceShard(mesh::ShardOp target) {
  return target.getSrc().getDefiningOp<mesh::ShardOp>();
}

std::string Print(mlir::Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return os.str();
}

LogicalResult ReshardSpmdizationPass::checkShard(mesh::ShardOp shard, Strategy parsed) {
  mesh::MeshShardingAttr sharding = shard.getShard();
  auto mesh_op = LookupMesh(shard, sharding.getMesh(), meshSymbols());
  if (!mesh_op) {
    return shard.emitError("mesh.shard refers to ")
           << sharding.getMesh() << ", which is not a mesh.mesh";
  }
  absl::StatusOr<Mesh> m = ConvertMesh(mesh_op);
  if (!m.ok()) return shard.emitError(Ref(m.status()));
  auto global = mlir::cast<RankedTensorType>(shard.getSrc().getType());
  absl::StatusOr<DistType> type = ConvertSharding(*m, global, sharding);
  if (!type.ok()) return shard.emitError(Ref(type.status()));

  mesh::ShardOp source = SourceShard(shard);
  if (!source) return mlir::success();
  if (source.getAnnotateForUsers() || !shard.getAnnotateForUsers()) {
    return shard.emitError(
        "chained mesh.shard ops must be a result annotation (without annotate_for_users) "
        "followed by an operand annotation (with annotate_for_users)");
  }
  mesh::MeshShardingAttr from = source.getShard();
  if (from.getMesh() != sharding.getMesh()) {
    return shard.emitError("resharding between different meshes (")
           << from.getMesh() << " -> " << sharding.getMesh() << ") is not supported";
  }
  absl::StatusOr<DistType> from_type = ConvertSharding(*m, global, from);
  if (!from_type.ok()) return source.emitError(Ref(from_type.status()));
  SynthesisOptions options;
  options.strategy = parsed;
  options.sub_axes = sub_axes_;
  PlanCache::Result plan = plans_->Synthesize(*m, *from_type, *type, options);
  if (!plan.ok()) {
    return shard.emitError("reshard cannot reshard ")
           << Print(from) << " -> " << Print(sharding) << " for " << global << " (mesh "
           << Ref(m->ToString()) << ": " << Ref(ToString(*from_type)) << " -> "
           << Ref(ToString(*type)) << "): " << Ref(plan.status());
  }
  const std::vector<Step>& steps = (*plan)->steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].op.kind == CollectiveKind::kAllToAllV) {
      return shard.emitError("strategy '")
             << Ref((*plan)->strategy) << "' produced all_to_all_v (step " << i + 1
             << "), which has no mesh-dialect equivalent; use strategy=normal or optimal";
    }
  }
  // Refining a synthesized plan cannot fail (its pieces come from one refinement), but the
  // check costs nothing and keeps rewrite() free of errors that would leave IR half-done.
  absl::StatusOr<Plan> emitted = RefinePlan(**plan);
  if (!emitted.ok()) {
    return shard.emitError("reshard cannot lower the plan's sub-axes: ") << Ref(emitted.status());
  }
  if (!sub_axes_ && !(emitted->mesh == *m)) {
    return shard.emitError("internal: a whole-axis plan names sub-axes");
  }
  reshardings_[shard.getOperation()] = {mesh_op, *m, global, *std::move(emitted)};
  return mlir::success();
}

LogicalResult ReshardSpmdizationPass::checkOp(Operation& op) {
  bool replicated_only = !mlir::isa<mesh::ShardingInterface>(op);
  for (mlir::OpOperand& operand : op.getOpOperands()) {
    if (!mlir::isa<RankedTensorType>(operand.get().getType())) continue;
    auto shard = operand.get().getDefiningOp<mesh::ShardOp>();
    if (!shard) {
      return op.emitError("operand #")
             << operand.getOperandNumber()
             << " is not produced by mesh.shard; reshard-spmdization needs every tensor "
                "operand annotated (run sharding-propagation first)";
    }
    if (replicated_only && !mesh::isFullReplication(shard.getShard())) {
      return op.emitError("operand #")
             << operand.getOperandNumber() << " is sharded as " << shard.getShard()
             << " but the op has no ShardingInterface; only fully replicated operands are "
                "supported for it";
    }
  }
  for (mlir::OpResult result : op.getResults()) {
    if (!mlir::isa<RankedTensorType>(result.getType())) continue;
    if (!result.hasOneUse() || !mlir::isa<mesh::ShardOp>(*result.getUsers().begin())) {
      return op.emitError("result #")
             << result.getResultNumber()
             << " must have exactly one use, a mesh.shard (run sharding-propagation first)";
    }
    auto shard = mlir::cast<mesh::ShardOp>(*result.getUsers().begin());
    if (replicated_only && !mesh::isFullReplication(shard.getShard())) {
      return op.emitError("result #")
             << result.getResultNumber() << " is sharded as " << shard.getShard()
             << " but the op has no ShardingInterface; only fully replicated results are "
                "supported for it";
    }
  }
  return mlir::success();
}

LogicalResult ReshardSpmdizationPass::check(mlir::func::FuncOp func, Strategy parsed) {
  for (Block& block : func.getBody()) {
    for (mlir::BlockArgument arg : block.getArguments()) {
      if (!mlir::isa<RankedTensorType>(arg.getType())) continue;
      if (!arg.hasOneUse() || !mlir::isa<mesh::ShardOp>(*arg.getUsers().begin())) {
        return mlir::emitError(arg.getLoc(), "block argument #")
               << arg.getArgNumber()
               << " must have exactly one use, a mesh.shard giving its sharding";
      }
    }
    for (Operation& op : block) {
      if (auto shard = mlir::dyn_cast<mesh::ShardOp>(op)) {
        if (mlir::failed(checkShard(shard, parsed))) return mlir::failure();
      } else if (mlir::failed(checkOp(op))) {
        return mlir::failure();
      }
    }
  }
  return mlir::success();
}

LogicalResult ReshardSpmdizationPass::rewriteShard(mesh::ShardOp shard, mlir::IRMapping& map,
                                                   mlir::OpBuilder& builder) {
  auto it = reshardings_.find(shard.getOperation());
  if (it == reshardings_.end()) {
    // No resharding: the shard keeps its operand's local value.
    map.map(shard.getResult(), map.lookup(shard.getSrc()));
    return mlir::success();
  }
  const Resharding& r = it->second;
  mesh::ShardOp source = SourceShard(shard);
  Value input = map.lookup(source.getSrc());
  // A plan with sub-axes runs on its refined mesh: same devices, same numbering.
  mesh::MeshOp mesh_op = r.emitted.mesh == r.mesh
                             ? r.mesh_op
                             : RefinedMeshOp(r.mesh_op, r.emitted.mesh, symbols_);
  absl::StatusOr<Value> out = EmitPlan(builder, shard.getLoc(), mesh_op.getSymName(),
                                       r.emitted.mesh, r.emitted, input);
  if (!out.ok()) return shard.emitError(Ref(out.status()));
  // Nothing emitted (a plan that only renames size-1 axes): no chain to annotate or validate.
  if (const int64_t emitted = EmittedSteps(r.emitted); emitted > 0) {
    Operation* last = out->getDefiningOp();
    if (annotate || validate) {
      AnnotateChain(last, source.getShard(), shard.getShard(), r.global, emitted);
    }
    if (validate) {
      absl::StatusOr<Plan> back = ImportAnnotatedChain(last, meshSymbols());
      std::string summary;
      absl::Status ok = back.ok() ? ValidatePlan(*back, /*prove=*/true, &summary) : back.status();
      if (!ok.ok()) {
        return shard.emitError("translation validation failed for the emitted chain: ")
               << Ref(ok);
      }
      if (!annotate) last->removeAttr(kReshardingAttrName);
    }
  }
  map.map(shard.getResult(), *out);
  return mlir::success();
}

LogicalResult ReshardSpmdizationPass::rewriteOp(Operation& op, mlir::IRMapping& map,
                                                mlir::OpBuilder& builder) {
  llvm::SmallVector<Value> operands;
  llvm::SmallVector<mesh::MeshShardingAttr> operand_shardings;
  for (Value operand : op.getOperands()) {
    operands.push_back(map.lookupOrDefault(operand));
    auto shard = mlir::isa<RankedTensorType>(operand.getType())
                     ? operand.getDefiningOp<mesh::ShardOp>()
                     : mesh::ShardOp();
    operand_shardings.push_back(shard ? shard.getShard() : mesh::MeshShardingAttr());
  }
  llvm::SmallVector<mesh::MeshShardingAttr> result_shardings;
  for (mlir::OpResult result : op.getResults()) {
    auto shard = mlir::isa<RankedTensorType>(result.getType())
                     ? mlir::cast<mesh::ShardOp>(*result.getUsers().begin())
                     : mesh::ShardOp();
    result_shardings.push_back(shard ? shard.getShard() : mesh::MeshShardingAttr());
  }
  if (auto sharding = mlir::dyn_cast<mesh::ShardingInterface>(op)) {
    if (mlir::failed(sharding.spmdize(operands, operand_shardings, result_shardings, map,
                                      symbols_, builder))) {
      return op.emitError("the op's ShardingInterface::spmdize failed");
    }
  } else {
    mesh::spmdizeFullyReplicatedOperation(op, operands, operand_shardings, result_shardings, map,
                                          symbols_, builder);
  }
  for (mlir::OpResult result : op.getResults()) {
    if (!map.contains(result)) {
      return op.emitError("spmdization left result #") << result.getResultNumber() << " unmapped";
    }
  }
  return mlir::success();
}

LogicalResult ReshardSpmdizationPass::rewrite(mlir::func::FuncOp func) {
  mlir::IRMapping map;
  mlir::OpBuilder builder(func.getContext());
  llvm::SmallVector<Block*> old_blocks;
  for (Block& block : func.getBody()) old_blocks.push_back(&block);
  for (Block* block : old_blocks) {
    llvm::SmallVector<mlir::Type> types;
    llvm::SmallVector<mlir::Location> locs;
    for (mlir::BlockArgument arg : block->getArguments()) {
      locs.push_back(arg.getLoc());
      auto tensor = mlir::dyn_cast<RankedTensorType>(arg.getType());
      if (!tensor) {
        types.push_back(arg.getType());
        continue;
      }
      auto shard = mlir::cast<mesh::ShardOp>(*arg.getUsers().begin());
      auto mesh_op = LookupMesh(shard, shard.getShard().getMesh(), meshSymbols());
      absl::StatusOr<Mesh> m = ConvertMesh(mesh_op);
      absl::StatusOr<DistType> type = ConvertSharding(*m, tensor, shard.getShard());
      // check() converted every shard op already.
      types.push_back(LocalTensorType(*m, *type, tensor.getElementType()));
    }
    Block* fresh = builder.createBlock(&func.getBody(), func.getBody().end(), types, locs);
    for (auto [from, to] : llvm::zip(block->getArguments(), fresh->getArguments())) {
      map.map(from, to);
    }
  }
  // Successor blocks map old -> new for cloned terminators.
  for (size_t i = 0; i < old_blocks.size(); ++i) {
    map.map(old_blocks[i], &*std::next(func.getBody().begin(), old_blocks.size() + i));
  }
  for (size_t i = 0; i < old_blocks.size(); ++i) {
    Block* fresh = &*std::next(func.getBody().begin(), old_blocks.size() + i);
    builder.setInsertionPointToEnd(fresh);
    for (Operation& op : *old_blocks[i]) {
      LogicalResult done = mlir::success();
      if (auto shard = mlir::dyn_cast<mesh::ShardOp>(op)) {
        done = rewriteShard(shard, map, builder);
      } else {
        done = rewriteOp(op, map, builder);
      }
      if (mlir::failed(done)) return mlir::failure();
    }
  }
  for (Block* block : old_blocks) {
    block->dropAllDefinedValueUses();
    block->dropAllReferences();
  }
  for (Block* block : old_blocks) block->erase();

  llvm::SmallVector<mlir::Type> results;
  for (Block& block : func.getBody()) {
    if (auto ret = mlir::dyn_cast_or_null<mlir::func::ReturnOp>(block.getTerminator())) {
      results.assign(ret.getOperandTypes().begin(), ret.getOperandTypes().end());
      break;
    }
  }
  func.setFunctionType(mlir::FunctionType::get(
      func.getContext(), func.getBody().front().getArgumentTypes(), results));
  return mlir::success();
}

LogicalResult ReshardSpmdizationPass::runOnFunction(mlir::func::FuncOp func, Strategy parsed) {
  if (func.isExternal()) return mlir::success();
  reshardings_.clear();
  if (mlir::failed(check(func, parsed)) || mlir::failed(rewrite(func))) return mlir::failure();
  return mlir::success();
}

void ReshardSpmdizationPass::runOnOperation() {
  Operation* anchor = getOperation();
  absl::StatusOr<Strategy> parsed = ParseStrategy(strategy.getValue());
  if (!parsed.ok()) {
    anchor->emitError("reshard-spmdization: ") << Ref(parsed.status());
    return signalPassFailure();
  }
  symbols_ = mlir::SymbolTableCollection();
  if (auto func = mlir::dyn_cast<mlir::func::FuncOp>(anchor)) {
    sub_axes_ = false;
    if (mlir::failed(runOnFunction(func, *parsed))) signalPassFailure();
    return;
  }
  sub_axes_ = true;
  // Collected first: rewriting may add mesh.mesh ops to the module being walked.
  llvm::SmallVector<mlir::func::FuncOp> funcs;
  anchor->walk([&](mlir::func::FuncOp func) { funcs.push_back(func); });
  bool failed = false;
  for (mlir::func::FuncOp func : funcs) {
    if (mlir::failed(runOnFunction(func, *parsed))) failed = true;
  }
  if (failed) signalPassFailure();
}

struct ReshardValidatePass
    : public mlir::PassWrapper<ReshardValidatePass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReshardValidatePass)

  ReshardValidatePass() = default;
  ReshardValidatePass(const ReshardValidatePass& other) : PassWrapper(other) {}
  explicit ReshardValidatePass(bool prove_flag) { prove = prove_flag; }

  llvm::StringRef getArgument() const override { return "reshard-validate"; }
  llvm::StringRef getDescription() const override {
    return "Read every chain marked reshard.resharding back into a reshard plan and check it "
           "on the reference interpreter (and with Z3 when available)";
  }
  Option<bool> prove{*this, "prove",
                     llvm::cl::desc("Also certify each chain with Z3 (when built with proofs/)"),
                     llvm::cl::init(true)};

  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](Operation* op) {
      if (!op->hasAttr(kReshardingAttrName)) return;
      absl::StatusOr<Plan> plan = ImportAnnotatedChain(op);
      if (!plan.ok()) {
        op->emitError("reshard-validate: cannot read the chain back: ") << Ref(plan.status());
        failed = true;
        return;
      }
      std::string summary;
      absl::Status ok = ValidatePlan(*plan, prove, &summary);
      if (!ok.ok()) {
        op->emitError("reshard-validate: ") << Ref(ok);
        failed = true;
        return;
      }
      op->emitRemark("reshard-validate: ") << Ref(summary);
    });
    if (failed) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createSpmdizationPass(const SpmdizationOptions& options) {
  return std::make_unique<ReshardSpmdizationPass>(options);
}

std::unique_ptr<mlir::Pass> createValidatePass(bool prove) {
  return std::make_unique<ReshardValidatePass>(prove);
}

void registerPasses() {
  mlir::PassRegistration<ReshardSpmdizationPass>();
  mlir::PassRegistration<ReshardValidatePass>();
}

void registerDependentDialects(mlir::DialectRegistry& registry) {
  // scf and arith: upstream's ShardingInterface::spmdize for linalg reductions builds them.
  registry.insert<mesh::MeshDialect, mlir::tensor::TensorDialect, mlir::scf::SCFDialect,
                  mlir::arith::ArithDialect, ReshardDialect>();
}

}  // namespace reshard::lowering
