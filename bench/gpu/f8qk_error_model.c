/* SPDX-License-Identifier: Apache-2.0 */
/*
 * f8qk_error_model.c — what an fp8 S = Q K^T does to the MTP kernel's
 * output, modelled on the CPU: version 15 measured that design (K straight
 * from the raw e4m3 tile, a bf16 Q row split into two e4m3 terms) 2-12 %
 * faster and outside the MTP tolerances, and left "an accuracy fix" as a
 * way forward. This model says whether any fix inside the matrix units can
 * bring it within them (bench/RESULTS.md version 19: none can).
 *
 * The split is exact (hi = e4m3(x), lo = e4m3((x - hi) 2^4), x = q 2^shift
 * with the row's largest |q| put in [2^7, 2^8): bf16's 8 significant bits
 * are 4 + 4; checked here for every element at least 2^-14 of its row's
 * largest), and every product of e4m3 codes is exact, so what is lost is in
 * the sums: Hopper's fp8 matrix units keep about 14 significant bits
 * (DeepSeek-V3's report; SageAttention2's: 13 mantissa bits) where f32
 * keeps 24. The model rounds the accumulator to BITS significant bits after
 * each k32 step (truncating or to nearest), on data drawn the way
 * tests/gpu/gpu_attn_test.cu draws its MTP cases (bf16 Q in [-2, 2]; e4m3 K
 * and V spread over 2^-8..2^3; k_descale 1/16..2; v_descale 1/4..4; the
 * score scale 0.5..2.5 / sqrt(256)), and prints the worst output error over
 * max|V| (the unit of the test's atol, 2^-10 for the MTP kernel, which also
 * holds P's rounding to f16, up to 2^-11).
 *
 *   cc -O2 -o /tmp/f8qk_error_model bench/gpu/f8qk_error_model.c -lm
 *   /tmp/f8qk_error_model [BITS [TRUNCATE [HI_CHAINS [CASES]]]]  # 14 1 1 60
 *
 * HI_CHAINS spreads the hi term's 8 steps over that many accumulators added
 * in f32 at the end (2-term design: 1; 8 = every k32 step promoted to f32,
 * the DeepGEMM remedy taken to its limit).
 * Results (session 19, 60 cases x 16 rows): worst error 2^-9.7 of max|V|
 * with 14 bits truncated, 2^-10.3 to nearest (13 bits: 2^-8.8 / 2^-9.2; f32's
 * 24: 2^-20.6); with every step promoted, 2^-11.4 / 2^-11.5, which with P's
 * 2^-11 still fills the whole atol. Version 15 measured 1.2-8.8x the allowed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define D 256
#define MAX_KEYS 3000
#define ROWS 16 /* one token's 16 heads share a KV head */

