# lit configuration for reshard's MLIR tests (reshard-opt, FileCheck). Run through ctest
# (test `reshard_lit`) or directly:
#   python3 $(llvm-config-19 --prefix)/build/utils/lit/lit.py -v <build>/tests/lit
import os

import lit.formats

config.name = "reshard"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.reshard_lit_exec_root

if config.reshard_has_proofs:
    config.available_features.add("proofs")

# reshard-opt, FileCheck, not, and upstream's mlir-opt (for the comparison test).
config.environment["PATH"] = os.pathsep.join(
    [config.reshard_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%mlir_opt_upstream", config.mlir_opt_upstream))
# Keep diagnostics on one line per message (no "see current operation" notes).
config.substitutions.append(
    ("%reshard_opt", "reshard-opt --mlir-print-op-on-diagnostic=false"))
config.substitutions.append(
    ("%spmdize", "--pass-pipeline='builtin.module(func.func(reshard-spmdization))'"))
config.substitutions.append(
    ("%validate",
     "--pass-pipeline='builtin.module(func.func(reshard-spmdization{annotate=true},reshard-validate))'"))
