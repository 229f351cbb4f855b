// Unsupported input gives a precise diagnostic and a pass failure, never a crash.
// RUN: %reshard_opt %s -split-input-file -verify-diagnostics %spmdize -o /dev/null
// RUN: not %reshard_opt %s -split-input-file --pass-pipeline='builtin.module(func.func(reshard-spmdization{strategy=bogus}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=STRATEGY
// STRATEGY: error: reshard-spmdization: unknown strategy 'bogus' (known: normal,

mesh.mesh @mesh(shape = 2x4)
func.func @dynamic(%arg0: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{dimension 0 of tensor<?x16xf32> is dynamic; reshard needs static shapes}}
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<?x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<?x16xf32>
  return %1 : tensor<?x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @not_divisible(%arg0: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<6x16xf32>
  // expected-error @+1 {{dimension 0 of f32[6{a1},16{a0}] has size 6, not divisible by 4}}
  %1 = mesh.shard %0 to <@mesh, [[1], [0]]> annotate_for_users : tensor<6x16xf32>
  return %1 : tensor<6x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @partial_max(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{partial = max is not supported: reshard models pending sums only (partial = sum)}}
  %0 = mesh.shard %arg0 to <@mesh, [[0]], partial = max[1]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[0]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @unknown_mesh(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{mesh.shard refers to @nomesh, which is not a mesh.mesh}}
  %0 = mesh.shard %arg0 to <@nomesh, [[0]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@nomesh, [[1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// The symbol exists but names a function.
mesh.mesh @mesh(shape = 2x4)
func.func @not_a_mesh(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{mesh.shard refers to @not_a_mesh, which is not a mesh.mesh}}
  %0 = mesh.shard %arg0 to <@not_a_mesh, [[0]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@not_a_mesh, [[1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x?)
func.func @dynamic_mesh(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{mesh @mesh has a dynamic size on axis 1; reshard needs a static mesh}}
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x16xf32>
  %1 = mesh.shard %0 to <@mesh, [[1]]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @create_partial(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x16xf32>
  // expected-error @+1 {{no collective creates a pending sum}}
  %1 = mesh.shard %0 to <@mesh, [[0]], partial = sum[1]> annotate_for_users : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @element_type(%arg0: tensor<8x16xi1>) -> tensor<8x16xi1> {
  // expected-error @+1 {{element type i1 is not supported}}
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x16xi1>
  %1 = mesh.shard %0 to <@mesh, [[1]]> annotate_for_users : tensor<8x16xi1>
  return %1 : tensor<8x16xi1>
}

// -----

mesh.mesh @mesh(shape = 2x4)
// expected-error @+1 {{block argument #0 must have exactly one use, a mesh.shard giving its sharding}}
func.func @unannotated(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %arg0 : tensor<8x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @two_result_annotations(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = mesh.shard %arg0 to <@mesh, [[0]]> : tensor<8x16xf32>
  // expected-error @+1 {{chained mesh.shard ops must be a result annotation (without annotate_for_users) followed by an operand annotation (with annotate_for_users)}}
  %1 = mesh.shard %0 to <@mesh, [[1]]> : tensor<8x16xf32>
  %2 = mesh.shard %1 to <@mesh, [[1]]> annotate_for_users : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// -----

mesh.mesh @mesh(shape = 2x4)
func.func @too_many_split_axes(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{has 2 split_axes entries for tensor<8xf32> of rank 1}}
  %0 = mesh.shard %arg0 to <@mesh, [[0], [1]]> : tensor<8xf32>
  %1 = mesh.shard %0 to <@mesh, [[1]]> annotate_for_users : tensor<8xf32>
  return %1 : tensor<8xf32>
}
