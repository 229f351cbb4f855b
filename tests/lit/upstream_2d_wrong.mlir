// Upstream mesh-spmdization (MLIR 19) on a 2-D mesh: for [[0], [1]] -> [[1], [0]] it emits
// one all_to_all and stops, returning tensor<8x2xf32> where each device must hold
// tensor<2x8xf32>, with no error. reshard-spmdization emits the full, validated chain.
// RUN: %mlir_opt_upstream %s --pass-pipeline='builtin.module(func.func(mesh-spmdization))' | FileCheck %s --check-prefix=UPSTREAM
// RUN: %reshard_opt %s %spmdize | FileCheck %s --check-prefix=RESHARD
// RUN: %reshard_opt %s %validate -o /dev/null 2>&1 | FileCheck %s --check-prefix=VALID
// Strategy `direct` plans one all_to_all_v, which the mesh dialect cannot express:
// RUN: not %reshard_opt %s --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=direct}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIRECT
// DIRECT: error: strategy 'direct' produced all_to_all_v (step 1), which has no mesh-dialect equivalent

mesh.mesh @mesh(shape = 2x4)

// UPSTREAM-LABEL: func.func @swap
// UPSTREAM-SAME: -> tensor<8x2xf32>
// UPSTREAM: mesh.all_to_all {{.*}} mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// UPSTREAM-NOT: mesh.all_to_all
// UPSTREAM: return {{.*}} : tensor<8x2xf32>

// RESHARD-LABEL: func.func @swap
// RESHARD-SAME: (%{{.*}}: tensor<4x4xf32>) -> tensor<2x8xf32>
// RESHARD: mesh.all_to_all {{.*}} mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
// RESHARD: reshard.collective_permute
// RESHARD: mesh.all_to_all {{.*}} mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x2xf32> -> tensor<2x8xf32>
// RESHARD: return {{.*}} : tensor<2x8xf32>

// VALID: remark: reshard-validate: 3 steps f32[8{a0},16{a1}] -> f32[8{a1},16{a0}]: interpreter ok
func.func @swap(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
