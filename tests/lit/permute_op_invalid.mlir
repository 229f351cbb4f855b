// Verifier errors of reshard.collective_permute.
// RUN: %reshard_opt %s -split-input-file -verify-diagnostics

mesh.mesh @mesh(shape = 2x2)
func.func @types_differ(%arg0: tensor<4x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{operand type 'tensor<4x4xf32>' and result type 'tensor<4x2xf32>' must be equal}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[0, 1]] : tensor<4x4xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @unknown_mesh(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{mesh symbol @nowhere does not name a mesh.mesh}}
  %0 = reshard.collective_permute %arg0 on @nowhere source_target_pairs = [[0, 1]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func private @not_a_mesh_sym()
func.func @not_a_mesh(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{mesh symbol @not_a_mesh_sym does not name a mesh.mesh}}
  %0 = reshard.collective_permute %arg0 on @not_a_mesh_sym source_target_pairs = [[0, 1]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @mesh(shape = 2x2)
func.func @out_of_range(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{device 4 in pair [0, 4] is out of range: mesh @mesh has 4 devices}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[0, 4]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @mesh(shape = 2x2)
func.func @negative(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{device -1 in pair [-1, 0] is out of range}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[-1, 0]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @mesh(shape = 4)
func.func @source_twice(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{device 1 is a source in more than one pair}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[1, 2], [1, 3]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @mesh(shape = 4)
func.func @target_twice(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{device 3 is a target in more than one pair}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[1, 3], [2, 3]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @mesh(shape = 2x?)
func.func @dynamic_mesh(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{mesh @mesh has a dynamic shape}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[0, 1]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

mesh.mesh @mesh(shape = 4)
func.func @bad_syntax(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[1]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 4611686018427387905 x 4 wraps a 64-bit device count to 4.
mesh.mesh @mesh(shape = 4611686018427387905x4)
func.func @device_count_overflow(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{mesh @mesh has no valid device count}}
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[1, 2], [2, 1]] : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
