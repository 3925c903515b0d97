#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs the build dependencies, builds attnreg into build/,
# then runs the CLI and the demo host program on the shipped plugins (cpu-ref
# runs on the CPU; the GPU backends are planned for, and run where a GPU is).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
# nvcc (for the GPU kernels) lives outside the default PATH on CUDA installs.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
A=build/bin/attnreg
MTP=(--arch gfx950 --q-heads 16 --kv-heads 1 --head-dim 256 --q-dtype bf16 --kv-dtype fp8_e4m3fn
     --page-size 16 --max-q-len 4 --max-kv-len 4096)
set -x
$A list
$A list --arch gfx950
$A select "${MTP[@]}"
$A explain "${MTP[@]}" --max-q-len 1
$A explain --arch gfx942 --q-heads 32 --kv-heads 8 --head-dim 128 --compute-dtype fp8_e4m3fnuz \
   --kv-dtype fp8_e4m3fnuz --max-q-len 512 --max-kv-len 512
$A check
$A devices
build/bin/host_demo
if $A verify --help >/dev/null 2>&1; then
  $A verify --backend cpu-ref --q-heads 8 --kv-heads 2 --head-dim 128 --q-dtype bf16 --kv-dtype bf16 \
     --max-q-len 16 --max-kv-len 512 --seqs 4 --seed 1
fi
