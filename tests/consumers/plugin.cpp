// SPDX-License-Identifier: Apache-2.0
// plugin.cpp — "cxx-example", an attnreg backend written in C++17 and built
// out of tree with attnreg_add_plugin() (attnreg::plugin: the plugin ABI
// headers only, hidden visibility, no libattnreg). It shows that
// ATTN_PLUGIN_DEFINE compiles as C++ and exports attn_plugin_entry with C
// linkage, so the registry loads it like a C plugin.
//
// What it runs: causal or non-causal paged attention on host memory, f32
// only, any GQA ratio, head sizes up to 256, without window, softcap or
// sinks; every limit is a predicate, so explain says why it declines.
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include <attn_plugin.h>

namespace
{

constexpr int max_head_dim = 256;
constexpr int max_keys = 1 << 16;

int check_arch(const attn_plugin_context *, const attn_shape *s, attn_verdict *v)
{
    if (std::strncmp(s->arch, "cpu", ATTN_ARCH_MAX) == 0)
        return attn_accept(v);
    return attn_reject(v, ATTN_REASON_ARCH, "arch %.*s not in {cpu}", ATTN_ARCH_MAX - 1, s->arch);
}

int check_dtypes(const attn_plugin_context *, const attn_shape *s, attn_verdict *v)
{
    const int32_t dtypes[] = {s->q_dtype, s->kv_dtype, s->compute_dtype, s->out_dtype};
    for (int32_t d : dtypes)
        if (d != ATTN_DTYPE_F32)
            return attn_reject(v, ATTN_REASON_COMPUTE_DTYPE, "dtype %s not in {f32}",
                               attn_dtype_spelling(d));
    return attn_accept(v);
}

int check_dims(const attn_plugin_context *, const attn_shape *s, attn_verdict *v)
{
    if (s->head_dim > max_head_dim || attn_shape_head_dim_v(s) > max_head_dim)
        return attn_reject(v, ATTN_REASON_HEAD_DIM, "head_dim %d or head_dim_v %d above %d",
                           (int)s->head_dim, (int)attn_shape_head_dim_v(s), max_head_dim);
    if (s->max_kv_len > max_keys)
        return attn_reject(v, ATTN_REASON_KV_LEN, "max_kv_len %d above %d", (int)s->max_kv_len,
                           max_keys);
    return attn_accept(v);
}

int check_features(const attn_plugin_context *, const attn_shape *s, attn_verdict *v)
{
    if (s->window_left != -1 || s->window_right != -1 || s->softcap != 0.0f || s->has_sinks)
        return attn_reject(v, ATTN_REASON_WINDOW, "window, softcap and sinks are not supported");
    return attn_accept(v);
}

const attn_predicate predicates[] = {
    {"arch", check_arch},
    {"dtypes", check_dtypes},
    {"dims", check_dims},
    {"features", check_features},
};

struct backend {
    attn_shape shape;
};

attn_status create(const attn_plugin_context *ctx, const attn_shape *shape, void **out, char *err,
                   size_t err_size)
{
    for (const attn_predicate &p : predicates) {
        attn_verdict v{};
        v.struct_size = sizeof v;
        if (!p.check(ctx, shape, &v)) {
            std::snprintf(err, err_size, "cxx-example: %s", v.message);
            return ATTN_ERR_CREATE_FAILED;
        }
    }
    backend *b = new (std::nothrow) backend{*shape};
    if (!b)
        return ATTN_ERR_NO_MEMORY;
    *out = b;
    return ATTN_OK;
}

attn_status workspace_size(void *, const attn_batch_limits *, size_t *bytes)
{
    *bytes = 0; // forward keeps its state on the stack and in the output rows
    return ATTN_OK;
}

void destroy(void *b)
{
    delete static_cast<backend *>(b);
}

const float *cache_row(const attn_forward_args *a, const attn_shape &s, const void *cache, int seq,
                       int key, int head, int width)
{
    int block = a->block_table[(int64_t)seq * a->block_table_stride + key / s.page_size];
    int64_t slot = (int64_t)block * s.page_size + key % s.page_size;
    return static_cast<const float *>(cache) + (slot * attn_shape_kv_heads(&s) + head) * width;
}

// One pass with a running maximum (online softmax), the output row as the
// accumulator.
attn_status forward(void *self, const attn_forward_args *a, char *err, size_t err_size)
{
    const attn_shape &s = static_cast<backend *>(self)->shape;
    const int d = s.head_dim, dv = attn_shape_head_dim_v(&s);
    const int group = s.num_q_heads / attn_shape_kv_heads(&s);
    for (int seq = 0; seq < a->num_seqs; seq++) {
        const int q_len = a->cu_seqlens_q[seq + 1] - a->cu_seqlens_q[seq];
        const int kv_len = a->seqused_k[seq];
        if (q_len > kv_len ||
            (int64_t)(kv_len + s.page_size - 1) / s.page_size > a->block_table_stride) {
            std::snprintf(err, err_size, "cxx-example: sequence %d: q_len %d, kv_len %d", seq,
                          q_len, kv_len);
            return ATTN_ERR_INVALID_ARGUMENT;
        }
        for (int i = 0; i < q_len; i++) {
            const int t = a->cu_seqlens_q[seq] + i;
            const int visible = s.causal ? kv_len - q_len + i + 1 : kv_len;
            for (int h = 0; h < s.num_q_heads; h++) {
                const float *q =
                    static_cast<const float *>(a->q) + t * a->q_stride_token + h * a->q_stride_head;
                float *o =
                    static_cast<float *>(a->out) + t * a->out_stride_token + h * a->out_stride_head;
                std::array<double, max_head_dim> acc{};
                double top = -INFINITY, sum = 0.0;
                for (int j = 0; j < visible; j++) {
                    const float *k = cache_row(a, s, a->k_cache, seq, j, h / group, d);
                    const float *v = cache_row(a, s, a->v_cache, seq, j, h / group, dv);
                    double score = 0.0;
                    for (int x = 0; x < d; x++)
                        score += (double)q[x] * k[x];
                    score *= a->scale;
                    if (score > top) {
                        double shrink = std::exp(top - score);
                        sum *= shrink;
                        for (int x = 0; x < dv; x++)
                            acc[x] *= shrink;
                        top = score;
                    }
                    double w = std::exp(score - top);
                    sum += w;
                    for (int x = 0; x < dv; x++)
                        acc[x] += w * v[x];
                }
                for (int x = 0; x < dv; x++)
                    o[x] = visible > 0 ? (float)(acc[x] / sum) : 0.0f;
            }
        }
    }
    return ATTN_OK;
}

// The host asks before create: the one device is this CPU.
attn_status probe_devices(const attn_plugin_context *, attn_device_info *devices, uint32_t capacity,
                          uint32_t *count, char *, size_t)
{
    *count = 1;
    if (capacity > 0) {
        devices[0] = attn_device_info{};
        devices[0].struct_size = sizeof devices[0];
        std::snprintf(devices[0].arch, sizeof devices[0].arch, "cpu");
        std::snprintf(devices[0].name, sizeof devices[0].name, "host CPU");
    }
    return ATTN_OK;
}

const char *const built_archs[] = {"cpu", nullptr};

} // namespace

ATTN_PLUGIN_DEFINE(.name = "cxx-example", .version = "1.0.0",
                   .description = "C++17 example backend (tests/consumers)",
                   .built_archs = built_archs, .predicates = predicates,
                   .num_predicates = sizeof predicates / sizeof predicates[0], .create = create,
                   .workspace_size = workspace_size, .forward = forward, .destroy = destroy,
                   .probe_devices = probe_devices)
