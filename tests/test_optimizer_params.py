"""An optimizer built in a project function: ``make_optimizer(model.parameters())`` at the call site
becomes ``trainable_params()`` (BatchNorm's statistics are Parameters in MindSpore; an optimizer
handed them decays them), whatever the spelling of the call."""

from __future__ import annotations

import textwrap

from requires_support import require_module

from torch2ms.convert import convert_source

SOURCE = textwrap.dedent(
    """
    import torch
    from torch import nn, optim


    def make_optimizer(params, lr):
        return optim.SGD(params, lr=lr, momentum=0.9, weight_decay=5e-4)


    def make_groups(named, params=None):
        return torch.optim.AdamW([{"params": params, "weight_decay": 0.0}], lr=1e-3)


    def count(params):
        return sum(p.numel() for p in params)


    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    opt = make_optimizer(model.parameters(), 0.1)
    opt2 = make_groups(None, params=model.parameters())
    n = count(model.parameters())
    """
)


def test_r7_parameters_passed_to_an_optimizer_factory_are_the_trainable_ones():
    code = convert_source(SOURCE, "train.py").code
    assert "make_optimizer(model.trainable_params(), 0.1)" in code
    assert "make_groups(None, params=model.trainable_params())" in code
    assert "count(model.get_parameters())" in code  # not an optimizer's: every Parameter, as before


def test_r7_optimizer_factory_call_converts_once():
    once = convert_source(SOURCE, "train.py").code
    assert convert_source(once, "train.py").code == once


def test_r7_optimizer_factory_leaves_batchnorm_statistics_alone():
    """Run the converted factory: one SGD step with weight decay moves no BatchNorm statistic."""
    require_module("mindspore")
    import mindspore as ms
    import numpy as np

    namespace: dict = {}
    exec(compile(convert_source(SOURCE, "train.py").code, "train.py", "exec"), namespace)
    model, opt = namespace["model"], namespace["opt"]
    before = {p.name: p.asnumpy().copy() for p in model.get_parameters() if not p.requires_grad}
    assert before, "the BatchNorm statistics are non-trainable Parameters"
    grads = tuple(ms.Tensor(np.ones(p.shape, np.float32)) for p in opt.parameters)
    opt(grads)
    after = {p.name: p.asnumpy() for p in model.get_parameters() if not p.requires_grad}
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value)
