// With proofs/ in the build, every emitted chain is also certified by Z3 (plan.correct).
// REQUIRES: proofs
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s
// CHECK-COUNT-3: interpreter ok {{.*}}; proved by Z3
// CHECK-NOT: error

mesh.mesh @mesh(shape = 2x4)
mesh.mesh @paper(shape = 2x2x3x2)

func.func @swap(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

func.func @partial(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[1]], partial = sum[0]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

func.func @paper_example(%arg0: tensor<12x12xf32>) -> tensor<12x12xf32> {
  %0 = mesh.shard %arg0 to <@paper, [[0, 1], [2, 3]]> : tensor<12x12xf32>
  %1 = mesh.shard %0 to <@paper, [[2, 3], [0, 1]]> annotate_for_users : tensor<12x12xf32>
  return %1 : tensor<12x12xf32>
}
