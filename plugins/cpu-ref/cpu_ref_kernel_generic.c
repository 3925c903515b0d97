/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_kernel_generic.c — the cpu-ref kernels for the baseline ISA of the
 * build (SSE2 on x86-64, NEON on aarch64, scalar elsewhere). Always built and
 * always usable: the fallback when the CPU lacks AVX2/FMA.
 */
#define CPU_REF_KERNELS_NAME cpu_ref_kernels_generic
#define CPU_REF_KERNELS_LABEL "generic"
#include "cpu_ref_kernel_impl.h"
