// One resharding repeated (as in every layer of a model) is synthesized once per pass
// instance and reused: the cache must key on everything the plan depends on. @b has @a's
// shardings on another global shape, @c repeats @a exactly, @d has @a's source and another
// target; each gets its own plan, in func.func and module anchoring, single- and
// multi-threaded, and every emitted chain checks on the interpreter.
// RUN: %reshard_opt %s %spmdize --mlir-disable-threading | FileCheck %s
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(reshard-spmdization)' | FileCheck %s --check-prefix=MODULE
// RUN: %reshard_opt %s %validate --mlir-disable-threading -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// VALID-COUNT-4: interpreter ok
// VALID-NOT: error

mesh.mesh @mesh(shape = 2x4)

// CHECK-LABEL: func.func @a
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// CHECK-NEXT: reshard.collective_permute %{{.*}} : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x2xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return
// MODULE-LABEL: func.func @a
// MODULE-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// MODULE-NEXT: reshard.collective_permute %{{.*}} on @mesh_2x2x2 {{.*}} : tensor<4x4xf32> -> tensor<4x4xf32>
// MODULE-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
// MODULE-NEXT: return
func.func @a(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @b
// CHECK-SAME: (%{{.*}}: tensor<8x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} : tensor<8x8xf32> -> tensor<16x4xf32>
// CHECK-NEXT: reshard.collective_permute %{{.*}} : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} : tensor<16x4xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return
// MODULE-LABEL: func.func @b
// MODULE-SAME: (%{{.*}}: tensor<8x8xf32>) -> tensor<4x16xf32>
// MODULE-NEXT: reshard.collective_permute %{{.*}} : tensor<8x8xf32> -> tensor<8x8xf32>
// MODULE-NEXT: mesh.all_to_all %{{.*}} : tensor<8x8xf32> -> tensor<4x16xf32>
// MODULE-NEXT: return
func.func @b(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<16x32xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<16x32xf32>
  return %1 : tensor<16x32xf32>
}

// CHECK-LABEL: func.func @c
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// CHECK-NEXT: reshard.collective_permute %{{.*}} : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x2xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return
// MODULE-LABEL: func.func @c
// MODULE-NEXT: reshard.collective_permute %{{.*}} on @mesh_2x2x2 {{.*}} : tensor<4x4xf32> -> tensor<4x4xf32>
// MODULE-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
// MODULE-NEXT: return
func.func @c(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @d
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<8x2xf32>
// CHECK-NEXT: mesh.all_to_all %{{.*}} on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// CHECK-NEXT: reshard.collective_permute %{{.*}} : tensor<8x2xf32> -> tensor<8x2xf32>
// CHECK-NEXT: return
// MODULE-LABEL: func.func @d
// MODULE-NEXT: reshard.collective_permute %{{.*}} on @mesh_2x2x2 {{.*}} : tensor<4x4xf32> -> tensor<4x4xf32>
// MODULE-NEXT: mesh.all_to_all %{{.*}} on @mesh_2x2x2 mesh_axes = [2] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// MODULE-NEXT: return
func.func @d(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[], [0, 1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
