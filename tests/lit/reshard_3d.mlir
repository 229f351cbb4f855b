// Resharding on a 3-D mesh (2x2x2) and a 4-D mesh (2x3x2x2, the paper's worked example).
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// Every strategy's chains are re-read from the IR and checked on the interpreter:
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=optimal validate=true}))' -o /dev/null
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=gspmd validate=true}))' -o /dev/null
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=greedy validate=true}))' -o /dev/null
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=naive validate=true}))' -o /dev/null
// VALID-COUNT-6: interpreter ok
// VALID-NOT: error

mesh.mesh @mesh(shape = 2x2x2)
mesh.mesh @paper(shape = 2x2x3x2)

// CHECK-LABEL: func.func @rotate
// CHECK-SAME: (%{{.*}}: tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 2], [2, 4], [3, 6], [4, 1], [5, 3], [6, 5]] : tensor<4x4x4xf32> -> tensor<4x4x4xf32>
// CHECK-NEXT: return %{{.*}} : tensor<4x4x4xf32>
func.func @rotate(%arg0: tensor<8x8x8xf32>) -> tensor<8x8x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1], [2]]> : tensor<8x8x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[2], [0], [1]]> annotate_for_users : tensor<8x8x8xf32>
  return %1 : tensor<8x8x8xf32>
}

// CHECK-LABEL: func.func @three_axes_move
// CHECK-SAME: (%{{.*}}: tensor<2x16xf32>) -> tensor<16x2xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [2] split_axis = 1 concat_axis = 0 : tensor<2x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<8x4xf32> -> tensor<16x2xf32>
// CHECK-NEXT: return %{{.*}} : tensor<16x2xf32>
func.func @three_axes_move(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1, 2]]> : tensor<16x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [2, 1, 0]]> annotate_for_users : tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%{{.*}}: tensor<2x4x8xf32>) -> tensor<4x8x2xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 2 concat_axis = 0 : tensor<2x4x8xf32> -> tensor<4x4x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 2 concat_axis = 0 : tensor<4x4x4xf32> -> tensor<8x4x2xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<8x4x2xf32> -> tensor<4x8x2xf32>
// CHECK-NEXT: return %{{.*}} : tensor<4x8x2xf32>
func.func @mixed(%arg0: tensor<8x8x8xf32>) -> tensor<8x8x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1], [2]]> : tensor<8x8x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[2], [], [1, 0]]> annotate_for_users : tensor<8x8x8xf32>
  return %1 : tensor<8x8x8xf32>
}

// CHECK-LABEL: func.func @partial3
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [2] scatter_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [3, 6], [4, 1], [6, 3]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x8xf32>
func.func @partial3(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]], partial = sum[1, 2]> : tensor<8x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[2, 0]], partial = sum[1]> annotate_for_users : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @swap_sizes
// CHECK-SAME: (%{{.*}}: tensor<4x4xi32>) -> tensor<4x4xi32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [3, 6], [4, 1], [6, 3]] : tensor<4x4xi32> -> tensor<4x4xi32>
// CHECK-NEXT: return %{{.*}} : tensor<4x4xi32>
func.func @swap_sizes(%arg0: tensor<8x8xi32>) -> tensor<8x8xi32> {
  %0 = mesh.shard %arg0 to <@mesh, [[2], [0]]> : tensor<8x8xi32>
  %1 = mesh.shard %0 to <@mesh, [[0], [2]]> annotate_for_users : tensor<8x8xi32>
  return %1 : tensor<8x8xi32>
}

// CHECK-LABEL: func.func @paper_example
// CHECK-SAME: (%{{.*}}: tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @paper source_target_pairs = {{\[}}[1, 2], [2, 4], [3, 1], [4, 3], [7, 8], [8, 10], [9, 7], [10, 9], [13, 14], [14, 16], [15, 13], [16, 15], [19, 20], [20, 22], [21, 19], [22, 21]] : tensor<3x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @paper mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<3x2xf32> -> tensor<1x6xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @paper source_target_pairs = {{\[}}[1, 12], [2, 6], [3, 18], [4, 1], [5, 13], [6, 7], [7, 19], [8, 2], [9, 14], [10, 8], [11, 20], [12, 3], [13, 15], [14, 9], [15, 21], [16, 4], [17, 16], [18, 10], [19, 22], [20, 5], [21, 17], [22, 11]] : tensor<1x6xf32> -> tensor<1x6xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @paper mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<1x6xf32> -> tensor<2x3xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x3xf32>
func.func @paper_example(%arg0: tensor<12x12xf32>) -> tensor<12x12xf32> {
  %0 = mesh.shard %arg0 to <@paper, [[0, 1], [2, 3]]> : tensor<12x12xf32>
  %1 = mesh.shard %0 to <@paper, [[2, 3], [0, 1]]> annotate_for_users : tensor<12x12xf32>
  return %1 : tensor<12x12xf32>
}
