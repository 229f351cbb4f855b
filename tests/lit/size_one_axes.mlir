// Size-1 mesh axes: where a plan's last type places them otherwise than the target, the plan
// ends with a permute without pairs that only renames them. It moves nothing, so no op is
// emitted for it, and a chain without it still reads back (the renaming is appended).
// RUN: %reshard_opt %s %spmdize | FileCheck %s
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(reshard-spmdization)' | FileCheck %s --check-prefix=MODULE
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// RUN: %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{validate=true}))' -o /dev/null
// VALID-COUNT-1: interpreter ok
// VALID-NOT: error
// MODULE-NOT: source_target_pairs = []

mesh.mesh @mesh(shape = 1x4)

// The all_to_all over axis 1 ends at [[0, 1], []]; the target has axis 0 on dimension 1.
// CHECK-LABEL: func.func @swap
// CHECK-SAME: (%[[ARG:.*]]: tensor<8x2xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[A2A:.*]] = mesh.all_to_all %[[ARG]] on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x2xf32> -> tensor<2x8xf32>
// CHECK-NEXT: return %[[A2A]]
func.func @swap(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// Only the size-1 axis moves: nothing is emitted (and there is no chain to validate).
// CHECK-LABEL: func.func @rename
// CHECK-SAME: (%[[ARG:.*]]: tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %[[ARG]]
func.func @rename(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1]]> : tensor<8x8xf32>
  %1 = mesh.shard %0 to <@mesh, [[1, 0]]> annotate_for_users : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
