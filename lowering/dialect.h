// dialect.h — the `reshard` MLIR dialect and its op reshard.collective_permute.
//
// MLIR 19's mesh dialect has every collective reshard emits except a permute; this dialect
// adds it (ODS in lowering/reshard_ops.td):
//
//   mesh.mesh @mesh(shape = 2x2)
//   %1 = reshard.collective_permute %0 on @mesh source_target_pairs = [[1, 2], [2, 1]]
//       : tensor<4x4xf32> -> tensor<4x4xf32>
//
//   registry.insert<reshard::lowering::ReshardDialect>();
//   auto op = builder.create<reshard::lowering::CollectivePermuteOp>(
//       loc, type, value, "mesh", llvm::ArrayRef<int64_t>{1, 2, 2, 1});
//
// The verifier (verify + verifySymbolUses) checks: operand and result types are equal; the
// pair list is flat and even; `mesh` names a mesh.mesh with a static shape; every id is in
// [0, device count); no device is a source twice or a target twice.
#ifndef RESHARD_LOWERING_DIALECT_H_
#define RESHARD_LOWERING_DIALECT_H_

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lowering/reshard_dialect.h.inc"

#define GET_OP_CLASSES
#include "lowering/reshard_ops.h.inc"

#endif  // RESHARD_LOWERING_DIALECT_H_