static uint64_t rng_state = 88172645463325252ull;
static double rng_unit(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double rng_sym(double a)
{
    return (2 * rng_unit() - 1) * a;
}
static int rng_int(int lo, int hi)
{
    return lo + (int)(rng_unit() * (hi - lo + 1));
}

/* x kept to `bits` significant bits, truncated toward zero or to nearest */
static double keep_bits(double x, int bits, int truncate)
{
    if (x == 0)
        return 0;
    int e;
    (void)frexp(x, &e);
    const double ulp = ldexp(1.0, e - bits);
    return (truncate ? trunc(x / ulp) : nearbyint(x / ulp)) * ulp;
}

/* e4m3fn, round to nearest even, saturating at 448 (normals from 2^-6 with
 * 3 mantissa bits, subnormals on the 2^-9 grid) */
static double to_e4m3(double x)
{
    double a = fabs(x), r = 448;
    if (a < 448) {
        int e;
        (void)frexp(a, &e);
        const double ulp = ldexp(1.0, (e - 1 < -6 ? -6 : e - 1) - 3);
        r = fmin(nearbyint(a / ulp) * ulp, 448);
    }
    return x < 0 ? -r : r;
}

static double K[MAX_KEYS][D], V[MAX_KEYS][D], s_exact[MAX_KEYS], s_model[MAX_KEYS];

int main(int argc, char **argv)
{
    const int bits = argc > 1 ? atoi(argv[1]) : 14, truncate = argc > 2 ? atoi(argv[2]) : 1;
    const int chains = argc > 3 ? atoi(argv[3]) : 1, cases = argc > 4 ? atoi(argv[4]) : 60;
    if (bits < 2 || bits > 52 || chains < 1 || chains > 8 || cases < 1) {
        fprintf(stderr, "usage: %s [BITS 2-52 [TRUNCATE 0|1 [HI_CHAINS 1-8 [CASES]]]]\n", argv[0]);
        return 2;
    }
    const double kds[] = {1, 0.5, 0.0625, 2}, vds[] = {1, 0.25, 4};
    double worst = 0, sum = 0;
    long inexact = 0, over = 0;
    for (int c = 0; c < cases; c++) {
        const int n = rng_int(4, MAX_KEYS);
        const double kd = kds[rng_int(0, 3)], vd = vds[rng_int(0, 2)];
        const double scale = (0.5 + 2 * rng_unit()) / 16 * kd * 1.4426950408889634; /* log2 units */
        double vmax = 0;
        for (int j = 0; j < n; j++)
            for (int d = 0; d < D; d++) {
                K[j][d] = to_e4m3(rng_sym(1) * ldexp(1, rng_int(-8, 3)));
                V[j][d] = to_e4m3(rng_sym(1) * ldexp(1, rng_int(-8, 3))) * vd;
                vmax = fmax(vmax, fabs(V[j][d]));
            }
        for (int row = 0; row < ROWS; row++) {
            double q[D], hi[D], lo[D], qmax = 0;
            for (int d = 0; d < D; d++) {
                q[d] = keep_bits(rng_sym(2), 8, 0); /* bf16 */
                qmax = fmax(qmax, fabs(q[d]));
            }
            int e;
            (void)frexp(qmax, &e);
            const int shift = 8 - e; /* attn_q_to_e4m3_split */
            for (int d = 0; d < D; d++) {
                const double x = ldexp(q[d], shift);
                hi[d] = to_e4m3(x);
                lo[d] = to_e4m3((x - hi[d]) * 16);
                inexact += fabs(x) >= 0x1p-6 && hi[d] + lo[d] / 16 != x;
            }
            for (int j = 0; j < n; j++) {
                double exact = 0, acc_hi[8] = {0}, acc_lo = 0;
                for (int ks = 0; ks < D / 32; ks++) {
                    double ph = 0, pl = 0;
                    for (int d = 32 * ks; d < 32 * ks + 32; d++) {
                        exact += q[d] * K[j][d];
                        ph += hi[d] * K[j][d];
                        pl += lo[d] * K[j][d];
                    }
                    acc_hi[ks % chains] = keep_bits(acc_hi[ks % chains] + ph, bits, truncate);
                    acc_lo = keep_bits(acc_lo + pl, bits, truncate);
                }
                double a = acc_lo / 16;
                for (int k = 0; k < chains; k++)
                    a += acc_hi[k];
                s_exact[j] = exact * scale;
                s_model[j] = ldexp(a, -shift) * scale;
            }
            double m1 = -INFINITY, m2 = -INFINITY, l1 = 0, l2 = 0, o1[D] = {0}, o2[D] = {0},
                   err = 0;
            for (int j = 0; j < n; j++) {
                m1 = fmax(m1, s_exact[j]);
                m2 = fmax(m2, s_model[j]);
            }
            for (int j = 0; j < n; j++) {
                const double p1 = exp2(s_exact[j] - m1), p2 = exp2(s_model[j] - m2);
                l1 += p1;
                l2 += p2;
                for (int d = 0; d < D; d++) {
                    o1[d] += p1 * V[j][d];
                    o2[d] += p2 * V[j][d];
                }
            }
            for (int d = 0; d < D; d++)
                err = fmax(err, fabs(o1[d] / l1 - o2[d] / l2) / vmax);
            worst = fmax(worst, err);
            sum += err;
            over += err > 0x1p-11;
        }
    }
    printf("accumulator %d bits (%s), %d hi chain(s), %d cases x %d rows: worst output error "
           "%.3g x max|V| (2^%.1f), mean %.3g; rows past 2^-11: %ld; Q split inexact at >= "
           "2^-6: %ld elements\n",
           bits, truncate ? "truncated" : "to nearest", chains, cases, ROWS, worst, log2(worst),
           sum / (cases * ROWS), over, inexact);
    return inexact != 0;
}
