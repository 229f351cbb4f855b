// Anchored on functions, the pass finds a resharding's mesh by scanning the module up to the
// symbol (LookupMesh) rather than building the module's symbol table: a mesh declared after
// the function that uses it is found, also by reshard-validate. (A symbol that names
// something else: spmdization_errors.mlir.)
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// VALID: interpreter ok
// VALID-NOT: error

// CHECK-LABEL: func.func @mesh_declared_last
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0
// CHECK-NEXT: reshard.collective_permute %{{.*}} on @mesh
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1
// CHECK-NEXT: return
func.func @mesh_declared_last(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
mesh.mesh @mesh(shape = 2x4)
