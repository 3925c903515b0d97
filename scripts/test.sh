#!/usr/bin/env bash
# The whole test suite: installs the build dependencies, builds with -Werror
# into build/ and runs every ctest test (GPU tests report SKIPPED without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNREG_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
cd build
ctest --output-on-failure -j"$(nproc)" "$@"
