// Parse/print round trip and verifier of reshard.collective_permute.
// RUN: %reshard_opt %s -split-input-file | %reshard_opt -split-input-file | FileCheck %s

mesh.mesh @mesh(shape = 2x2)
// CHECK-LABEL: func.func @swap
// CHECK: reshard.collective_permute %{{.*}} on @mesh source_target_pairs = {{\[}}[1, 2], [2, 1]] : tensor<4x4xf32> -> tensor<4x4xf32>
func.func @swap(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [[1, 2], [2, 1]] : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

mesh.mesh @mesh(shape = 8)
// CHECK-LABEL: func.func @empty_and_cycle
// CHECK: source_target_pairs = []
// CHECK: source_target_pairs = {{\[}}[0, 1], [1, 2], [2, 0], [3, 3]]
func.func @empty_and_cycle(%arg0: tensor<2xi8>) -> tensor<2xi8> {
  %0 = reshard.collective_permute %arg0 on @mesh source_target_pairs = [] : tensor<2xi8> -> tensor<2xi8>
  %1 = reshard.collective_permute %0 on @mesh source_target_pairs = [[0, 1], [1, 2], [2, 0], [3, 3]] : tensor<2xi8> -> tensor<2xi8>
  return %1 : tensor<2xi8>
}
