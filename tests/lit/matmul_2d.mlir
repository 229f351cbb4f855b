// A small MLP layer partitioned on a 2-D mesh: linalg.matmul and the elementwise linalg.add
// are spmdized through upstream's ShardingInterface; every resharding between producer and
// consumer shardings (including the multi-axis reshards upstream cannot do) is reshard's.
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// VALID-COUNT-4: interpreter ok
// VALID-NOT: error

mesh.mesh @mesh(shape = 2x4)
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%{{.*}}: tensor<2x8xf32>, %{{.*}}: tensor<4x32xf32>, %{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x4xf32>, %{{.*}}: tensor<4x8xf32>) -> tensor<1x32xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_gather %{{.*}} on @mesh mesh_axes = [1] gather_axis = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<4x32xf32> -> tensor<16x8xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [2, 1], [3, 5], [4, 2], [5, 6], [6, 3]] : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK: linalg.add ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<4x8xf32> -> tensor<1x32xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [2, 1], [3, 5], [4, 2], [5, 6], [6, 3]] : tensor<1x32xf32> -> tensor<1x32xf32>
// CHECK-NEXT: return %{{.*}} : tensor<1x32xf32>
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %acc: tensor<8x32xf32>, %b: tensor<8x32xf32>, %out: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %x0 = mesh.shard %x to <@mesh, [[1], [0]]> : tensor<8x16xf32>
  %x1 = mesh.shard %x0 to <@mesh, [[0]]> annotate_for_users : tensor<8x16xf32>
  %w0 = mesh.shard %w to <@mesh, [[1]]> : tensor<16x32xf32>
  %w1 = mesh.shard %w0 to <@mesh, [[], [1]]> annotate_for_users : tensor<16x32xf32>
  %a0 = mesh.shard %acc to <@mesh, [[0], [1]]> : tensor<8x32xf32>
  %a1 = mesh.shard %a0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x32xf32>
  %m = linalg.matmul ins(%x1, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%a1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m0 = mesh.shard %m to <@mesh, [[0], [1]]> : tensor<8x32xf32>
  %m1 = mesh.shard %m0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x32xf32>
  %b0 = mesh.shard %b to <@mesh, [[], [0, 1]]> : tensor<8x32xf32>
  %b1 = mesh.shard %b0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x32xf32>
  %o0 = mesh.shard %out to <@mesh, [[0], [1]]> : tensor<8x32xf32>
  %o1 = mesh.shard %o0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x32xf32>
  %s = linalg.add ins(%m1, %b1 : tensor<8x32xf32>, tensor<8x32xf32>) outs(%o1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %s0 = mesh.shard %s to <@mesh, [[0], [1]]> : tensor<8x32xf32>
  %s1 = mesh.shard %s0 to <@mesh, [[1, 0]]> annotate_for_users : tensor<8x32xf32>
  return %s1 : tensor<8x32xf32>
}
