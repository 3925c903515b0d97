/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_families.h — the two tables the launcher (gpu_attn.hip) dispatches
 * through, so that it never branches on a kernel family:
 *
 *   attn_kernel_ops  one per plugin kernel (gpu_attn_kernel: aiter-generic,
 *                    aiter-mtp): the shape check, the launch plan, the
 *                    context's per-device settings, the per-batch checks,
 *                    and which launch family runs a batch;
 *   attn_family_ops  one per launch family (portable generic, scalar
 *                    decode, matrix-unit decode, wgmma prefill, MTP): its
 *                    segment rule, its tiling and its launch.
 *
 * Adding a kernel family is one attn_family_ops in attn_families.hip and a
 * line in the chooser of the plugin kernel that runs it. Host code only; not
 * installed; not part of any ABI.
 */
#ifndef ATTN_FAMILIES_H
#define ATTN_FAMILIES_H

#include "attn_launch_plan.h"
#include "gpu_attn.h"
#include "gpu_attn_internal.h"

struct attn_kernel_ops;

/* One backend: a plugin kernel's context for one shape on one device. */
struct gpu_attn_ctx {
    const attn_kernel_ops *ops;
    gpu_attn_kernel kernel;
    attn_shape shape;
    int device;
    int cus;
    int l2_bytes; /* the device's L2 cache */
    int forced_nseg;
    int mtp_wgmma;         /* attn_kparams.mtp_wgmma */
    int mtp_wgmma_capable; /* the build and the device have the wgmma variant */
    int mtp_pair;          /* -1: the family's rule picks the pair form; 0: never; 1: always */
    int prefill;           /* batches with q_len > 1 run the prefill kernel (attn_prefill.hip) */
    int pdl;               /* attn_kparams.pdl: the reduce as a programmatic dependent launch */
    int pdl_main;          /* attn_kparams.pdl_main */
    int pdl_capable;       /* the platform and the device have it (NVIDIA sm_90+) */
    int reduce_rows;       /* attn_kparams.reduce_rows */
    int prefill_dynamic;   /* the prefill kernel's dynamic grid: -1 the one-wave rule, 0 never,
                              1 always (gpu_attn_force_prefill_persistent) */
    int prefill_per_cu;    /* its programs an SM holds (attn_prefill_programs_per_cu) */
    int prefill_layout_dynamic; /* the plan's layout allows the dynamic grid (the one-wave
                                   rule's first condition; attn_launch_plan_prefill_layout) */
    /* The launch plan of the shape on the device's arch: the same function
     * (attn_launch_plan.h) the plugin's predicate accepted the shape with. */
    attn_launch_plan plan;
    int decode_mma;     /* one-token batches run the matrix-unit decode kernel */
    int generic_stages; /* the portable generic kernel's stages */
    int generic_raw;    /* ... and whether it reads K/V raw (the plan's generic-raw) */
};

/* What a segment rule and a family choice look at in a batch. */
typedef struct attn_batch_dims {
    int tokens, seqs, max_q, max_k;
} attn_batch_dims;

typedef struct attn_family_ops {
    const char *name;
    /* The family always writes partials (and so always needs the workspace),
     * whatever its segment count. */
    int always_partials;
    /* Key segments for a batch, before the workspace bound (the forced count
     * of gpu_attn_force_segments is applied by attn_family_segments). */
    int (*segments)(const gpu_attn_ctx *c, const attn_batch_dims *b);
    /* block_q, heads_per_tile and head_splits of p (p->group set). */
    void (*tiling)(const gpu_attn_ctx *c, attn_kparams *p);
    /* The launch, with p complete (segments and workspace set); the launch
     * error if any. */
    hipError_t (*launch)(const gpu_attn_ctx *c, const attn_kparams *p, const attn_batch_dims *b,
                         hipStream_t stream);
    /* NULL, or the bytes of counters a launch of batch b at nseg segments
     * needs (attn_kparams.counters: in the workspace after the partials,
     * zeroed before the launch; 0 = none); b = NULL: the most any batch at
     * nseg segments may need (the workspace size). A launch whose workspace
     * has no room for them gets counters = NULL and runs without. */
    size_t (*counter_bytes)(const gpu_attn_ctx *c, const attn_batch_dims *b, int nseg);
} attn_family_ops;

extern const attn_family_ops attn_family_generic, attn_family_decode, attn_family_decode_mma,
    attn_family_prefill, attn_family_mtp;

typedef struct attn_kernel_ops {
    gpu_attn_kernel kernel;
    /* Rows of a program of the portable generic kernel this plugin kernel
     * falls back on (gpu_attn_force_generic's variant check). */
    int generic_rows;
    /* What the kernels can run beyond the checks every kernel shares; the
     * plugins' predicates are the user-facing truth and may be narrower. */
    attn_status (*check_shape)(const attn_shape *s, char *err, size_t n);
    /* What the kernel needs of the device (NULL = nothing beyond the arch
     * being in the binary). */
    attn_status (*check_device)(const hipDeviceProp_t *prop, int device, const char *arch,
                                char *err, size_t n);
    /* The launch plan (attn_launch_plan.h): 0 with a reason when the shape
     * does not fit the arch. */
    int (*plan)(const attn_shape *s, const attn_arch_limits *limits,
                attn_launch_plan_features features, attn_launch_plan *plan, char *why, size_t n);
    /* The context's settings from the plan and the device. */
    void (*configure)(gpu_attn_ctx *c, const hipDeviceProp_t *prop);
    /* A batch the kernel cannot take although the shape admits it: an
     * error naming it; NULL = none. */
    attn_status (*check_batch)(const gpu_attn_ctx *c, const attn_forward_args *a, char *err,
                               size_t n);
    /* The family that runs a batch; prefill_ok: the prefill kernel may take
     * it (it needs a positive score scale). */
    const attn_family_ops *(*family)(const gpu_attn_ctx *c, const attn_batch_dims *b,
                                     int prefill_ok);
} attn_kernel_ops;

const attn_kernel_ops *attn_kernel_ops_of(gpu_attn_kernel kernel);

/* A family's segment count for a batch: the forced count where one is set,
 * else the family's rule. */
int attn_family_segments(const gpu_attn_ctx *c, const attn_family_ops *f, const attn_batch_dims *b);

#endif /* ATTN_FAMILIES_H */
