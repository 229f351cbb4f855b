// Resharding on a 1-D mesh (4 devices): every collective kind.
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// VALID-COUNT-6: interpreter ok
// VALID-NOT: error

mesh.mesh @mesh(shape = 4)

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%{{.*}}: tensor<2x12xf32>) -> tensor<8x12xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_gather %{{.*}} on @mesh mesh_axes = [0] gather_axis = 0 : tensor<2x12xf32> -> tensor<8x12xf32>
// CHECK-NEXT: return %{{.*}} : tensor<8x12xf32>
func.func @gather(%arg0: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x12xf32>
  %1 = mesh.shard %0 to <@mesh, [[]]> annotate_for_users : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%{{.*}}: tensor<8x12xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_slice %{{.*}} on @mesh mesh_axes = [0] slice_axis = 1 : tensor<8x12xf32> -> tensor<8x3xf32>
// CHECK-NEXT: return %{{.*}} : tensor<8x3xf32>
func.func @slice(%arg0: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[]]> : tensor<8x12xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0]]> annotate_for_users : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}

// CHECK-LABEL: func.func @move
// CHECK-SAME: (%{{.*}}: tensor<2x12xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x12xf32> -> tensor<8x3xf32>
// CHECK-NEXT: return %{{.*}} : tensor<8x3xf32>
func.func @move(%arg0: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x12xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0]]> annotate_for_users : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%{{.*}}: tensor<8x12xf32>) -> tensor<8x12xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_reduce %{{.*}} on @mesh mesh_axes = [0] : tensor<8x12xf32> -> tensor<8x12xf32>
// CHECK-NEXT: return %{{.*}} : tensor<8x12xf32>
func.func @reduce(%arg0: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[]], partial = sum[0]> : tensor<8x12xf32>
  %1 = mesh.shard %0 to <@mesh, [[]]> annotate_for_users : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}

// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME: (%{{.*}}: tensor<8x12xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [0] scatter_axis = 1 : tensor<8x12xf32> -> tensor<8x3xf32>
// CHECK-NEXT: return %{{.*}} : tensor<8x3xf32>
func.func @reduce_scatter(%arg0: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[]], partial = sum[0]> : tensor<8x12xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0]]> annotate_for_users : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}

// CHECK-LABEL: func.func @same
// CHECK-SAME: (%{{.*}}: tensor<2x12xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x12xf32>
func.func @same(%arg0: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x12xf32>
  %1 = mesh.shard %0 to <@mesh, [[0]]> annotate_for_users : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}

// CHECK-LABEL: func.func @i64_move
// CHECK-SAME: (%{{.*}}: tensor<4x4x2xi64>) -> tensor<1x4x8xi64>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 0 concat_axis = 2 : tensor<4x4x2xi64> -> tensor<1x4x8xi64>
// CHECK-NEXT: return %{{.*}} : tensor<1x4x8xi64>
func.func @i64_move(%arg0: tensor<4x4x8xi64>) -> tensor<4x4x8xi64> {
  %0 = mesh.shard %arg0 to <@mesh, [[], [], [0]]> : tensor<4x4x8xi64>
  %1 = mesh.shard %0 to <@mesh, [[0]]> annotate_for_users : tensor<4x4x8xi64>
  return %1 : tensor<4x4x8xi64>
}

