# SPDX-License-Identifier: Apache-2.0
"""The transformers integration on a GPU, as plain functions so that they
run with pytest (test_transformers_gpu.py) or without it (`python3
tests/python/transformers_checks.py`, for a GPU machine without pytest):
randomly initialised small models of three architectures (Llama: GQA;
Mistral: a sliding window on every layer; Gemma 2: sliding and full layers
alternating, softcap, query_pre_attn_scalar's scale), the same weights run
with attn_implementation "eager", "sdpa" and "attnreg" in bf16 on CUDA:
prefill logits and four decode steps over each model's own DynamicCache. The
attnreg logits must be as close to eager's as SDPA's are (twice SDPA's
error, or 1 % of the logits' range, whichever is larger), and the
attention must have run on a GPU backend (the adapter's decisions).
ATTNREG_TEST_CONF names the conf folder (conf-sm90 on NVIDIA, as for
test_gpu.py)."""
import copy
import os
import sys

import torch

import attnreg
from attnreg.integrations import transformers as attnreg_hf

ARCHS = ["llama", "mistral", "gemma2"]
SEQ, BATCH, STEPS = 80, 2, 4


def config_for(name):
    import transformers as tf
    common = dict(vocab_size=512, hidden_size=512, intermediate_size=1024, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=128,
                  max_position_embeddings=4096)
    if name == "llama":
        return tf.LlamaConfig(**common)
    if name == "mistral":
        return tf.MistralConfig(sliding_window=48, **common)
    if name == "gemma2":
        return tf.Gemma2Config(sliding_window=48, query_pre_attn_scalar=144,
                               attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                               **common)
    raise ValueError(name)


def registry():
    conf = os.environ.get("ATTNREG_TEST_CONF")
    kwargs = dict(conf_paths=[conf], default_conf=False, use_env=False) if conf else {}
    return attnreg.Registry(**kwargs)


def run(model, ids):
    """Prefill logits of ids[:, :-STEPS], then STEPS decode steps fed the
    next tokens of ids over the model's own cache: [prefill, step 1, ...]."""
    with torch.no_grad():
        out = model(ids[:, :-STEPS], use_cache=True)
        logits, past = [out.logits[:, -1].float()], out.past_key_values
        prefill = out.logits.float()
        for t in range(STEPS):
            pos = ids.shape[1] - STEPS + t
            out = model(ids[:, pos:pos + 1], past_key_values=past, use_cache=True)
            logits.append(out.logits[:, -1].float())
            past = out.past_key_values
    return prefill, torch.stack(logits[1:])


def check_architecture(name, adapter):
    """Returns {"prefill": (attnreg err, sdpa err), "decode": (...)}, both
    relative to the largest eager logit; raises AssertionError on failure."""
    from transformers import AutoModelForCausalLM
    config = config_for(name)
    torch.manual_seed(0)
    models = {}
    for impl in ("eager", "sdpa", "attnreg"):
        try:
            models[impl] = AutoModelForCausalLM.from_config(copy.deepcopy(config),
                                                            attn_implementation=impl)
        except TypeError:  # a from_config without the keyword: switch after building
            models[impl] = AutoModelForCausalLM.from_config(copy.deepcopy(config))
            models[impl].set_attn_implementation(impl)
    state = models["eager"].state_dict()
    for impl, m in models.items():
        m.load_state_dict(state)
        models[impl] = m.to("cuda", torch.bfloat16).eval()
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ), generator=gen).cuda()
    results = {impl: run(m, ids) for impl, m in models.items()}
    errors = {}
    for k, phase in enumerate(("prefill", "decode")):
        want = results["eager"][k]
        span = want.abs().max().item()
        ours = (results["attnreg"][k] - want).abs().max().item() / span
        sdpa = (results["sdpa"][k] - want).abs().max().item() / span
        errors[phase] = (ours, sdpa)
        assert ours <= max(2 * sdpa, 1e-2), \
            f"{name} {phase}: attnreg {ours:.3e} vs eager, beyond 2x sdpa's {sdpa:.3e} and 1e-2"
    gpu = [b for b in adapter.decisions.values() if b != "cpu-ref"]
    assert gpu, f"{name}: no GPU backend ran: {adapter.decisions}"
    return errors


def main():
    if not torch.cuda.is_available():
        print("transformers_checks: no CUDA device: skipped")
        return 0
    try:
        import transformers
    except ImportError:
        print("transformers_checks: no transformers: skipped")
        return 0
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{torch.cuda.get_device_name()}")
    adapter = attnreg_hf.register(registry())
    failed = 0
    for name in ARCHS:
        try:
            errors = check_architecture(name, adapter)
            print(f"{name}: prefill rel err attnreg {errors['prefill'][0]:.3e} "
                  f"(sdpa {errors['prefill'][1]:.3e}); decode attnreg {errors['decode'][0]:.3e} "
                  f"(sdpa {errors['decode'][1]:.3e}): ok")
        except AssertionError as e:
            print(f"{name}: FAILED: {e}")
            failed += 1
    for shape, backend in sorted(adapter.decisions.items()):
        print(f"  {backend:18s} {shape}")
    adapter.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
