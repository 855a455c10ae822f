"""Feature probes (``hasattr(torch.nn.functional, 'scaled_dot_product_attention')``, llama2.c's flash
switch): the converted file kept ``import torch`` for them and marked the probed module "not in the
knowledge base", so it did not run with MindSpore alone. The probe becomes ``True`` where torch2ms
converts the API and ``False`` where it does not.

A generated matrix: how the probed module is spelled (full path, an alias of the module, a
``from``-import) × what is probed (an API the KB converts, one it has no equivalent for, one it has never
heard of) × where the probe is (``__init__``, ``forward``'s condition, module level). Statically: no
torch import, no mark, the constant the KB says. Differentially: the attention module choosing its path
by the probe equals torch in PyNative and GRAPH_MODE.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair

from torch2ms.convert import convert_source
from torch2ms.kb import load_kb

SPELLINGS = {
    "full": ("import torch", "torch.nn.functional"),
    "alias": ("import torch.nn.functional as F", "F"),
    "from": ("from torch.nn import functional as fn", "fn"),
}
PROBED = {  # attribute → is it converted?
    "converted": "scaled_dot_product_attention",
    "unknown": "no_such_function_anywhere",
}
PLACES = {
    "init": "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.p = {probe}\n",
    "forward": (
        "class M(nn.Module):\n    def forward(self, x):\n        if {probe}:\n            return x\n        return -x\n"
    ),
    "module": "P = {probe}\n",
}


def _expected(attr: str) -> bool:
    entry = load_kb().get(f"torch.nn.functional.{attr}")
    return entry is not None and entry.status != "no-equivalent"


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("probed", PROBED)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_probe_becomes_the_kb_constant(spelling, probed, place):
    imp, owner = SPELLINGS[spelling]
    attr = PROBED[probed]
    probe = f"hasattr({owner}, '{attr}')"
    source = f"{imp}\nimport torch.nn as nn\n\n\n" + PLACES[place].format(probe=probe)
    res = convert_source(source, "probe.py")
    assert res.error is None, res.error
    assert "hasattr" not in res.code and "torch" not in res.code.replace("torch2ms", ""), res.code
    assert not [c for c in res.changes if c.action == "not-converted"], res.code
    value = str(_expected(attr))
    assert value in res.code, res.code


def test_a_kb_entry_without_equivalent_probes_false():
    kb = load_kb()
    missing = next(e.torch for e in kb if e.status == "no-equivalent" and e.torch.startswith("torch.nn.functional."))
    module, _, attr = missing.rpartition(".")
    res = convert_source(f"import torch\n\nP = hasattr({module}, '{attr}')\n", "probe.py")
    assert "P = False" in res.code, res.code


def test_probes_of_other_objects_stay():
    source = "import torch\n\nm = torch.nn.Linear(2, 2)\nP = hasattr(m, 'weight')\nQ = hasattr(torch.nn, NAME)\n"
    res = convert_source(source, "probe.py")
    assert "hasattr(m, 'weight')" in res.code, res.code


ATTENTION = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        # flash attention where this torch has it, else by hand
        self.flash = hasattr({owner}, 'scaled_dot_product_attention')

    def forward(self, x):
        q, k, v = self.qkv(x).split(8, dim=-1)
        if self.flash:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        att = (q @ k.transpose(-2, -1)) * (1.0 / 8 ** 0.5)
        mask = torch.ones(x.shape[1], x.shape[1]).tril() == 0
        att = att.masked_fill(mask, float('-inf'))
        return att.softmax(dim=-1) @ v
"""


@pytest.mark.differential
@pytest.mark.parametrize("owner", ["torch.nn.functional", "F"])
def test_attention_choosing_its_path_by_probe_matches_torch(tmp_path, owner):
    tmod, mmod, code = convert_pair(ATTENTION.format(owner=owner), tmp_path)
    assert "import torch\n" not in code and "self.flash = True" in code, code
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    errors = compare_modes(tmod.Attn(), mmod.Attn, [x], tmp_path)
    assert all(e <= 1e-5 for e in errors.values()), errors
