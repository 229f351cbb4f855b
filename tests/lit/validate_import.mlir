// reshard-validate reads hand-written (or emitted) chains back into plans and runs them on
// the interpreter: a correct chain passes, a tampered one is caught.
// RUN: %reshard_opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(reshard-validate))' -o /dev/null

mesh.mesh @mesh(shape = 2x4)
func.func @correct(%arg0: tensor<4x4xf32>) -> tensor<2x8xf32> {
  %0 = mesh.all_to_all %arg0 on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
  %1 = reshard.collective_permute %0 on @mesh source_target_pairs = [[1, 2], [2, 4], [3, 6], [4, 1], [5, 3], [6, 5]] : tensor<8x2xf32> -> tensor<8x2xf32>
  // expected-remark @+1 {{reshard-validate: 3 steps f32[8{a0},16{a1}] -> f32[8{a1},16{a0}]: interpreter ok}}
  %2 = mesh.all_to_all %1 on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 3 : i64, to = #mesh.shard<@mesh, [[1], [0]]>}} : tensor<8x2xf32> -> tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}

// -----

// Two pairs swapped: the types still check, the data does not.
mesh.mesh @mesh(shape = 2x4)
func.func @tampered_pairs(%arg0: tensor<4x4xf32>) -> tensor<2x8xf32> {
  %0 = mesh.all_to_all %arg0 on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
  %1 = reshard.collective_permute %0 on @mesh source_target_pairs = [[1, 4], [2, 2], [3, 6], [4, 1], [5, 3], [6, 5]] : tensor<8x2xf32> -> tensor<8x2xf32>
  // expected-error @+1 {{reshard-validate: cannot read the chain back}}
  %2 = mesh.all_to_all %1 on @mesh mesh_axes = [1] split_axis = 0 concat_axis = 1 {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 3 : i64, to = #mesh.shard<@mesh, [[1], [0]]>}} : tensor<8x2xf32> -> tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}

// -----

// The upstream pass's one-step output, annotated with what it claims to do.
mesh.mesh @mesh(shape = 2x4)
func.func @upstream_output(%arg0: tensor<4x4xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{reshard-validate: cannot read the chain back: the chain ends at f32[8,16{a1,a0}] but the resharding's target is f32[8{a1},16{a0}]}}
  %0 = mesh.all_to_all %arg0 on @mesh mesh_axes = [0] split_axis = 1 concat_axis = 0 {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 1 : i64, to = #mesh.shard<@mesh, [[1], [0]]>}} : tensor<4x4xf32> -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

// Reductions other than sum do not map.
mesh.mesh @mesh(shape = 4)
func.func @max_reduce(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mesh.all_reduce' reduces with max; only sum maps to reshard}}
  %0 = mesh.all_reduce %arg0 on @mesh mesh_axes = [0] reduction = <max> {reshard.resharding = {from = #mesh.shard<@mesh, [[]], partial = sum[0]>, global_type = tensor<8xf32>, steps = 1 : i64, to = #mesh.shard<@mesh, [[]]>}} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
