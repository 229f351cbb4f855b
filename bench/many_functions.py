#!/usr/bin/env python3
"""Prints a module of N functions, each resharding one tensor<1024x1024xf32> from
[[0, 1], [2]] to [[2], [0, 1]] on a 4x4x4 mesh: the input of the reshard-spmdization timings
in docs/mlir.md ("Reuse across functions" and Known limits).

    python3 bench/many_functions.py 4000 > /tmp/f4000.mlir
"""
import sys


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: many_functions.py N")
    print("mesh.mesh @mesh(shape = 4x4x4)")
    for i in range(int(sys.argv[1])):
        print(f"""func.func @f{i}(%arg0: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {{
  %0 = mesh.shard %arg0 to <@mesh, [[0, 1], [2]]> : tensor<1024x1024xf32>
  %1 = mesh.shard %0 to <@mesh, [[2], [0, 1]]> annotate_for_users : tensor<1024x1024xf32>
  return %1 : tensor<1024x1024xf32>
}}""")


if __name__ == "__main__":
    main()
