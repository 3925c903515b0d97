/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel_decode_generic.c — exposes the cpu-ref kernels' row decoder (a
 * static function of cpu_ref_kernel_impl.h) to the dtype tests, compiled
 * exactly as the plugin's baseline kernel file.
 */
#define CPU_REF_KERNELS_NAME test_kernels_generic
#define CPU_REF_KERNELS_LABEL "generic"
#include "cpu_ref_kernel_impl.h"

void test_decode_row_generic(int32_t dtype, const void *src, float *dst, int32_t n);

void test_decode_row_generic(int32_t dtype, const void *src, float *dst, int32_t n)
{
    decode_row(dtype, src, dst, n);
}
