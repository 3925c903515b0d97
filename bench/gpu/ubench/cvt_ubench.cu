// SPDX-License-Identifier: Apache-2.0
// Throughput of fp8 e4m3 -> f16 conversion paths on sm_90, per SM and clock
// (bench/RESULTS.md version 20): the conversion unit (cvt.rn.f16x2.e4m3x2),
// the bit-operation reading of ATTN_FP8_BITCVT, a plain integer chain, and
// ex2 for scale. Not part of the build:
//   nvcc -O3 -arch=sm_90a -o cvt_ubench bench/gpu/ubench/cvt_ubench.cu && ./cvt_ubench
#include <cstdio>
#include <cstdint>
#include <cuda_fp16.h>
__device__ __forceinline__ uint32_t cvt_hw(uint16_t a) {
  uint32_t r; asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(a)); return r; }
template <int MODE>
__global__ void k(uint32_t *out, int iters, long long *cyc) {
  uint32_t x[8];
  for (int i = 0; i < 8; i++) x[i] = threadIdx.x * 0x01010101u + i * 0x11u;
  uint32_t acc = 0;
  __syncthreads();
  long long t0 = clock64();
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      if (MODE == 0) { // hw cvt, 2 per word
        uint32_t a = cvt_hw((uint16_t)x[i]), b = cvt_hw((uint16_t)(x[i] >> 16));
        x[i] = x[i] + (a ^ b);
      } else if (MODE == 1) { // ATTN_FP8_BITCVT's sequence: 2 prmt, 2 x (and, shift, or), 2 hmul2
        uint32_t lo = __byte_perm(x[i], 0, 0x1404), hi = __byte_perm(x[i], 0, 0x3424);
        uint32_t flo = (lo & 0x80008000u) | ((lo & 0x7F007F00u) >> 1);
        uint32_t fhi = (hi & 0x80008000u) | ((hi & 0x7F007F00u) >> 1);
        __half2 a = __hmul2(*(__half2*)&flo, __float2half2_rn(256.f));
        __half2 b = __hmul2(*(__half2*)&fhi, __float2half2_rn(256.f));
        x[i] = x[i] + (*(uint32_t*)&a ^ *(uint32_t*)&b);
      } else if (MODE == 2) { // baseline: just the add/xor chain
        x[i] = x[i] + (x[i] ^ 0x5a5a5a5au);
      } else { // ex2
        float f = __uint_as_float(x[i] & 0x3f7fffffu); float r;
        asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(f));
        float r2; asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r2) : "f"(r));
        x[i] = x[i] + __float_as_uint(r2);
      }
    }
  }
  __syncthreads();
  long long t1 = clock64();
  for (int i = 0; i < 8; i++) acc ^= x[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  uint32_t *out; long long *cyc; cudaMalloc(&out, 1 << 24); cudaMallocManaged(&cyc, 8 * 1024);
  const char *names[4] = {"hw cvt.f16x2.e4m3x2 (2/word)", "bit trick (2 prmt+4 lop/shift+2 hmul2 per word)", "baseline add/xor", "ex2 x2"};
  for (int threads : {128, 256, 512, 1024}) for (int mode = 0; mode < 4; mode++) {
    int iters = 4096;
    void (*const kernels[4])(uint32_t *, int, long long *) = {k<0>, k<1>, k<2>, k<3>};
    for (int rep = 0; rep < 2; rep++) { // the first launch warms up
      kernels[mode]<<<sms, threads>>>(out, iters, cyc);
      cudaDeviceSynchronize();
    }
    double c = 0; for (int b = 0; b < sms; b++) c += cyc[b]; c /= sms;
    // words converted per SM per clock (a word = 4 fp8 values)
    double words = (double)threads * iters * 8;
    printf("threads %4d  %-50s  %.2f words/clk/SM  (%.1f fp8 values/clk/SM)\n", threads, names[mode], words / c, 4 * words / c);
  }
  return 0;
}
