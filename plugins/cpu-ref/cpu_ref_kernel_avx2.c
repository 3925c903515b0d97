/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_kernel_avx2.c — the cpu-ref kernels compiled for AVX2 + FMA + F16C
 * (CMakeLists.txt sets those flags on this file only). Selected at run time
 * when the CPU reports all three, so the plugin still loads and runs on an
 * x86-64 machine without them.
 */
#define CPU_REF_KERNELS_NAME cpu_ref_kernels_avx2
#define CPU_REF_KERNELS_LABEL "avx2"
#include "cpu_ref_kernel_impl.h"
