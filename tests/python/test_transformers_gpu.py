# SPDX-License-Identifier: Apache-2.0
"""The transformers integration on a GPU (transformers_checks.py): three
small random models, prefill and decode-step logits of attn_implementation
"attnreg" against "eager", within SDPA's own distance from eager. Skips
without transformers or a CUDA device (CI has neither; the transformers-free
parts are test_transformers_cpu.py). On NVIDIA set ATTNREG_TEST_CONF to the
conf-sm90 folder, as for test_gpu.py."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to torch", allow_module_level=True)

import transformers_checks  # noqa: E402
from attnreg.integrations import transformers as attnreg_hf  # noqa: E402


@pytest.fixture(scope="module")
def adapter():
    a = attnreg_hf.register(transformers_checks.registry())
    yield a
    a.close()


@pytest.mark.parametrize("name", transformers_checks.ARCHS)
def test_logits_match_eager_within_sdpa_noise(adapter, name):
    errors = transformers_checks.check_architecture(name, adapter)
    print(f"{name}: {errors}")
