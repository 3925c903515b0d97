/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel_decode_avx2.c — the AVX2/FMA/F16C build of the cpu-ref kernels'
 * row decoder, for the dtype tests (compiled with the plugin's AVX2 flags;
 * called only when the CPU has them).
 */
#define CPU_REF_KERNELS_NAME test_kernels_avx2
#define CPU_REF_KERNELS_LABEL "avx2"
#include "cpu_ref_kernel_impl.h"

void test_decode_row_avx2(int32_t dtype, const void *src, float *dst, int32_t n);

void test_decode_row_avx2(int32_t dtype, const void *src, float *dst, int32_t n)
{
    decode_row(dtype, src, dst, n);
}
