#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Adds per-program timestamps to the MTP kernel, for a diagnostic build only
(bench/RESULTS.md version 18): globaltimer at entry, after the Q wait, after Q,
after the first tile, after the key loop and after the partials, plus clock64
sums of the loop phases, into a __device__ array printed by a one-thread kernel
after each launch (MTP_STAMPS_PRINT set; first 3 launches). Everything is
under #ifdef ATTN_MTP_STAMPS. Usage, on a scratch copy of the tree:

    python3 bench/gpu/mtp_stamps_apply.py plugins/gpu/attn_mtp.hip
    cmake -B build-st -DCMAKE_CUDA_FLAGS=-DATTN_MTP_STAMPS && cmake --build build-st --target gpu_attn_bench
    MTP_STAMPS_PRINT=1 ATTNREG_BENCH_NSEG=8 build-st/bin/gpu_attn_bench --one 1 16 1 256 8 4 4096 32 > st.txt
    python3 bench/gpu/stamps_summary.py st.txt   # keep only the last grid's lines first

Each anchor is asserted: when the kernel changes, this fails loudly instead of
instrumenting the wrong place."""
from stamps_patch import Patch

patch = Patch('plugins/gpu/attn_mtp.hip')
rep = patch.rep
rep('''/* How far (log2 units) a row's scores''','''#ifdef ATTN_MTP_STAMPS
#include <stdlib.h>
static __device__ __forceinline__ unsigned long long mtp_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ unsigned long long mtp_stamp_buf[4096 * 12];
__global__ void mtp_stamp_print(int n)
{
    for (int i = 0; i < n && i < 4096; i++) {
        const unsigned long long *b = mtp_stamp_buf + 12 * i;
        printf("STAMP %d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\\n", i, b[5], b[0], b[1], b[2], b[3], b[4],
               b[6], b[7], b[8], b[9], b[10], b[11]);
    }
}
#define MTP_STAMP(v) unsigned long long v = mtp_now()
#else
#define MTP_STAMP(v)
#endif
/* How far (log2 units) a row's scores''')
rep('''    using L = mtp_smem<QW, WG, PAIR>;
    constexpr int TILE = L::TILE;''','''    MTP_STAMP(st0);
    using L = mtp_smem<QW, WG, PAIR>;
    constexpr int TILE = L::TILE;''')
rep('''    attn_cp_async_wait(STAGES - 1); /* Q's group: this thread's own copies */''','''    attn_cp_async_wait(STAGES - 1); /* Q's group: this thread's own copies */
    MTP_STAMP(st0b);''')
rep('''    __syncthreads(); /* Q and rowmul visible */''','''    __syncthreads(); /* Q and rowmul visible */
    MTP_STAMP(st1);''')
rep('''    for (int it = 0; it < ntiles; it++) {
        const int st = it % STAGES;
        attn_cp_async_wait(STAGES - 2);''','''#ifdef ATTN_MTP_STAMPS
    unsigned long long st2 = 0, cy[5] = {0, 0, 0, 0, 0}, c3 = 0;
#endif
    for (int it = 0; it < ntiles; it++) {
        const int st = it % STAGES;
#ifdef ATTN_MTP_STAMPS
        const unsigned long long c0 = clock64();
        if (it > 0)
            cy[4] += c0 - c3;
#endif
        attn_cp_async_wait(STAGES - 2);
#ifdef ATTN_MTP_STAMPS
        const unsigned long long c1a = clock64();
        cy[0] += c1a - c0;
#endif''')
rep('''        mtp_tile_barrier<PAIR>(wg); /* B1: tile `it` landed; tile it-1's stage and Kh/Vh are free */''','''#ifdef ATTN_MTP_STAMPS
        const unsigned long long c1 = clock64();
        cy[1] += c1 - c1a;
#endif
        mtp_tile_barrier<PAIR>(wg); /* B1: tile `it` landed; tile it-1's stage and Kh/Vh are free */
#ifdef ATTN_MTP_STAMPS
        const unsigned long long c2 = clock64();
        cy[2] += c2 - c1;
#endif''')
rep('''        mtp_tile_barrier<PAIR>(wg); /* B2: Kh and Vh complete */''','''        mtp_tile_barrier<PAIR>(wg); /* B2: Kh and Vh complete */
#ifdef ATTN_MTP_STAMPS
        if (it == 0)
            st2 = mtp_now();
        c3 = clock64();
        cy[3] += c3 - c2;
#endif''')
rep('''    attn_pdl_launch_dependents(); /* every load is done: the reduce may be scheduled */

    /* Row sums over the 4 lanes of a row. */''','''    MTP_STAMP(st3);
    attn_pdl_launch_dependents(); /* every load is done: the reduce may be scheduled */

    /* Row sums over the 4 lanes of a row. */''')
rep('''            *(float2 *)(p.ws_acc + i1 * MTP_D + 8 * dt + 2 * t) = make_float2(o[dt][2], o[dt][3]);
        }
    }
#else''','''            *(float2 *)(p.ws_acc + i1 * MTP_D + 8 * dt + 2 * t) = make_float2(o[dt][2], o[dt][3]);
        }
    }
#ifdef ATTN_MTP_STAMPS
    __threadfence();
    __syncwarp(); /* (a pair's warpgroup 1 has returned: no block barrier here) */
    MTP_STAMP(st4);
    if (tid == 0) {
        const int idx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        if (idx < 4096) {
            unsigned long long *b = mtp_stamp_buf + 12 * idx;
            b[0] = st0; b[1] = st1; b[2] = st2; b[3] = st3; b[4] = st4; b[5] = ntiles;
            for (int k = 0; k < 5; k++)
                b[6 + k] = cy[k];
            b[11] = st0b;
        }
    }
#endif
#else''')
rep('''    attn_mtp_kernel<QW, WG, PAIR><<<grid, PAIR ? 256 : 128, smem, stream>>>(*p);''','''    attn_mtp_kernel<QW, WG, PAIR><<<grid, PAIR ? 256 : 128, smem, stream>>>(*p);
#ifdef ATTN_MTP_STAMPS
    static int calls = 0;
    if (getenv("MTP_STAMPS_PRINT") && calls++ < 3)
        mtp_stamp_print<<<1, 1, 0, stream>>>(grid.x * grid.y * grid.z);
#endif''')
patch.write()
