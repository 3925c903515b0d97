#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (ASan+UBSan) into build-fuzz and
# runs each for SECONDS (default 50) from its committed seed corpus, with a
# scratch copy of the corpus so the repository's stays small.
#   tests/fuzz/run.sh [SECONDS] [harness...]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-50}
shift || true
harnesses=${*:-conf npy cli_flags hf_config plan}
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DATTNREG_FUZZ=ON -DATTNREG_TESTS=OFF \
  -DATTNREG_BENCH=OFF -DATTNREG_GPU=off -DATTNREG_SANITIZE=address,undefined -DATTNREG_WERROR=OFF \
  -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
# cpu-ref: the plan harnesses plan on the build's shipped conf.
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' $harnesses) attn_cpu_ref >/dev/null
for h in $harnesses; do
  work=build-fuzz/corpus-$h
  mkdir -p "$work"
  cp -n tests/fuzz/corpus/${h%_flags}/* "$work"/ 2>/dev/null || true
  echo "fuzz_$h: ${secs}s"
  ASAN_OPTIONS=detect_leaks=1 build-fuzz/bin/fuzz_$h -max_total_time="$secs" -max_len=65536 \
    -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/fuzz_$h- "$work" 2>build-fuzz/fuzz_$h.log ||
    { tail -60 build-fuzz/fuzz_$h.log; echo "fuzz_$h: FINDING (see build-fuzz/fuzz_$h.log)"; exit 1; }
  grep -E '^stat::number_of_executed_units|^stat::new_units_added' build-fuzz/fuzz_$h.log
done
