// reshard_ops.td — the `reshard` dialect: what upstream's mesh dialect lacks.
//
// MLIR 19's mesh dialect has no collective permute; reshard's plans need one when only the
// assignment of blocks to devices changes (e.g. a swap of two equally sized mesh axes).
//
//   mesh.mesh @mesh(shape = 2x2)
//   %1 = reshard.collective_permute %0 on @mesh source_target_pairs = [[1, 2], [2, 1]]
//       : tensor<4x4xf32> -> tensor<4x4xf32>

#ifndef RESHARD_LOWERING_RESHARD_OPS_TD_
#define RESHARD_LOWERING_RESHARD_OPS_TD_

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Reshard_Dialect : Dialect {
  let name = "reshard";
  let summary = "Collectives that reshard needs beside upstream's mesh dialect";
  let cppNamespace = "::reshard::lowering";
  let dependentDialects = ["::mlir::mesh::MeshDialect"];
}

class Reshard_Op<string mnemonic, list<Trait> traits = []> :
    Op<Reshard_Dialect, mnemonic, traits>;

def Reshard_CollectivePermuteOp : Reshard_Op<"collective_permute", [
    Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>
  ]> {
  let summary = "Point-to-point exchange of whole local buffers between devices.";
  let description = [{
    Device `s` sends its whole local tensor to device `t` for every pair `[s, t]` of
    `source_target_pairs` (linear device ids, row-major over the mesh axes, as
    `mesh.process_linear_index`). A device that is no pair's target keeps its own buffer.
    No device may appear twice as a source or twice as a target; the operand and result
    types are equal (every device holds a block of the same local shape before and after).

    ```mlir
    mesh.mesh @mesh(shape = 2x2)
    %1 = reshard.collective_permute %0 on @mesh source_target_pairs = [[1, 2], [2, 1]]
        : tensor<4x4xf32> -> tensor<4x4xf32>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$mesh,
    // Flattened pairs: [s0, t0, s1, t1, ...].
    DenseI64ArrayAttr:$source_target_pairs
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `source_target_pairs` `=` custom<PairList>($source_target_pairs)
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif  // RESHARD_LOWERING_RESHARD_OPS_TD_
