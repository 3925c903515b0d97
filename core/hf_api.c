/* SPDX-License-Identifier: Apache-2.0 */
/* hf_api.c — the public face of the config.json reader (attn_hf_config_*
 * in attnreg.h): the reader's status becomes an attn_status, its sentence
 * the thread's last error, and apply checks the model's own numbers as the
 * planner will, so an engine gets the reader's rules without
 * re-implementing them. */
#include <stdlib.h>
#include <string.h>

#include "hf_config.h"
#include "internal.h"

static attn_status finish_read(hf_config_status st, const char *err, attn_hf_config *cfg,
                               attn_hf_config **out)
{
    if (st == HF_CONFIG_OK) {
        *out = cfg;
        attn_clear_error();
        return ATTN_OK;
    }
    free(cfg);
    switch (st) {
    case HF_CONFIG_IO:
        return attn_fail(ATTN_ERR_IO, "%s", err);
    case HF_CONFIG_UNSUPPORTED:
        return attn_fail(ATTN_ERR_UNSUPPORTED, "%s", err);
    case HF_CONFIG_NO_JSON:
        return attn_fail(ATTN_ERR_LOAD, "%s", err);
    case HF_CONFIG_MALFORMED:
    case HF_CONFIG_OK:
    default:
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s", err);
    }
}

ATTNREG_API attn_status attn_hf_config_read(const char *path, attn_hf_config **out)
{
    if (!out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_hf_config_read: config is NULL");
    *out = NULL;
    if (!path || !*path)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_hf_config_read: no path");
    attn_hf_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    char err[1024] = "";
    return finish_read(hf_config_read(path, cfg, err, sizeof err), err, cfg, out);
}

ATTNREG_API attn_status attn_hf_config_parse(const char *text, size_t size, const char *name,
                                             attn_hf_config **out)
{
    if (!out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_hf_config_parse: config is NULL");
    *out = NULL;
    if (!text)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_hf_config_parse: text is NULL");
    attn_hf_config *cfg = malloc(sizeof *cfg);
    if (!cfg)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    char err[1024] = "";
    return finish_read(
        hf_config_parse(text, size, name && *name ? name : "config.json", cfg, err, sizeof err),
        err, cfg, out);
}

ATTNREG_API void attn_hf_config_free(attn_hf_config *cfg)
{
    if (!cfg)
        return;
    hf_config_free(cfg);
    free(cfg);
}

ATTNREG_API attn_status attn_hf_config_describe(const attn_hf_config *cfg, attn_hf_config_info *out)
{
    if (!cfg || !out || out->struct_size < ATTN_HF_CONFIG_INFO_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_hf_config_describe: bad argument");
    attn_hf_config_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.model_type = cfg->model_type;
    full.from_text_config = cfg->from_text_config;
    full.max_position_embeddings = cfg->max_position_embeddings;
    full.num_notes = cfg->num_notes;
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
    return ATTN_OK;
}

ATTNREG_API const char *attn_hf_config_note(const attn_hf_config *cfg, size_t index)
{
    return cfg && index < cfg->num_notes ? cfg->notes[index] : NULL;
}

ATTNREG_API attn_status attn_hf_config_apply(const attn_hf_config *cfg, attn_model *model)
{
    if (!cfg || !model)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_hf_config_apply: NULL argument");
    if (model->struct_size < ATTN_MODEL_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "model struct_size %u is smaller than the oldest known layout (%zu); "
                         "call attn_model_init() first",
                         model->struct_size, (size_t)ATTN_MODEL_MIN_SIZE);
    int32_t max_model_len = model->max_model_len;
    hf_config_apply(cfg, model);
    if (max_model_len > 0)
        model->max_model_len = max_model_len; /* the host's choice wins */
    /* The check reads a full-size copy: an older host's model has no scale. */
    attn_model full;
    attn_model_init(&full, sizeof full);
    memcpy(&full, model, model->struct_size < sizeof full ? model->struct_size : sizeof full);
    char why[512];
    if (!attn_model_check_own(&full, why, sizeof why))
        return attn_fail(ATTN_ERR_INVALID_SHAPE, "%s", why);
    attn_clear_error();
    return ATTN_OK;
}
