#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Adds per-program timestamps to the prefill kernel, for a diagnostic build
only (the method of bench/RESULTS.md version 18, for issue 19's short
prefills): %globaltimer, read by the first consumer thread of every program,
at entry, after the tile's sequence and key range are known, after Q has
landed, after the first K tile has landed, after the key loop and after the
output (or partial) is written, into a __device__ array printed as PSTAMP
lines by a one-thread kernel after each launch (PREFILL_STAMPS_PRINT set;
first 3 launches). Everything is under #ifdef ATTN_PREFILL_STAMPS. Usage, on a
scratch copy of the tree:

    python3 bench/gpu/prefill_stamps_apply.py plugins/gpu/attn_prefill.hip
    cmake -B build-st -DCMAKE_CUDA_FLAGS=-DATTN_PREFILL_STAMPS && cmake --build build-st --target gpu_attn_bench
    PREFILL_STAMPS_PRINT=1 build-st/bin/gpu_attn_bench --one 0 32 8 128 16 512 512 4 > st.txt
    python3 bench/gpu/stamps_summary.py st.txt   # keep only the last grid's lines first

Each anchor is asserted: when the kernel changes, this fails loudly instead of
instrumenting the wrong place."""
from stamps_patch import Patch

patch = Patch('plugins/gpu/attn_prefill.hip')
rep = patch.rep

rep('''#if defined(ATTN_PLATFORM_CUDA)

template <int D, bool BF16, bool SOFTCAP, bool KV8>
__global__ void __launch_bounds__(384, 1)''', '''#if defined(ATTN_PLATFORM_CUDA)

#ifdef ATTN_PREFILL_STAMPS
#include <stdlib.h>
static __device__ __forceinline__ unsigned long long pf_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define PF_STAMPS_MAX 16384
__device__ unsigned long long pf_stamp_buf[PF_STAMPS_MAX * 8];
__global__ void pf_stamp_print(int n)
{
    for (int i = 0; i < n && i < PF_STAMPS_MAX; i++) {
        const unsigned long long *b = pf_stamp_buf + 8 * i;
        printf("PSTAMP %d %llu %llu %llu %llu %llu %llu %llu\\n", i, b[0], b[1], b[2], b[3], b[4],
               b[5], b[6]);
    }
}
#define PF_STAMP(v) v = pf_now()
#else
#define PF_STAMP(v)
#endif

template <int D, bool BF16, bool SOFTCAP, bool KV8>
__global__ void __launch_bounds__(384, 1)''')
rep('''    using C = prefill_cfg<D, KV8>;
    constexpr int DP = C::DP, BN = C::BN, BM = C::BM, ST = C::STAGES, CPR = C::CPR;''', '''#ifdef ATTN_PREFILL_STAMPS
    unsigned long long pst[6] = {0, 0, 0, 0, 0, 0};
#endif
    PF_STAMP(pst[0]);
    using C = prefill_cfg<D, KV8>;
    constexpr int DP = C::DP, BN = C::BN, BM = C::BM, ST = C::STAGES, CPR = C::CPR;''')
rep('''    const int ntiles = max(0, min(thi, my_lo + per) - my_lo);
''', '''    const int ntiles = max(0, min(thi, my_lo + per) - my_lo);
    PF_STAMP(pst[1]);
''')
rep('''    attn_named_barrier(1 + cw, 128);
''', '''    attn_named_barrier(1 + cw, 128);
    PF_STAMP(pst[2]);
''')
rep('''        attn_mbar_wait(&kfull[0], 0);
''', '''        attn_mbar_wait(&kfull[0], 0);
        PF_STAMP(pst[3]);
''')
rep('''    /* Row sums over the 4 lanes of a row. */
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);''', '''    PF_STAMP(pst[4]);
    /* Row sums over the 4 lanes of a row. */
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);''')
rep('''            *(float2 *)(p.ws_acc + i) = make_float2(a, b);
        });
    }
#else
    (void)p;
#endif
}''', '''            *(float2 *)(p.ws_acc + i) = make_float2(a, b);
        });
    }
#ifdef ATTN_PREFILL_STAMPS
    __threadfence();
    PF_STAMP(pst[5]);
    if (tid == 128) {
        const int idx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        if (idx < PF_STAMPS_MAX) {
            unsigned long long *b = pf_stamp_buf + 8 * idx;
            b[0] = ntiles;
            for (int k = 0; k < 6; k++)
                b[1 + k] = pst[k];
        }
    }
#endif
#else
    (void)p;
#endif
}''')
rep('''    attn_prefill_kernel<D, BF16, SOFTCAP, KV8><<<grid, C::THREADS, C::SMEM, stream>>>(*p);
''', '''    attn_prefill_kernel<D, BF16, SOFTCAP, KV8><<<grid, C::THREADS, C::SMEM, stream>>>(*p);
#ifdef ATTN_PREFILL_STAMPS
    static int calls = 0;
    if (getenv("PREFILL_STAMPS_PRINT") && calls++ < 3)
        pf_stamp_print<<<1, 1, 0, stream>>>(grid.x * grid.y * grid.z);
#endif
''')
patch.write()
