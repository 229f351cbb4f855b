// passes.h — reshard's MLIR passes (reshard-validate nests under func.func;
// reshard-spmdization runs on func.func or on builtin.module, see below).
//
//   reshard-spmdization   drop-in for upstream mesh-spmdization: the same input (mesh.shard
//                         annotations, annotate_for_users pairs, ShardingInterface ops), but
//                         every resharding between two shardings is synthesized by reshard
//                         (any mesh rank, partial sums) and emitted as mesh collectives plus
//                         reshard.collective_permute. Options:
//                           strategy=normal|optimal|naive|gspmd|greedy  (synth/synthesize.h)
//                           annotate=true   mark each chain with reshard.resharding
//                           validate=true   re-read each emitted chain from the IR and check
//                                           it on the interpreter (and Z3 when built in)
//                         Anchored on builtin.module it handles every func.func in it and
//                         may plan with sub-axes (`a1:(2)2`); such a chain is emitted on a
//                         refined mesh.mesh it adds to the module (@mesh_2x2x2 for 2x4; same
//                         devices and ids; docs/mlir.md). Under func.func it may not add
//                         symbols, so it plans with whole axes only.
//   reshard-validate      reads every chain marked reshard.resharding back into a plan and
//                         checks it (interpreter, then Z3 when built in and prove=true);
//                         a remark per chain on success, an error otherwise.
//
//   reshard-opt in.mlir
//     --pass-pipeline='builtin.module(func.func(reshard-spmdization{annotate=true},reshard-validate))'
//   reshard-opt in.mlir    # with sub-axes
//     --pass-pipeline='builtin.module(reshard-spmdization{annotate=true},func.func(reshard-validate))'
//
//   mlir::PassManager pm(&context);
//   pm.addNestedPass<mlir::func::FuncOp>(reshard::lowering::createSpmdizationPass());
#ifndef RESHARD_LOWERING_PASSES_H_
#define RESHARD_LOWERING_PASSES_H_

#include <memory>
#include <string>

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"

namespace reshard::lowering {

struct SpmdizationOptions {
  std::string strategy = "normal";
  bool annotate = false;
  bool validate = false;
};

// Schedulable on func.func (whole-axis plans) or builtin.module (sub-axes allowed).
std::unique_ptr<mlir::Pass> createSpmdizationPass(const SpmdizationOptions& options = {});
std::unique_ptr<mlir::Pass> createValidatePass(bool prove = true);

// Registers reshard-spmdization and reshard-validate with the global pass registry.
void registerPasses();

// The dialects reshard's passes create ops of (mesh, tensor, scf, arith, reshard).
void registerDependentDialects(mlir::DialectRegistry& registry);

}  // namespace reshard::lowering

#endif  // RESHARD_LOWERING_PASSES_H_
