#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The SASS of one GPU source file for sm_90a, on a machine with nvcc and no
# GPU: the listing bench/gpu/sass_static.py reads (instructions a kernel, by
# opcode, in a loop's range, two builds compared).
#
#   usage: scripts/sass.sh [-B BUILD] SOURCE.hip OUT.sass [NVCC_ARG ...]
#
# BUILD (default build) is a configured build with the GPU backend: its
# include flags for the kernels (plugins/gpu/CMakeFiles/attn_gpu_kernels.dir/
# includes_CUDA.rsp) are used, so SOURCE may be another worktree's copy of a
# file in plugins/gpu. OUT.sass.cubin is kept beside the listing.
#
# The disassembler: $ATTNREG_NVDISASM, else nvdisasm on PATH, else the one of
# Debian 12's non-free nvidia-cuda-toolkit (11.8), fetched once into
# ${XDG_CACHE_HOME:-~/.cache}/attnreg/ and checked against its SHA-256 below
# (84 MB; only usr/bin/nvdisasm is kept). Why: the CUDA 13 toolkit of this
# project's build machines ships nvcc and ptxas without nvdisasm or cuobjdump.
# 11.8's nvdisasm decodes sm_90a code (HGMMA, SYNCS, LDGSTS included) but
# reads only the older header of a cubin: CUDA 12.8+ writes the target in a
# new e_flags layout (0x6005a04 for sm_90a), so a copy with the 11.x layout
# (sm_90: 0x5a055a, ABI version 7) is what it disassembles. The instructions
# are not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build
if [ "${1:-}" = -B ]; then
  B=${2:?-B needs a build folder}
  shift 2
fi
case "${1:-}" in
  -h | --help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
usage="usage: scripts/sass.sh [-B BUILD] SOURCE.hip OUT.sass [NVCC_ARG ...]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
src=$1 out=$2
shift 2
[ -f "$src" ] || { echo "sass.sh: no source file '$src'" >&2; exit 2; }
rsp=$B/plugins/gpu/CMakeFiles/attn_gpu_kernels.dir/includes_CUDA.rsp
[ -f "$rsp" ] ||
  { echo "sass.sh: '$rsp' missing: '$B' is not a build with the GPU backend" >&2; exit 2; }
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || { echo "sass.sh: no nvcc on PATH or in /usr/local/cuda/bin" >&2; exit 2; }

nvdisasm=${ATTNREG_NVDISASM:-$(command -v nvdisasm || true)}
if [ -z "$nvdisasm" ]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/attnreg
  nvdisasm=$cache/nvdisasm-11.8
  if [ ! -x "$nvdisasm" ]; then
    deb=nvidia-cuda-toolkit_11.8.89~11.8.0-5~deb12u1_amd64.deb
    sum=d1156026e704fe0368b6295db06224ed00a727966fb13454f34e3f3102db0457
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "sass.sh: fetching nvdisasm from Debian non-free ($deb, 84 MB)" >&2
    curl -fsS -o "$tmp/$deb" "http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit/$deb"
    echo "$sum  $tmp/$deb" | sha256sum -c --quiet - ||
      { echo "sass.sh: $deb does not match its SHA-256" >&2; exit 1; }
    dpkg-deb --fsys-tarfile "$tmp/$deb" | tar -xf - -C "$tmp" ./usr/bin/nvdisasm
    mkdir -p "$cache" && mv "$tmp/usr/bin/nvdisasm" "$nvdisasm"
  fi
fi

"$nvcc" -DATTNREG_CUDA_SM90A -DATTNREG_GPU_ARCH_LIST_HEADER -DATTNREG_HAVE_GPU_KERNELS \
  -D_POSIX_C_SOURCE=200809L -D_XOPEN_SOURCE=700 --options-file "$rsp" -O2 -DNDEBUG \
  -arch=sm_90a -std=c++17 "$@" -x cu -cubin "$src" -o "$out.cubin"
python3 - "$out.cubin" "$out.cubin.11" << 'PY'
import struct
import sys
d = bytearray(open(sys.argv[1], "rb").read())
if d[:4] != b"\x7fELF" or struct.unpack_from("<H", d, 0x12)[0] != 190:
    sys.exit(f"sass.sh: {sys.argv[1]} is not a CUDA ELF file")
flags = struct.unpack_from("<I", d, 0x30)[0]
if flags & 0xFF != 0x5A and (flags >> 8) & 0xFF != 0x5A:
    sys.exit(f"sass.sh: {sys.argv[1]}: e_flags {flags:#x} is not an sm_90 target")
d[8] = 7
struct.pack_into("<I", d, 0x30, 0x005A055A)
open(sys.argv[2], "wb").write(d)
PY
"$nvdisasm" -c "$out.cubin.11" > "$out"
rm -f "$out.cubin.11"
echo "sass.sh: $out ($(grep -c '^[[:space:]]*/\*[0-9a-f]*\*/' "$out") instructions)" >&2
