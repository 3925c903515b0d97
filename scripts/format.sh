#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Formats our C sources with the checked-in .clang-format; --check only reports.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || {
  [ "$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq clang-format >/dev/null; }
files=$(git ls-files '*.c' '*.h' '*.cpp' | grep -v '^tests/cli/baselines/')
if [ "${1:-}" = --check ]; then
  clang-format --dry-run --Werror $files
  echo "clang-format: $(echo "$files" | wc -w) files clean"
else
  clang-format -i $files
fi
