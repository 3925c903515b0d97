#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""attnreg as a Hugging Face transformers attention implementation: a small
randomly initialised Llama generates greedily with attn_implementation
"eager" and "attnreg" from the same weights; the tokens are compared and
the backends attnreg chose are listed. Needs torch and transformers (>= 4.53);
CUDA when present (the GPU backends; pass --conf with the conf-sm90 folder on
NVIDIA), else torch CPU tensors through cpu-ref.

    python3 examples/python/transformers_attnreg.py [--conf DIR] [--tokens N]
"""
import argparse

import torch
from transformers import AutoModelForCausalLM, LlamaConfig

import attnreg
from attnreg.integrations import transformers as attnreg_hf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conf", help="the only conf folder (conf-sm90 on NVIDIA)")
    ap.add_argument("--tokens", type=int, default=16, help="tokens to generate [16]")
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    reg = attnreg.Registry(conf_paths=[args.conf], default_conf=False) if args.conf \
        else attnreg.Registry()
    adapter = attnreg_hf.register(reg)  # attn_implementation="attnreg"

    config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                         head_dim=128, max_position_embeddings=1024)
    torch.manual_seed(0)
    eager = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    ours = AutoModelForCausalLM.from_config(config, attn_implementation="attnreg")
    ours.load_state_dict(eager.state_dict())
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (1, 24), generator=gen)
    outs = {}
    for name, model in (("eager", eager), ("attnreg", ours)):
        model = model.to(device, torch.bfloat16).eval()
        with torch.no_grad():
            outs[name] = model.generate(prompt.to(device), max_new_tokens=args.tokens,
                                        do_sample=False)[0, prompt.shape[1]:].tolist()
        print(f"{name:8s} {outs[name]}")
    same = sum(a == b for a, b in zip(outs["eager"], outs["attnreg"]))
    print(f"{same}/{args.tokens} tokens equal (bf16: a near-tie may flip a late token)")
    for shape, backend in sorted(adapter.decisions.items()):
        print(f"  {backend:18s} {shape}")
    adapter.close()


if __name__ == "__main__":
    main()
