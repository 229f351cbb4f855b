// linalg.matmul with its contracting dimension sharded on a 1-D mesh: upstream's
// ShardingInterface yields a partial sum, reshard turns it into the consumer's sharding
// with one reduce_scatter.
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// VALID: reshard-validate: 1 steps f32[8,32] partial{a0} -> f32[8{a0},32]: interpreter ok
// CHECK-LABEL: func.func @kred
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<4x32xf32>) outs(%{{.*}} : tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [0] scatter_axis = 0 : tensor<8x32xf32> -> tensor<2x32xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x32xf32>

mesh.mesh @mesh(shape = 4)
func.func @kred(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %acc: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %x0 = mesh.shard %x to <@mesh, [[], [0]]> : tensor<8x16xf32>
  %x1 = mesh.shard %x0 to <@mesh, [[], [0]]> annotate_for_users : tensor<8x16xf32>
  %w0 = mesh.shard %w to <@mesh, [[0]]> : tensor<16x32xf32>
  %w1 = mesh.shard %w0 to <@mesh, [[0]]> annotate_for_users : tensor<16x32xf32>
  %a0 = mesh.shard %acc to <@mesh, [[]], partial = sum[0]> : tensor<8x32xf32>
  %a1 = mesh.shard %a0 to <@mesh, [[]], partial = sum[0]> annotate_for_users : tensor<8x32xf32>
  %m = linalg.matmul ins(%x1, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%a1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m0 = mesh.shard %m to <@mesh, [[]], partial = sum[0]> : tensor<8x32xf32>
  %m1 = mesh.shard %m0 to <@mesh, [[0]]> annotate_for_users : tensor<8x32xf32>
  return %m1 : tensor<8x32xf32>
}
