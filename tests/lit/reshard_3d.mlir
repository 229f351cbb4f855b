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
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @paper mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<3x2xf32> -> tensor<6x1xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @paper source_target_pairs = {{\[}}[1, 4], [2, 8], [3, 12], [4, 16], [5, 20], [6, 2], [7, 6], [8, 10], [9, 14], [10, 18], [11, 22], [12, 1], [13, 5], [14, 9], [15, 13], [16, 17], [17, 21], [18, 3], [19, 7], [20, 11], [21, 15], [22, 19]] : tensor<6x1xf32> -> tensor<6x1xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @paper mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<6x1xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @paper source_target_pairs = {{\[}}[1, 3], [2, 1], [3, 4], [4, 2], [7, 9], [8, 7], [9, 10], [10, 8], [13, 15], [14, 13], [15, 16], [16, 14], [19, 21], [20, 19], [21, 22], [22, 20]] : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x3xf32>
func.func @paper_example(%arg0: tensor<12x12xf32>) -> tensor<12x12xf32> {
  %0 = mesh.shard %arg0 to <@paper, [[0, 1], [2, 3]]> : tensor<12x12xf32>
  %1 = mesh.shard %0 to <@paper, [[2, 3], [0, 1]]> annotate_for_users : tensor<12x12xf32>
  return %1 : tensor<12x12xf32>
}
