#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Build the GPU kernels, the GPU test and the bench standalone (no core, no
# inih, no check) on the device machine with its nvcc, then run them.
#   usage: plugins/gpu/device_build_test.sh [test|bench|all] [test-count]
# Logs and results go to $OUT (or ./device-out when OUT is unset).
set -u -o pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
what=${1:-all}
count=${2:-120}
out=${OUT:-$root/device-out}
b=/tmp/attnreg-gpu-build
mkdir -p "$out" "$b"
NVCC=${NVCC:-nvcc}
command -v $NVCC >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
FL="-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DATTNREG_GPU_ARCH_LIST=sm_90 -DATTNREG_CUDA_SM90A -I$root/include -I$root/plugins/gpu -I$root/plugins/cpu-ref -I$root/plugins/common"
cd "$root"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$out/build.log"
t0=$(date +%s)
pids=()
# The kernel library's sources (sources.txt, the list CMake builds).
srcs=$(sed 's/\.hip$//' plugins/gpu/sources.txt)
objs=$(for f in $srcs; do printf '%s ' $b/$f.o; done)
for f in $srcs; do
  $NVCC -x cu $FL -Xptxas -v -c plugins/gpu/$f.hip -o $b/$f.o > $b/$f.log 2>&1 &
  pids+=($!)
done
$NVCC -x cu $FL -c tests/gpu/gpu_attn_test.cu -o $b/test.o > $b/test.log 2>&1 & pids+=($!)
$NVCC -x cu $FL -c bench/gpu/gpu_attn_bench.cu -o $b/bench.o > $b/bench.log 2>&1 & pids+=($!)
# cpu-ref plugin, for the cross-check (optional: the float64 reference runs anyway).
if [ -f plugins/cpu-ref/cpu_ref_plugin.c ]; then
  (cf="-O3 -ffp-contract=fast -fPIC -Iinclude -Iplugins/common -Iplugins/cpu-ref"
   gcc $cf -mavx2 -mfma -mf16c -c plugins/cpu-ref/cpu_ref_kernel_avx2.c -o $b/cpuref_avx2.o &&
   gcc $cf -Wno-psabi -shared plugins/cpu-ref/cpu_ref_plugin.c plugins/cpu-ref/cpu_ref_pool.c \
     plugins/cpu-ref/cpu_ref_kernel_generic.c $b/cpuref_avx2.o \
     -o $b/libattn_cpu_ref.so -lpthread -lm > $b/cpuref.log 2>&1 || echo "cpu-ref build failed" >> $b/cpuref.log) &
  pids+=($!)
fi
fail=0
for p in "${pids[@]}"; do wait $p || fail=1; done
cat $b/*.log | grep -E "error|warning|registers|spill|failed" >> "$out/build.log"
[ $fail -eq 0 ] || { echo "BUILD FAILED"; cat $b/*.log | tail -40; exit 1; }
$NVCC -gencode arch=compute_90a,code=sm_90a -cudart static $objs $b/test.o -o $b/gpu_attn_test -ldl || exit 1
$NVCC -gencode arch=compute_90a,code=sm_90a -cudart static $objs $b/bench.o -o $b/gpu_attn_bench || exit 1
echo "build: $(( $(date +%s) - t0 )) s" | tee -a "$out/build.log"
grep -E "registers|spill" "$out/build.log" | head -20
# Instruction mix of the kernels (static SASS opcode counts), for tuning.
if command -v cuobjdump >/dev/null; then
  for o in attn_mtp attn_generic; do
    cuobjdump -sass $b/$o.o | awk '/Function :/{f=$3} /^ +\/\*[0-9a-f]+\*\//{op=$2; if(op ~ /^@/) op=$3; sub(/;$/,"",op); split(op,a,"."); c[f" "a[1]]++} END{for(k in c) print c[k], k}' | sort -k2,2 -k1,1nr | awk '{n[$2]++; if(n[$2]<=14) print}' > "$out/sass_$o.txt"
  done
fi
rc=0
if [ "$what" = test ] || [ "$what" = all ] || [ "$what" = all-profile ]; then
  cref=""
  [ -f $b/libattn_cpu_ref.so ] && cref=$b/libattn_cpu_ref.so
  $b/gpu_attn_test "$cref" "$count" 2>&1 | tee "$out/test.log"
  rc=${PIPESTATUS[0]}
  echo "gpu_attn_test exit $rc"
fi
if [ "$what" = bench ] || [ "$what" = all ] || [ "$what" = all-profile ]; then
  $b/gpu_attn_bench "$out/gpu_bench.json" 2>&1 | tee "$out/bench.log"
  python3 bench/gpu/plot_gpu_bench.py "$out/gpu_bench.json" "$out/gpu_bench.png" 2>&1 | tail -3
fi
if [ "$what" = profile ] || [ "$what" = all-profile ]; then
  # Stall reasons of the two kernels on one large shape each (Firecracker
  # machines only; gVisor has no counters).
  for cfg in "1 16 1 256 8 4 16384 64" "0 32 8 128 16 1 8192 64"; do
    k=$(echo $cfg | cut -d' ' -f1)
    name=$([ $k = 1 ] && echo attn_mtp_kernel || echo attn_generic_kernel)
    timeout 240 ncu --clock-control none -k regex:$name -c 1 --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
      $b/gpu_attn_bench --one $cfg > "$out/ncu_$k.log" 2>&1
    grep -E "Duration|Throughput|Warp Cycles|Stall|Issued Warp|Eligible|Achieved Occupancy|Theoretical Occupancy|Block Limit|one:|ERR|Registers|Shared Memory" "$out/ncu_$k.log" | head -40
  done
fi
exit $rc
