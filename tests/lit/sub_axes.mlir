// Plans with sub-axes (a1:(2)2: the minor half of axis 1) are lowered on the refined mesh, a
// mesh.mesh whose axes are the pieces (2x4 -> 2x2x2, same devices and row-major ids); the
// chains read back through reshard-validate into plans on @mesh (docs/mlir.md "Sub-axes").
// Anchored on the module, the pass may add that mesh:
// RUN: %reshard_opt %s -split-input-file --pass-pipeline='builtin.module(reshard-spmdization{strategy=optimal})' | FileCheck %s
// Nested under func.func it may not, and plans with whole axes (the output of before sub-axes):
// RUN: %reshard_opt %s -split-input-file %spmdize | FileCheck %s --check-prefix=WHOLE
// Every chain is read back from the IR, run on the interpreter and (with proofs/) proved:
// RUN: %reshard_opt %s -split-input-file --pass-pipeline='builtin.module(reshard-spmdization{strategy=optimal annotate=true},func.func(reshard-validate))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// VALID-COUNT-6: interpreter ok
// VALID-NOT: error
// RUN: %reshard_opt %s -split-input-file --pass-pipeline='builtin.module(reshard-spmdization{strategy=normal validate=true})' -o /dev/null
// RUN: %reshard_opt %s -split-input-file --pass-pipeline='builtin.module(reshard-spmdization{strategy=greedy validate=true})' -o /dev/null
// RUN: %reshard_opt %s -split-input-file --pass-pipeline='builtin.module(reshard-spmdization{strategy=gspmd validate=true})' -o /dev/null

// The refined mesh is declared once, right after @mesh, and shared by every chain that uses
// it; a chain without sub-axes stays on @mesh.
// CHECK: mesh.mesh @mesh(shape = 2x4)
// CHECK-NEXT: mesh.mesh @mesh_2x2x2(shape = 2x2x2)
// CHECK-NOT: mesh.mesh
// WHOLE-NOT: mesh.mesh @mesh_2x2x2
mesh.mesh @mesh(shape = 2x4)

// 960 B received with whole axes (3 steps), 512 B here: a permute, then an all_to_all over
// a1:(2)2 (refined axis 2).
// CHECK-LABEL: func.func @swap
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh_2x2x2 source_target_pairs = {{\[}}[2, 4], [3, 5], [4, 2], [5, 3]] : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %{{.*}} = mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x8xf32>
// WHOLE-LABEL: func.func @swap
// WHOLE-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0
// WHOLE-NEXT: reshard.collective_permute %{{.*}} on @mesh
// WHOLE-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1
// WHOLE-NEXT: return
func.func @swap(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// A pending sum over axis 1 reduced piecewise: reduce_scatter over a1:(2)2 onto dimension 0,
// where the target has it, then over a1:(1)2, so that the permute moves 4 devices (scattering
// a1:(1)2 first ties in time but moves 6).
// CHECK-LABEL: func.func @partial_swap
// CHECK-SAME: (%{{.*}}: tensor<4x16xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh_2x2x2 mesh_axes = [2] scatter_axis = 0 : tensor<4x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %{{.*}} = mesh.reduce_scatter %{{.*}} on @mesh_2x2x2 mesh_axes = [1] scatter_axis = 1 : tensor<2x16xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %{{.*}} = reshard.collective_permute %{{.*}} on @mesh_2x2x2 source_target_pairs = {{\[}}[2, 4], [3, 5], [4, 2], [5, 3]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %{{.*}} : tensor<2x8xf32>
func.func @partial_swap(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]], partial = sum[1]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// Four steps, the first a permute that reverses the pieces so that they arrive in order (the
// validator finds its output layout by search on the refined mesh). Putting the permute
// last instead costs the same (same pairs, same local size); `normal`'s plan, the search's
// incumbent, is this one of the tied plans.
// CHECK-LABEL: func.func @flatten
// CHECK-SAME: (%{{.*}}: tensor<2x8xf32>) -> tensor<16x1xf32>
// CHECK-NEXT: reshard.collective_permute %{{.*}} on @mesh_2x2x2 source_target_pairs = {{\[}}[1, 4], [3, 6], [4, 1], [6, 3]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [1] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [2] split_axis = 1 concat_axis = 0 : tensor<8x2xf32> -> tensor<16x1xf32>
// CHECK-NEXT: return
func.func @flatten(%arg0: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1]]> : tensor<16x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0, 1]]> annotate_for_users : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// No sub-axis helps: the chain stays on @mesh.
// CHECK-LABEL: func.func @slice
// CHECK-NEXT: mesh.all_slice %{{.*}} on @mesh mesh_axes = [1] slice_axis = 1 : tensor<4x16xf32> -> tensor<4x4xf32>
// CHECK-NEXT: return
func.func @slice(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[0], [1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// The name @mesh_2x2x2 is taken by a mesh of another shape: the refined mesh gets a suffix.
// CHECK: mesh.mesh @mesh(shape = 2x4)
// CHECK-NEXT: mesh.mesh @mesh_2x2x2_1(shape = 2x2x2)
// CHECK-NEXT: mesh.mesh @mesh_2x2x2(shape = 8)
// CHECK-LABEL: func.func @taken
// CHECK-NEXT: reshard.collective_permute %{{.*}} on @mesh_2x2x2_1
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2_1 mesh_axes = [2]
mesh.mesh @mesh(shape = 2x4)
mesh.mesh @mesh_2x2x2(shape = 8)
func.func @taken(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// An existing mesh.mesh of the refined shape under that name is reused.
// CHECK: mesh.mesh @mesh(shape = 2x4)
// CHECK-NEXT: mesh.mesh @mesh_2x2x2(shape = 2x2x2)
// CHECK-NOT: mesh.mesh
// CHECK-LABEL: func.func @reused
// CHECK-NEXT: reshard.collective_permute %{{.*}} on @mesh_2x2x2
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [2]
mesh.mesh @mesh(shape = 2x4)
mesh.mesh @mesh_2x2x2(shape = 2x2x2)
func.func @reused(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
