#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: installs the build dependencies, builds with -Werror
# into build/ and runs every ctest test (GPU tests report SKIPPED without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
# nvcc (for the GPU kernels) lives outside the default PATH on CUDA installs.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNREG_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
