/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_batch_check.h — the checks of a batch's per-sequence metadata
 * (cu_seqlens_q, seqused_k) that need the arrays themselves, so they run
 * where the arrays live: in cpu-ref's forward (host memory) and in the CLI's
 * run path before the arrays are uploaded to a device. The Python package
 * applies the same rules to host arrays (python/attnreg, _check_batch).
 *
 * Why: a batch that contradicts itself must be an error naming the sequence
 * and the array, never a result. The case that motivated it:
 * 8 query tokens over seqused_k = 2 gave 6 rows of zeros with no error. The
 * keys of a sequence include its new tokens (the brief's semantics: query i
 * sits at position K - Q + i), so under causal masking or a window, whose
 * visible keys follow the query's position, Q > K leaves rows at negative
 * positions and cannot describe a real batch. Without either mask every
 * query sees every key whatever its position: that is how cascade attention
 * runs queries over a shared prefix shorter than them (then merged with
 * attn_merge_states), so there Q > K is allowed.
 *
 * Header-only and dependent on attn_types.h alone: plugins do not link
 * libattnreg. Block-table checks (width, entries) stay with their callers.
 */
#ifndef ATTN_BATCH_CHECK_H
#define ATTN_BATCH_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attn_types.h"

/* 1 when a shape's visible keys depend on the query's position. */
static inline int attn_batch_positional(const attn_shape *s)
{
    return s->causal || s->window_left >= 0 || s->window_right >= 0;
}

/* Checks, in this order, naming the first problem in err (prefixed with
 * `who`, e.g. "cpu-ref: "):
 *   cu_seqlens_q[0] == 0 and cu_seqlens_q[num_seqs] == num_tokens;
 *   cu_seqlens_q does not decrease (the first sequence where it does);
 *   for each sequence i: seqused_k[i] >= 0,
 *   with `positional` (causal masking or a window bound >= 0) the query
 *   tokens do not exceed seqused_k[i] (the keys include them), and
 *   the lengths stay within max_seqlen_q / max_seqlen_k (pass INT32_MAX to
 *   skip those two, e.g. when the maxima are computed from the arrays).
 * Returns ATTN_OK or ATTN_ERR_INVALID_ARGUMENT. num_seqs >= 1 and both
 * arrays readable (num_seqs + 1 and num_seqs entries) are the caller's. */
static inline attn_status attn_batch_check_seqlens(const char *who, const int32_t *cu_seqlens_q,
                                                   const int32_t *seqused_k, int32_t num_seqs,
                                                   int64_t num_tokens, int positional,
                                                   int32_t max_seqlen_q, int32_t max_seqlen_k,
                                                   char *err, size_t err_size)
{
#define ATTN_BATCH_FAIL(...)                                                                       \
    do {                                                                                           \
        if (err && err_size) {                                                                     \
            int attn_batch_n_ = snprintf(err, err_size, "%s", who ? who : "");                     \
            if (attn_batch_n_ >= 0 && (size_t)attn_batch_n_ < err_size)                            \
                snprintf(err + attn_batch_n_, err_size - (size_t)attn_batch_n_, __VA_ARGS__);      \
        }                                                                                          \
        return ATTN_ERR_INVALID_ARGUMENT;                                                          \
    } while (0)
    if (cu_seqlens_q[0] != 0)
        ATTN_BATCH_FAIL("cu_seqlens_q[0] is %d, must be 0", (int)cu_seqlens_q[0]);
    if (cu_seqlens_q[num_seqs] != num_tokens)
        ATTN_BATCH_FAIL("cu_seqlens_q[%d] (the last entry) is %d, but the batch has %lld query "
                        "tokens",
                        (int)num_seqs, (int)cu_seqlens_q[num_seqs], (long long)num_tokens);
    /* The array as a whole first: a decreasing one has no lengths to
     * compare (and, compared in 64 bits, cannot wrap into plausible ones). */
    for (int32_t i = 0; i < num_seqs; i++)
        if (cu_seqlens_q[i + 1] < cu_seqlens_q[i])
            ATTN_BATCH_FAIL("cu_seqlens_q decreases at sequence %d (cu_seqlens_q[%d] = %d, "
                            "cu_seqlens_q[%d] = %d)",
                            (int)i, (int)i, (int)cu_seqlens_q[i], (int)i + 1,
                            (int)cu_seqlens_q[i + 1]);
    for (int32_t i = 0; i < num_seqs; i++) {
        int64_t q_len = (int64_t)cu_seqlens_q[i + 1] - cu_seqlens_q[i];
        int32_t kv_len = seqused_k[i];
        if (kv_len < 0)
            ATTN_BATCH_FAIL("seqused_k[%d] is %d: sequence %d needs a key count >= 0", (int)i,
                            (int)kv_len, (int)i);
        if (positional && q_len > kv_len)
            ATTN_BATCH_FAIL("sequence %d has %lld query tokens (cu_seqlens_q[%d..%d]) but "
                            "seqused_k[%d] is %d: the keys include the new tokens, so seqused_k "
                            "must be at least the query tokens under causal masking or a window",
                            (int)i, (long long)q_len, (int)i, (int)i + 1, (int)i, (int)kv_len);
        if (q_len > max_seqlen_q)
            ATTN_BATCH_FAIL("sequence %d has %lld query tokens (cu_seqlens_q), more than "
                            "max_seqlen_q %d",
                            (int)i, (long long)q_len, (int)max_seqlen_q);
        if (kv_len > max_seqlen_k)
            ATTN_BATCH_FAIL("seqused_k[%d] is %d, more than max_seqlen_k %d", (int)i, (int)kv_len,
                            (int)max_seqlen_k);
    }
#undef ATTN_BATCH_FAIL
    return ATTN_OK;
}

#endif /* ATTN_BATCH_CHECK_H */
