"""R7 (found by compare-train on karpathy/minGPT's configure_optimizers): inside ``for pn, p in
m.named_parameters()``, ``pn.endswith('weight')`` / ``pn.endswith('bias')`` select the same parameters
in the conversion as in torch, although MindSpore names a LayerNorm's weight ``gamma``, its bias
``beta`` and an Embedding's weight ``embedding_table``. Differential: the groups torch builds and the
groups the converted code builds hold the same parameters (matched through the KB renames)."""

from __future__ import annotations

import textwrap

import pytest

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SRC = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    def build():
        return nn.Sequential(nn.Embedding(5, 4), nn.LayerNorm(4), nn.Linear(4, 3), nn.PReLU())

    def groups(model):
        decay, no_decay = [], []
        for mn, m in model.named_modules():
            for pn, p in m.named_parameters():
                fpn = '%s.%s' % (mn, pn) if mn else pn
                if pn.endswith('bias'):
                    no_decay.append(fpn)
                elif pn.endswith('weight') and isinstance(m, nn.Linear):
                    decay.append(fpn)
                elif pn.endswith('weight'):
                    no_decay.append(fpn)
        return sorted(set(decay)), sorted(set(no_decay))
    """
)
MS_NAME = {"0.weight": "0.embedding_table", "1.weight": "1.gamma", "1.bias": "1.beta", "3.weight": "3.w"}


def test_r7_parameter_name_suffix_tests_pick_the_same_parameters():
    res = convert_source(SRC, "m.py")
    assert res.error is None, res.error
    ns: dict = {}
    exec(compile(SRC, "torch_side", "exec"), ns)
    t_decay, t_no_decay = ns["groups"](ns["build"]())
    ms_ns: dict = {}
    exec(compile(res.code, "ms_side", "exec"), ms_ns)
    m_decay, m_no_decay = ms_ns["groups"](ms_ns["build"]())
    assert sorted(MS_NAME.get(n, n) for n in t_decay) == m_decay == ["2.weight"]
    assert sorted(MS_NAME.get(n, n) for n in t_no_decay) == m_no_decay
    # embedding, LayerNorm weight and bias, Linear bias, PReLU weight; and the Linear weight seen from the
    # root Sequential, which is no Linear (torch files it there too)
    assert len(m_no_decay) == 6
