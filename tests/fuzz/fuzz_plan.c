/* fuzz_plan.c — libFuzzer harness for the plan builder
 * (attn_registry_plan): every field of an attn_model and of its layers from
 * the input, in and far out of range (heads and tp that do not divide,
 * windows, layer kinds outside the enum, unequal or tiny struct_sizes, type
 * names without a NUL inside the input), then the whole plan read back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_plan_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct cursor {
    const uint8_t *p;
    size_t left;
} cursor;

static int32_t take_i32(cursor *c)
{
    /* A byte picks a small value or an edge; four more bytes give any. */
    if (!c->left)
        return 0;
    uint8_t k = *c->p++;
    c->left--;
    if (k < 200)
        return (int32_t)(k % 64) - 1;
    if (k < 240) {
        static const int32_t edges[] = {0, -1, 1, INT32_MAX, INT32_MIN, 65536, 65537, 1 << 20};
        return edges[k % 8];
    }
    int32_t v = 0;
    size_t n = c->left < sizeof v ? c->left : sizeof v;
    memcpy(&v, c->p, n);
    c->p += n;
    c->left -= n;
    return v;
}

/* v * k, wrapping as the hardware does (the harness must not overflow). */
static int32_t scaled(int32_t v, uint32_t k)
{
    return (int32_t)((uint32_t)v * k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cursor c = {data, size};
    attn_model m;
    attn_model_init(&m, sizeof m);
    m.num_q_heads = take_i32(&c);
    m.num_kv_heads = take_i32(&c);
    m.head_dim = scaled(take_i32(&c), 8);
    m.head_dim_v = take_i32(&c) & 1 ? scaled(take_i32(&c), 8) : 0;
    m.softcap = (float)(take_i32(&c) % 4) * 10.0f;
    m.has_sinks = take_i32(&c) & 1;
    m.q_dtype = take_i32(&c) % 8;
    m.kv_dtype = take_i32(&c) % 8;
    m.compute_dtype = take_i32(&c) % 8;
    m.out_dtype = take_i32(&c) % 8;
    m.page_size = take_i32(&c);
    m.tp_size = take_i32(&c);
    m.max_model_len = scaled(take_i32(&c), 64);
    m.max_prefill_tokens = take_i32(&c);
    m.spec_tokens = take_i32(&c);
    if (c.left && *c.p & 1)
        memcpy(m.arch, "sm_90", 6);
    /* Layers: a count, each a kind, a window and a type name from the input
     * (copied with a NUL: the API's contract is a C string). */
    int32_t n = take_i32(&c);
    enum { MAX_LAYERS = 96 };
    static attn_layer layers[MAX_LAYERS];
    static char names[MAX_LAYERS][24];
    if (n > 0) {
        n = n % MAX_LAYERS + 1;
        uint32_t layer_size =
            take_i32(&c) == 7 ? (uint32_t)sizeof(attn_layer) - 4 : (uint32_t)sizeof(attn_layer);
        for (int32_t i = 0; i < n; i++) {
            attn_layer_init(&layers[i], sizeof layers[i]);
            layers[i].struct_size = i == n - 1 && take_i32(&c) == 5 ? 8 : layer_size;
            layers[i].kind = take_i32(&c) % 5;
            layers[i].window_left = take_i32(&c);
            layers[i].window_right = take_i32(&c);
            size_t len = c.left < 4 ? c.left : 4;
            if (len && c.p[0] & 1) {
                memcpy(names[i], "t-", 2);
                for (size_t k = 0; k < len; k++)
                    names[i][2 + k] = (char)('a' + c.p[k] % 26);
                names[i][2 + len] = '\0';
                layers[i].type_name = names[i];
            } else {
                layers[i].type_name = NULL;
            }
            c.p += len;
            c.left -= len;
        }
        m.layers = layers;
    }
    m.num_layers = n > 0 ? n : take_i32(&c);
    fuzz_plan_walk(&m);
    return 0;
}
