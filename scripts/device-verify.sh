#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Device verification of the GPU backends through the real registry + CLI,
# on a machine with an NVIDIA GPU that has no apt (no libinih): run it from
# the repository root with a carry folder made on the build machine:
#   mkdir -p .device-carry/{bin,lib/attnreg,share/attnreg}
#   cp build/bin/{attnreg,gpu_attn_test} .device-carry/bin/
#   cp -L build/lib/libattnreg.so.0 /lib/x86_64-linux-gnu/libinih.so.1 \
#         /lib/x86_64-linux-gnu/libjansson.so.4 .device-carry/lib/
# (-L: the device tool does not carry symbolic links, so the sonames must be
# plain files)
#   cp build/lib/attnreg/*.so .device-carry/lib/attnreg/
#   cp -r build/share/attnreg/conf-sm90 .device-carry/share/attnreg/
# conf-sm90 (from tests/gpu) lists sm_90 for the aiter plugins, as the
# shipped conf does too (0.4).
D=${ATTNREG_CARRY:-.device-carry}; export LD_LIBRARY_PATH=$PWD/$D/lib; B=$D/bin/attnreg
C="--conf-only --conf $D/share/attnreg/conf-sm90"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$B devices $C
$B check $C
echo "== runnable select"
$B select $C --runnable --arch sm_90 --q-heads 16 --kv-heads 1 --head-dim 256 --kv-dtype fp8_e4m3fn --max-q-len 4 --max-kv-len 4096
pass=0; fail=0
v() { if $B verify $C "$@"; then pass=$((pass+1)); else echo "FAILED: $*"; fail=$((fail+1)); fi; }
MTP="--arch sm_90 --q-heads 16 --kv-heads 1 --head-dim 256 --q-dtype bf16 --kv-dtype fp8_e4m3fn --page-size 16"
for kv in 1024 4096 16384; do for q in 2 3 4; do v --backend aiter-mtp-gfx950 $MTP --max-q-len $q --max-kv-len $kv --seqs 8 --seed $q$kv; done; done
v --backend aiter-mtp-gfx950 --arch sm_90 --q-heads 32 --kv-heads 2 --head-dim 256 --q-dtype bf16 --kv-dtype fp8_e4m3fn --max-q-len 4 --max-kv-len 1024 --seqs 2 --seed 11 --strided
G="--backend aiter-generic --arch sm_90"
v $G --q-heads 32 --kv-heads 8 --head-dim 128 --max-q-len 1 --max-kv-len 8192 --seqs 16 --seed 1
v $G --q-heads 32 --kv-heads 8 --head-dim 128 --max-q-len 64 --max-kv-len 2048 --seqs 8 --seed 2 --strided
v $G --q-heads 16 --kv-heads 16 --head-dim 64 --q-dtype f16 --max-q-len 128 --max-kv-len 512 --seqs 4 --seed 3 --no-causal
v $G --q-heads 8 --kv-heads 1 --head-dim 256 --kv-dtype fp8_e4m3fn --max-q-len 8 --max-kv-len 4096 --seqs 4 --seed 4 --sinks --window 256,0
v $G --q-heads 8 --kv-heads 8 --head-dim 128 --kv-dtype fp8_e4m3fn --compute-dtype fp8_e4m3fn --max-q-len 16 --max-kv-len 1024 --seqs 4 --seed 5 --softcap 30
v $G --q-heads 12 --kv-heads 4 --head-dim 96 --max-q-len 32 --max-kv-len 700 --seqs 6 --seed 6 --page-size 32 --window 64,16 --no-causal
v $G --q-heads 40 --kv-heads 8 --head-dim 80 --max-q-len 3 --max-kv-len 3000 --seqs 12 --seed 7 --page-size 64 --sinks --softcap 50
v $G --q-heads 16 --kv-heads 2 --head-dim 192 --max-q-len 4 --max-kv-len 2000 --seqs 3 --seed 8
# decode batches on the matrix-unit decode kernel (Q and cache one 16-bit type)
v $G --q-heads 64 --kv-heads 2 --head-dim 64 --q-dtype f16 --kv-dtype f16 --max-q-len 1 --max-kv-len 3000 --seqs 9 --seed 9 --sinks --softcap 30
v $G --q-heads 8 --kv-heads 8 --head-dim 256 --max-q-len 1 --max-kv-len 5000 --seqs 5 --seed 10 --page-size 32 --window 700,0 --strided
v $G --q-heads 20 --kv-heads 4 --head-dim 96 --max-q-len 1 --max-kv-len 777 --seqs 7 --seed 12 --page-size 64
# decode batches over fp8 caches on the matrix-unit decode kernel (raw fp8 tiles
# read into the fragments; D 80 through an f16 tile): every head size's
# class, windows, softcap, sinks, pages of a multiple of 16, descales from verify
v $G --q-heads 32 --kv-heads 8 --head-dim 128 --kv-dtype fp8_e4m3fn --max-q-len 1 --max-kv-len 8192 --seqs 16 --seed 21
v $G --q-heads 32 --kv-heads 8 --head-dim 128 --q-dtype f16 --kv-dtype fp8_e4m3fn --max-q-len 1 --max-kv-len 3000 --seqs 9 --seed 22 --page-size 48 --sinks
v $G --q-heads 16 --kv-heads 1 --head-dim 256 --kv-dtype fp8_e4m3fn --max-q-len 1 --max-kv-len 5000 --seqs 5 --seed 23 --window 700,0 --softcap 30 --strided
v $G --q-heads 20 --kv-heads 4 --head-dim 80 --kv-dtype fp8_e4m3fn --max-q-len 1 --max-kv-len 1777 --seqs 7 --seed 24 --page-size 128
v $G --q-heads 16 --kv-heads 2 --head-dim 192 --kv-dtype fp8_e4m3fn --max-q-len 1 --max-kv-len 2500 --seqs 6 --seed 25 --page-size 32 --sinks
v $G --q-heads 8 --kv-heads 8 --head-dim 64 --q-dtype f16 --kv-dtype fp8_e4m3fn --max-q-len 1 --max-kv-len 4096 --seqs 3 --seed 26 --page-size 512
# multi-token batches on the prefill kernel (Q and cache one 16-bit type): prefill,
# chunked prefill, and mixed batches (with --max-q-len 4 a quarter of the sequences
# have one query token and go to the decode kernel in the same forward)
v $G --q-heads 8 --kv-heads 2 --head-dim 128 --max-q-len 1024 --max-kv-len 2048 --seqs 2 --seed 13
v $G --q-heads 16 --kv-heads 1 --head-dim 256 --max-q-len 512 --max-kv-len 4096 --seqs 3 --seed 14 --sinks
v $G --q-heads 8 --kv-heads 8 --head-dim 64 --q-dtype f16 --kv-dtype f16 --max-q-len 700 --max-kv-len 3000 --seqs 4 --seed 15 --window 256,0 --softcap 30 --strided
v $G --q-heads 32 --kv-heads 8 --head-dim 128 --max-q-len 4 --max-kv-len 4096 --seqs 24 --seed 16
v $G --q-heads 12 --kv-heads 4 --head-dim 96 --max-q-len 300 --max-kv-len 2000 --seqs 6 --seed 17 --page-size 32 --no-causal
v $G --q-heads 16 --kv-heads 2 --head-dim 192 --max-q-len 256 --max-kv-len 1500 --seqs 5 --seed 18 --page-size 64 --window 100,20 --no-causal
# fp8 caches on the prefill kernel (converted to f16 per tile), descales from verify
v $G --q-heads 32 --kv-heads 8 --head-dim 128 --kv-dtype fp8_e4m3fn --max-q-len 512 --max-kv-len 2048 --seqs 3 --seed 19
v $G --q-heads 16 --kv-heads 1 --head-dim 256 --kv-dtype fp8_e4m3fn --max-q-len 300 --max-kv-len 1200 --seqs 4 --seed 20 --sinks --strided
# the page sizes engines use (SGLang 1, vLLM multiples of 16 up to 1024) on every
# kernel: decode (scalar at page 1, matrix units at multiples of 16), prefill, the
# portable kernel (fp8 compute), mixed batches
for pg in 1 48 128 512; do
  v $G --q-heads 32 --kv-heads 8 --head-dim 128 --max-q-len 1 --max-kv-len 3000 --seqs 9 --seed 3$pg --page-size $pg
  v $G --q-heads 16 --kv-heads 2 --head-dim 128 --max-q-len 600 --max-kv-len 2500 --seqs 3 --seed 4$pg --page-size $pg --window 300,0
  v $G --q-heads 8 --kv-heads 8 --head-dim 64 --kv-dtype fp8_e4m3fn --compute-dtype fp8_e4m3fn --max-q-len 40 --max-kv-len 1500 --seqs 4 --seed 5$pg --page-size $pg
  v $G --q-heads 32 --kv-heads 8 --head-dim 128 --kv-dtype fp8_e4m3fn --max-q-len 4 --max-kv-len 4096 --seqs 16 --seed 6$pg --page-size $pg
done
echo "== verify summary: $pass passed, $fail failed"
n=${ATTNREG_VERIFY_GPU_TEST_COUNT:-120}   # 0: skip the kernel-level test
if [ "$n" -gt 0 ]; then
  echo "== gpu_attn_test"
  $D/bin/gpu_attn_test $D/lib/attnreg/libattn_cpu_ref.so "$n" 2>&1 | tail -8
fi
[ "$fail" -eq 0 ]
