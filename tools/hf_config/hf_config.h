/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.h — reads the attention part of a Hugging Face config.json into
 * the numbers of an attn_model, for `attnreg plan --hf-config` and its tests.
 *
 * What is read (the section is the top level, or `text_config` when the top
 * level has no num_attention_heads, as in multimodal configs):
 *   num_attention_heads (required), num_key_value_heads (absent or null:
 *   Falcon's num_kv_heads or multi_query, else MHA), head_dim (absent or null = hidden_size /
 * num_attention_heads), num_hidden_layers (required), layer_types, sliding_window,
 *   use_sliding_window, max_window_layers, full_attention_interval,
 *   sliding_window_pattern, attn_logit_softcapping, max_position_embeddings,
 *   model_type.
 * Refused as unsupported: kv_lora_rank (multi-head latent attention, MLA:
 * DeepSeek-V2/V3), attention_chunk_size and "chunked_attention" layers
 * (Llama 4's chunked local attention), alibi true (ALiBi score biases). docs/DESIGN.md ("Planning a
 * model") has the rules, the window mapping and the model-type table.
 *
 * Errors are sentences naming the file and the key ("config.json:
 * num_key_value_heads: expected an integer, got a string"); JSON syntax
 * errors name file:line:column.
 */
#ifndef ATTNREG_HF_CONFIG_H
#define ATTNREG_HF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "attnreg.h"

typedef enum hf_config_status {
    HF_CONFIG_OK = 0,
    HF_CONFIG_IO = 1,         /* the file could not be opened or read */
    HF_CONFIG_MALFORMED = 2,  /* not JSON, or a key of the wrong type or out of range */
    HF_CONFIG_UNSUPPORTED = 3 /* attention no backend here handles (MLA, chunked) */
} hf_config_status;

/* The largest config.json read (real ones are a few kilobytes). */
#define HF_CONFIG_MAX_BYTES (16u << 20)
#define HF_CONFIG_MAX_NOTES 10

typedef struct hf_config {
    char model_type[64];  /* "" when the config names none */
    int from_text_config; /* 1 when the numbers came from text_config */
    int32_t num_q_heads;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t num_layers;
    float softcap;
    int32_t has_sinks;
    int32_t max_position_embeddings; /* 0 when absent */
    attn_layer *layers;              /* num_layers entries */
    char **type_names;               /* names of the layers that are not attention */
    size_t num_type_names;
    /* How values were derived, one sentence each ("head_dim absent:
     * hidden_size 4096 / num_attention_heads 32 = 128"). */
    char *notes[HF_CONFIG_MAX_NOTES];
    size_t num_notes;
} hf_config;

/* Reads `path`. On anything but HF_CONFIG_OK, `err` has the sentence and
 * *cfg holds nothing to free. */
hf_config_status hf_config_read(const char *path, hf_config *cfg, char *err, size_t err_size);
/* The same reading of `size` bytes of JSON already in memory (`path` names
 * them in messages): what hf_config_read does once the file is read, and the
 * fuzzer's entry point. */
hf_config_status hf_config_parse(const char *data, size_t size, const char *path, hf_config *cfg,
                                 char *err, size_t err_size);
void hf_config_free(hf_config *cfg);

/* Writes the model's own numbers into *model (heads, head_dim, layers,
 * softcap, sinks; max_model_len = max_position_embeddings when known). The
 * layers stay owned by cfg. */
void hf_config_apply(const hf_config *cfg, attn_model *model);

#endif /* ATTNREG_HF_CONFIG_H */
