#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# AMD compile check: compile the GPU sources shared by the
# aiter-generic and aiter-mtp-gfx950 plugins for gfx942 and gfx950 with
# Debian's clang-22 + lld-22 and the HIP 5.2 headers (libamdhip64-dev).
# This proves the AMD build compiles (device code for both archs, host code
# against the HIP API); it does not run anything: the Debian 5.2 runtime
# cannot drive those GPUs, and there is no AMD GPU here.
#
#   usage: plugins/gpu/amd_compile_check.sh [OUTDIR]
# Needs: clang-22 clang-tools-22 lld-22 libamdhip64-dev rocm-device-libs llvm-22 (apt), and
# the device-library helper at ../shared/tools/amd-devicelibs.sh relative to
# the repository root (or ATTNREG_AMD_DEVICELIBS_SH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build-amd-check}
helper=${ATTNREG_AMD_DEVICELIBS_SH:-$root/../shared/tools/amd-devicelibs.sh}
mkdir -p "$out"
for tool in clang++-22 ld.lld-22 llvm-as-22 clang-offload-bundler-22; do
  command -v $tool >/dev/null 2>&1 || { echo "amd-compile-check: $tool missing (apt-get install clang-22 clang-tools-22 lld-22 llvm-22)" >&2; exit 2; }
done
[ -f /usr/include/hip/hip_runtime.h ] || { echo "amd-compile-check: HIP headers missing (apt-get install libamdhip64-dev)" >&2; exit 2; }
[ -f "$helper" ] || { echo "amd-compile-check: $helper missing" >&2; exit 2; }
sh "$helper" "$out/devicelibs" >/dev/null

status=0
# The kernel library's sources (sources.txt, the list CMake builds).
srcs=$(sed 's/\.hip$//' "$here/sources.txt")
for src in $srcs; do
  echo "amd-compile-check: $src.hip for gfx942, gfx950"
  # -fgpu-rdc is not needed: every kernel is launched from its own file.
  if ! clang++-22 -x hip -std=c++17 -O3 \
      --offload-arch=gfx942 --offload-arch=gfx950 -mcode-object-version=5 \
      --rocm-path=/usr --rocm-device-lib-path="$out/devicelibs" -fuse-ld=lld \
      -D__HIP_PLATFORM_AMD__ -DATTNREG_GPU_ARCH_LIST=gfx942,gfx950 \
      -I"$root/include" -I"$root/plugins/common" -I"$here" -Wall -Wextra -Wno-unused-parameter \
      -c "$here/$src.hip" -o "$out/$src.o"; then
    status=1
  fi
done
if [ $status -eq 0 ]; then
  # Show that both code objects are really in the fat objects.
  for f in "$out"/*.o; do
    archs=$(strings "$f" | grep -o 'gfx9[45][0-9]' | sort -u | tr '\n' ' ' || true)
    echo "amd-compile-check: $(basename "$f"): ${archs:-bundle listing unavailable}"
  done
  echo "amd-compile-check: OK (compile only; nothing was run on AMD hardware)"
fi
exit $status
