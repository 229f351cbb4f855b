// reshard-validate reads chains that run on a refinement of the resharding's mesh (how plans
// with sub-axes are lowered, docs/mlir.md) back into plans on that mesh, with sub-axes; a
// chain on a mesh that is not a refinement, or with the wrong pieces, is rejected.
// RUN: %reshard_opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(reshard-validate))' -o /dev/null

mesh.mesh @mesh(shape = 2x4)
mesh.mesh @mesh_2x2x2(shape = 2x2x2)
func.func @refined(%arg0: tensor<4x4xf32>) -> tensor<2x8xf32> {
  %0 = mesh.all_to_all %arg0 on @mesh_2x2x2 mesh_axes = [2] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
  // expected-remark @+1 {{reshard-validate: 2 steps f32[8{a0},16{a1}] -> f32[8{a1},16{a0}]: interpreter ok}}
  %1 = reshard.collective_permute %0 on @mesh_2x2x2 source_target_pairs = [[2, 4], [3, 5], [4, 2], [5, 3]] {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 2 : i64, to = #mesh.shard<@mesh, [[1], [0]]>}} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// The major half of axis 1 (refined axis 1) instead of the minor half: read back as
// a1:(1)2, which the source's dimension 1 (split over a1 = [a1:(1)2, a1:(2)2]) does not end with.
mesh.mesh @mesh(shape = 2x4)
mesh.mesh @mesh_2x2x2(shape = 2x2x2)
func.func @wrong_piece(%arg0: tensor<4x4xf32>) -> tensor<2x8xf32> {
  %0 = mesh.all_to_all %arg0 on @mesh_2x2x2 mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
  // expected-error @+1 {{dimension 1 of f32[8{a0},16{a1:(1)2,a1:(2)2}] does not end with [a1:(1)2]}}
  %1 = reshard.collective_permute %0 on @mesh_2x2x2 source_target_pairs = [[2, 4], [3, 5], [4, 2], [5, 3]] {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 2 : i64, to = #mesh.shard<@mesh, [[1], [0]]>}} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// 4x2 has 8 devices too, but no run of its axes is axis 0 (size 2) of 2x4.
mesh.mesh @mesh(shape = 2x4)
mesh.mesh @mesh_4x2(shape = 4x2)
func.func @not_a_refinement(%arg0: tensor<4x4xf32>) -> tensor<2x8xf32> {
  %0 = mesh.all_to_all %arg0 on @mesh_4x2 mesh_axes = [1] split_axis = 0 concat_axis = 1 : tensor<4x4xf32> -> tensor<2x8xf32>
  // expected-error @+1 {{reshard-validate: cannot read the chain back: the chain runs on @mesh_4x2 but the resharding is on @mesh: mesh a0=4,a1=2 is not a refinement of a0=2,a1=4: no run of its axes has the size 2 of axis 0}}
  %1 = reshard.collective_permute %0 on @mesh_4x2 source_target_pairs = [[2, 4], [3, 5], [4, 2], [5, 3]] {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 2 : i64, to = #mesh.shard<@mesh, [[1], [0]]>}} : tensor<2x8xf32> -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// A different device count.
mesh.mesh @mesh(shape = 2x4)
mesh.mesh @small(shape = 2x2)
func.func @other_devices(%arg0: tensor<4x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{the chain runs on @small but the resharding is on @mesh: mesh a0=2,a1=2 is not a refinement of a0=2,a1=4: the device counts differ}}
  %0 = mesh.all_gather %arg0 on @small mesh_axes = [1] gather_axis = 0 {reshard.resharding = {from = #mesh.shard<@mesh, [[0], [1]]>, global_type = tensor<8x16xf32>, steps = 1 : i64, to = #mesh.shard<@mesh, [[], [1]]>}} : tensor<4x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
