// reshard-opt: mlir-opt with the dialects a sharded tensor program uses (func, tensor, arith,
// linalg, tosa, mesh), upstream's sharding-interface models for them, the reshard dialect, and
// reshard's passes (reshard-spmdization, reshard-validate) beside every upstream pass and
// dialect (a superset of mlir-opt-19).
//
//   reshard-opt in.mlir
//     --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=normal}))'
//
// See docs/mlir.md.
#include "lowering/dialect.h"
#include "lowering/passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Extensions/MeshShardingExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/MeshShardingInterfaceImpl.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::tensor::TensorDialect, mlir::arith::ArithDialect,
                  mlir::linalg::LinalgDialect, mlir::tosa::TosaDialect, mlir::mesh::MeshDialect,
                  reshard::lowering::ReshardDialect>();
  mlir::func::registerShardingInterfaceExternalModels(registry);
  mlir::linalg::registerMeshShardingInterfaceExternalModels(registry);
  mlir::tosa::registerShardingInterfaceExternalModels(registry);
  // Everything else mlir-opt has: upstream's linalg spmdize builds scf/arith ops and needs
  // the TilingInterface/PartialReductionOpInterface models (without them it crashes on
  // sharded reductions), so reshard-opt registers what mlir-opt registers.
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // Upstream passes (mesh-spmdization, sharding-propagation, canonicalize, ...) for
  // comparison and for pipelines around ours.
  mlir::registerAllPasses();
  reshard::lowering::registerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "reshard-opt: MLIR optimizer with reshard's passes\n",
                        registry));
}
