/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hf_config.h — reads the attention part of a Hugging Face config.json into
 * the numbers of an attn_model: libattnreg's internal reader behind
 * attn_hf_config_read (attnreg.h), `attnreg plan --hf-config` and the
 * Python package's plan_hf_config. The tests link it directly.
 *
 * What is read (the section is the top level, or `text_config` when the top
 * level has no num_attention_heads, as in multimodal configs):
 *   num_attention_heads (n_head, n_heads), num_key_value_heads (absent or
 *   null: num_kv_heads or n_head_kv, Falcon's, or multi_query, else MHA),
 *   head_dim (absent or null = hidden_size (n_embd, d_model) /
 *   num_attention_heads), num_hidden_layers (n_layer, n_layers, num_layers),
 *   layer_types (which wins over the pattern keys), sliding_window,
 *   use_sliding_window, max_window_layers, full_attention_interval,
 *   sliding_window_pattern (an integer, or letters such as "LLLG"),
 *   attn_logit_softcapping, query_pre_attn_scalar and attention_multiplier
 *   (the softmax scale), max_position_embeddings (n_positions, max_seq_len,
 *   seq_length), model_type. A note says whenever another family's key name
 *   was read.
 * Refused as unsupported, with the key named: kv_lora_rank (multi-head
 * latent attention, MLA: DeepSeek-V2/V3), attention_chunk_size and
 * "chunked_attention" layers (Llama 4's chunked local attention), alibi true,
 * attn_config.alibi true (MPT) and model_type bloom (ALiBi score biases),
 * blocksparse_* (Phi-3-small's block-sparse attention). docs/DESIGN.md
 * ("Planning a model") has the rules, the window mapping and the model
 * families checked.
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
    HF_CONFIG_IO = 1,          /* the file could not be opened or read */
    HF_CONFIG_MALFORMED = 2,   /* not JSON, or a key of the wrong type or out of range */
    HF_CONFIG_UNSUPPORTED = 3, /* attention no backend here handles (MLA, chunked) */
    HF_CONFIG_NO_JSON = 4      /* jansson (libjansson.so.4) could not be loaded */
} hf_config_status;

/* The largest config.json read (real ones are a few kilobytes). */
#define HF_CONFIG_MAX_BYTES (16u << 20)
#define HF_CONFIG_MAX_NOTES 10

/* struct attn_hf_config is the opaque handle of attnreg.h. */
typedef struct attn_hf_config {
    char model_type[64];  /* "" when the config names none */
    int from_text_config; /* 1 when the numbers came from text_config */
    int32_t num_q_heads;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t num_layers;
    float softcap;
    float scale; /* softmax scale; 0 = head_dim^-1/2 */
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
/* The same on `size` bytes of JSON text; `name` stands for the file in
 * messages. */
hf_config_status hf_config_parse(const char *text, size_t size, const char *name, hf_config *cfg,
                                 char *err, size_t err_size);
void hf_config_free(hf_config *cfg);

/* Writes the model's own numbers into *model (heads, head_dim, layers,
 * softcap, scale, sinks; max_model_len = max_position_embeddings when known).
 * The layers stay owned by cfg. */
void hf_config_apply(const hf_config *cfg, attn_model *model);

#endif /* ATTNREG_HF_CONFIG_H */
