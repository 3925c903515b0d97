/* fuzz_hf_config.c — libFuzzer harness for the config.json reader
 * (tools/hf_config: JSON, text_config, head and layer keys, layer_types and
 * their interned names, the model-type rules), and for the plan of every
 * config it accepts, as `attnreg plan --hf-config` makes it. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_plan_walk.h"
#include "hf_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hf_config cfg;
    char err[512];
    if (hf_config_parse((const char *)data, size, "config.json", &cfg, err, sizeof err) !=
        HF_CONFIG_OK)
        return 0;
    attn_model m;
    attn_model_init(&m, sizeof m);
    m.max_model_len = 4096;
    hf_config_apply(&cfg, &m);
    fuzz_plan_walk(&m);
    hf_config_free(&cfg);
    return 0;
}
