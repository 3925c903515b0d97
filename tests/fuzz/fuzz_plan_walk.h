/* fuzz_plan_walk.h — what the plan fuzzers do with a model: plan it on a
 * registry opened once (the build's shipped conf: cpu-ref and the GPU
 * plugins' INIs), then read everything back (summary, every entry, a lookup
 * per layer and phase) so that ASan sees any string or array the plan got
 * wrong. */
#ifndef FUZZ_PLAN_WALK_H
#define FUZZ_PLAN_WALK_H

#include <stdlib.h>
#include <string.h>

#include "attnreg.h"

static attn_registry *fuzz_registry(void)
{
    static attn_registry *reg;
    if (!reg) {
        attn_registry_options opt;
        attn_registry_options_init(&opt);
        opt.skip_env = 1;
        opt.skip_env_conf_path = 1;
        opt.log_level = ATTN_LOG_OFF;
        if (attn_registry_open(&opt, &reg) != ATTN_OK)
            abort();
    }
    return reg;
}

static void fuzz_plan_walk(const attn_model *m)
{
    attn_plan *plan = NULL;
    attn_status st = attn_registry_plan(fuzz_registry(), m, &plan);
    if (!plan)
        return;
    attn_plan_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    if (attn_plan_summarize(plan, &sum) != ATTN_OK || sum.status != st)
        abort();
    size_t chars = strlen(sum.message);
    for (size_t k = 0; k < sum.num_entries; k++) {
        attn_plan_entry e;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        if (attn_plan_entry_get(plan, k, &e) != ATTN_OK)
            abort();
        chars += strlen(e.layer_type) + strlen(e.message);
        for (uint32_t i = 0; i < e.num_layers; i++)
            if (e.layers[i] < 0 || e.layers[i] >= sum.num_layers)
                abort(); /* a layer index outside the model */
        if (e.shape) {
            char text[512];
            attn_shape_format(e.shape, text, sizeof text);
            chars += strlen(text);
        }
        if (e.selection && e.selection->backend_name)
            chars += strlen(e.selection->backend_name);
    }
    for (int32_t layer = 0; layer < sum.num_layers && layer < 8; layer++)
        for (int32_t phase = 0; phase < 3; phase++) {
            attn_plan_entry e;
            memset(&e, 0, sizeof e);
            e.struct_size = sizeof e;
            (void)attn_plan_lookup(plan, layer, phase, &e);
        }
    attn_plan_free(plan);
    (void)chars;
}

#endif /* FUZZ_PLAN_WALK_H */
