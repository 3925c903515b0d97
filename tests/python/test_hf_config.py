# SPDX-License-Identifier: Apache-2.0
"""attnreg.plan_hf_config: libattnreg's config.json reader through the
binding. Its documents equal `attnreg plan --json` key for key (model,
target, notes and entries included) and validate against the schema; the
reader's refusals and its validation before any capacity reach Python as
the right exceptions."""
import json
import os
import subprocess

import pytest

import attnreg

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "hf_configs")
SCHEMA = os.path.join(HERE, "..", "..", "docs", "attnreg.schema.json")


def config(name):
    return os.path.join(CONFIGS, name)


def cli_plan(build_dir, *args):
    exe = os.path.join(build_dir, "bin", "attnreg")
    conf = os.path.join(build_dir, "share", "attnreg", "conf")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNREG_")}
    p = subprocess.run([exe, "plan", *args, "--conf-only", "--conf", conf, "--json"],
                       capture_output=True, text=True, env=env)
    if not p.stdout.strip():
        pytest.skip(f"{exe} printed nothing (exit {p.returncode}): {p.stderr.strip()[:200]}")
    return json.loads(p.stdout)


@pytest.fixture
def shipped(build_dir):
    conf = os.path.join(build_dir, "share", "attnreg", "conf")
    with attnreg.Registry(conf_paths=[conf], use_env=False, default_conf=False) as r:
        yield r


def validator():
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as f:
        schema = json.load(f)
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("name,flags", [
    ("llama-3.1-8b.json", dict(arch="gfx942", tp=4, max_prefill_tokens=8192)),
    ("gemma-2-27b.json", dict(arch="gfx950", tp=2, kv_dtype="fp8_e4m3fn", spec_tokens=2)),
    ("qwen3.5-397b-a17b.json", dict(arch="gfx950", kv_dtype="fp8_e4m3fn", tp=2,
                                    max_model_len=32768, max_prefill_tokens=8192,
                                    spec_tokens=3)),
    ("exaone-4.0-32b.json", dict(arch="gfx950", tp=8, max_model_len=32768)),
    ("gpt2.json", dict(arch="gfx942")),
])
def test_plan_hf_config_equals_cli_json(build_dir, shipped, name, flags):
    args = ["--hf-config", config(name)]
    for k, v in flags.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    theirs = cli_plan(build_dir, *args)
    plan = attnreg.plan_hf_config(config(name), shipped, **flags)
    ours = plan.to_dict()
    assert ours == theirs
    assert all(e["scale"] > 0 for e in ours["entries"] if e["kind"] != "not_attention")
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator().iter_errors(ours)]
    assert not errors, errors


def test_dict_and_folder_read_like_the_file(shipped, tmp_path):
    with open(config("gemma-2-27b.json")) as f:
        d = json.load(f)
    from_dict = attnreg.plan_hf_config(d, shipped, arch="gfx950")
    (tmp_path / "config.json").write_text(json.dumps(d))
    from_dir = attnreg.plan_hf_config(str(tmp_path), shipped, arch="gfx950")
    assert from_dict.config == "<dict>"
    assert from_dir.config == str(tmp_path / "config.json")
    assert from_dict.entries[0]["scale"] == pytest.approx(144 ** -0.5)
    assert [e["backend"] for e in from_dict.entries] == [e["backend"] for e in from_dir.entries]
    assert any("query_pre_attn_scalar 144" in n for n in from_dict.notes)


def test_refused_kinds_name_the_key(shipped):
    with pytest.raises(attnreg.UnsupportedError, match="blocksparse_block_size: set"):
        attnreg.plan_hf_config(config("phi-3-small-8k.json"), shipped)
    with pytest.raises(attnreg.UnsupportedError, match="kv_lora_rank"):
        attnreg.plan_hf_config(config("deepseek-v3.json"), shipped)
    with pytest.raises(attnreg.UnsupportedError, match="attn_config.alibi"):
        attnreg.plan_hf_config(config("mpt-7b.json"), shipped)


def test_invalid_model_before_max_model_len(shipped):
    with pytest.raises(attnreg.InvalidShapeError) as e:
        attnreg.plan_hf_config(config("invalid-28-6-no-max-len.json"), shipped)
    assert e.value.message == "requires num_heads (28) to be a multiple of num_kv_heads (6)"
    with pytest.raises(attnreg.InvalidShapeError, match="multiple of tp"):
        attnreg.plan_hf_config(config("falcon-7b.json"), shipped, tp=2)
    with pytest.raises(ValueError, match="pass max_model_len"):
        attnreg.plan_hf_config(config("falcon-7b.json"), shipped)
    plan = attnreg.plan_hf_config(config("falcon-7b.json"), shipped, max_model_len=2048)
    assert plan.model["num_kv_heads"] == 1
    assert any("n_head 71" in n for n in plan.notes)


def test_unreadable_and_malformed(shipped, tmp_path):
    with pytest.raises(attnreg.Error) as e:
        attnreg.plan_hf_config(str(tmp_path / "none.json"), shipped)
    assert e.value.status == "ATTN_ERR_IO"
    with pytest.raises(attnreg.Error) as e:
        attnreg.plan_hf_config({"num_attention_heads": "8"}, shipped)
    assert e.value.status == "ATTN_ERR_INVALID_ARGUMENT"
    assert "<dict>: num_attention_heads: expected an integer, got a string" in e.value.message
    with pytest.raises(ValueError, match="not JSON"):
        attnreg.plan_hf_config({"x": float("nan")}, shipped)


def test_registry_plan_to_dict_validates(shipped):
    """Registry.plan's document (no config file) is a plan document too."""
    plan = shipped.plan(arch="gfx942", q_heads=32, kv_heads=8, num_layers=4, max_model_len=4096,
                        scale=0.1)
    d = plan.to_dict()
    assert d["config"] is None and d["model"]["scale"] == 0.1
    assert all(e["scale"] == pytest.approx(0.1) for e in d["entries"])
    errors = [e.message for e in validator().iter_errors(d)]
    assert not errors, errors
