// Resharding on a 2-D mesh (2x4): axis swaps, multi-axis moves, order changes, partial sums.
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// Every strategy's chains are re-read from the IR and checked on the interpreter:
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=optimal validate=true}))' -o /dev/null
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=gspmd validate=true}))' -o /dev/null
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=greedy validate=true}))' -o /dev/null
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=naive validate=true}))' -o /dev/null
// VALID-COUNT-10: interpreter ok
// VALID-NOT: error

mesh.mesh @mesh(shape = 2x4)

// CHECK-LABEL: func.func @swap
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 2], [2, 4], [3, 6], [4, 1], [5, 3], [6, 5]] : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x2xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x8xf32>
func.func @swap(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @order
// CHECK-SAME: (%{{.*}}: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [2, 1], [3, 5], [4, 2], [5, 6], [6, 3]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x8xf32>
func.func @order(%arg0: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1]]> : tensor<16x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[1, 0]]> annotate_for_users : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// A multi-axis move of a small array is latency-bound: one all_to_all over [0, 1] costs
// 7 alphas, the pieces one at a time 1 + 3 plus one for the permute that puts them in order.
// CHECK-LABEL: func.func @multi_axis_move
// CHECK-SAME: (%{{.*}}: tensor<2x8xf32>) -> tensor<16x1xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [2, 1], [3, 5], [4, 2], [5, 6], [6, 3]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<16x1xf32>
// CHECK-NEXT: return %{{.*}} : tensor<16x1xf32>
func.func @multi_axis_move(%arg0: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1]]> : tensor<16x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0, 1]]> annotate_for_users : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// With 2 MiB per device bandwidth dominates: one all_to_all over both axes.
// CHECK-LABEL: func.func @multi_axis_move_large
// CHECK-SAME: (%{{.*}}: tensor<512x1024xf32>) -> tensor<4096x128xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0, 1] split_axis = 1 concat_axis = 0 : tensor<512x1024xf32> -> tensor<4096x128xf32>
// CHECK-NEXT: return %{{.*}} : tensor<4096x128xf32>
func.func @multi_axis_move_large(%arg0: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1]]> : tensor<4096x1024xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0, 1]]> annotate_for_users : tensor<4096x1024xf32>
  return %1 : tensor<4096x1024xf32>
}

// CHECK-LABEL: func.func @split_to_both
// CHECK-SAME: (%{{.*}}: tensor<2x16xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 4], [2, 1], [3, 5], [4, 2], [5, 6], [6, 3]] : tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %{{.*}} : tensor<4x8xf32>
func.func @split_to_both(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1]]> : tensor<16x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @gather_both
// CHECK-SAME: (%{{.*}}: tensor<8x4xf32>) -> tensor<16x16xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_gather %{{.*}} on @mesh mesh_axes = [0] gather_axis = 0 : tensor<8x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_gather %{{.*}} on @mesh mesh_axes = [1] gather_axis = 1 : tensor<16x4xf32> -> tensor<16x16xf32>
// CHECK-NEXT: return %{{.*}} : tensor<16x16xf32>
func.func @gather_both(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<16x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[]]> annotate_for_users : tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @slice_both
// CHECK-SAME: (%{{.*}}: tensor<16x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_slice %{{.*}} on @mesh mesh_axes = [1, 0] slice_axis = 0 : tensor<16x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x16xf32>
func.func @slice_both(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[]]> : tensor<16x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1, 0]]> annotate_for_users : tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @partial_reduce
// CHECK-SAME: (%{{.*}}: tensor<4x16xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [1] scatter_axis = 1 : tensor<4x16xf32> -> tensor<4x4xf32>
// CHECK-NEXT: return %{{.*}} : tensor<4x4xf32>
func.func @partial_reduce(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]], partial = sum[1]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @partial_both
// CHECK-SAME: (%{{.*}}: tensor<8x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [1] scatter_axis = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x16xf32>
func.func @partial_both(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[]], partial = sum[0, 1]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1]], partial = sum[0]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// The all_to_all first, still summing over axis 0, then the reduce_scatter onto dimension 0:
// two exchanges where scattering first needs a permute to put axis 0 ahead of axis 1.
// CHECK-LABEL: func.func @partial_to_swap
// CHECK-SAME: (%{{.*}}: tensor<2x16xbf16>) -> tensor<4x4xbf16>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<2x16xbf16> -> tensor<8x4xbf16>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [0] scatter_axis = 0 : tensor<8x4xbf16> -> tensor<4x4xbf16>
// CHECK-NEXT: return %{{.*}} : tensor<4x4xbf16>
func.func @partial_to_swap(%arg0: tensor<8x16xbf16>) -> tensor<8x16xbf16> {
  %0 = mesh.shard %arg0 to <@mesh, [[1]], partial = sum[0]> : tensor<8x16xbf16>
  %1 = mesh.shard %0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x16xbf16>
  return %1 : tensor<8x16xbf16>
}

