#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds and runs
# tests/consumer against it: find_package(reshard) + reshard::reshard must be enough.
#
#   install_test.sh BUILD_DIR SOURCE_DIR CMAKE GENERATOR CXX_COMPILER [SANITIZE_FLAGS]
#
# SANITIZE_FLAGS: the flags a RESHARD_SANITIZE build compiled the libraries with; the consumer
# must use them too to link.
set -euo pipefail

build_dir=$1 source_dir=$2 cmake=$3 generator=$4 cxx=$5 sanitize_flags=${6:-}

work=$(mktemp -d "${TMPDIR:-/tmp}/reshard-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

"$cmake" --install "$build_dir" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install"; }

for f in include/reshard/typesys/plan.h include/reshard/synth/synthesize.h \
         include/reshard/interp/interpreter.h bin/reshard; do
  [[ -e $prefix/$f ]] || fail "missing $f in the installed prefix"
done
# GNUInstallDirs may pick lib64 or lib/<multiarch>; find the config wherever it went.
config=$(find "$prefix" -name reshardConfig.cmake -print -quit)
[[ -n $config && -e $(dirname "$config")/reshardConfigVersion.cmake ]] ||
  fail "reshardConfig.cmake / reshardConfigVersion.cmake not installed"
"$prefix/bin/reshard" plan --mesh x=2 --from 'f32[8{x}]' --to 'f32[8]' --json >/dev/null ||
  fail "installed reshard binary does not run"

"$cmake" -S "$source_dir/tests/consumer" -B "$work/build" -G "$generator" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="$sanitize_flags" -DCMAKE_EXE_LINKER_FLAGS="$sanitize_flags" \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configuring the consumer"; }
"$cmake" --build "$work/build" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; fail "building the consumer"; }

out=$("$work/build/consumer") || fail "consumer exited non-zero: $out"
[[ $out == OK* ]] || fail "consumer printed: $out"
echo "install_test: PASS ($out)"
