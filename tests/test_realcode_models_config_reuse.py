"""Issue 11 (R6): a converted ``__init__`` that changes the config it is given behaves as torch's.

minGPT's ``GPT.__init__`` merges the sizes of ``model_type`` into the config object and asserts
that exactly one of the two was given: a second model built from the same config fails in torch.
The converted class must do the same, no more and no less (the kit's GRAPH_MODE run of
``mingpt_nano`` builds twice from one config, a limit of the kit, not of the conversion)."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest
from rc_models_support import convert_pair
from requires_support import require_module

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    import torch.nn as nn


    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            type_given = config.model_type is not None
            params_given = config.n_embd is not None
            assert type_given ^ params_given
            if type_given:
                config.n_embd = {"nano": 8, "micro": 16}[config.model_type]
            self.emb = nn.Embedding(10, config.n_embd)
            self.head = nn.Linear(config.n_embd, 10, bias=False)

        def forward(self, idx):
            return self.head(self.emb(idx))
    """)


def _outcomes(cls):
    config = SimpleNamespace(model_type="nano", n_embd=None)
    first = cls(config)
    try:
        cls(config)
        second = "built"
    except AssertionError:
        second = "AssertionError"
    return first, second, config.n_embd


def test_r6_init_changing_its_config_fails_a_second_build_as_in_torch(tmp_path):
    require_module("torch")
    tmod, mmod, _ = convert_pair(SOURCE, tmp_path)
    tnet, t_second, t_embd = _outcomes(tmod.GPT)
    mnet, m_second, m_embd = _outcomes(mmod.GPT)
    assert (t_second, t_embd) == (m_second, m_embd) == ("AssertionError", 8)
    assert tuple(mnet.emb.embedding_table.shape) == tuple(tnet.emb.weight.shape) == (10, 8)
