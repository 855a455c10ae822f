"""R7/R26 (found by compare-train on pytorch/examples dcgan): an init function that picks layers by class
name (``classname = m.__class__.__name__``; ``if classname.find('BatchNorm') != -1: m.weight ...``)
narrows ``m`` as ``isinstance`` does, so BatchNorm's weight/bias become MindSpore's gamma/beta (per class:
BatchNorm3d keeps them in ``bn2d``). Differential: the converted init, applied by MindSpore, sets the
same values as torch's."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SRC = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    def init_by_name(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            nn.init.constant_(m.weight, 0.25)
        elif 'BatchNorm' in classname:
            nn.init.constant_(m.weight, 1.5)
            nn.init.constant_(m.bias, -0.5)
        elif type(m).__name__.startswith('BatchN'):
            nn.init.constant_(m.bias, 2.0)  # never reached: BatchNorm took the branch above

    def build():
        return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(2, 3), nn.BatchNorm1d(3))
    """
)


def converted() -> str:
    res = convert_source(SRC, "m.py")
    assert res.error is None, res.error
    return res.code


def test_r7_class_name_guard_renames_batchnorm_parameters():
    out = converted()
    assert ".gamma" in out and ".beta" in out and "m.weight" in out  # Conv's weight keeps its name
    assert "review" not in out, out


def test_r7_class_name_guard_init_sets_what_torch_sets(tmp_path):

    ns: dict = {}
    exec(compile(SRC, "torch_side", "exec"), ns)
    t = ns["build"]()
    t.apply(ns["init_by_name"])
    ms_ns: dict = {}
    exec(compile(converted(), "ms_side", "exec"), ms_ns)
    m = ms_ns["build"]()
    m.apply(ms_ns["init_by_name"])
    t_values = sorted(
        float(v.float().mean()) for k, v in t.state_dict().items() if "running" not in k and "num_batches" not in k
    )
    m_values = sorted(float(p.asnumpy().mean()) for p in m.trainable_params())
    assert len(t_values) == len(m_values)
    # every init'ed value is a constant: the sorted means compare value for value (Linear's stay random)
    t_set = {round(v, 6) for v in t_values if v in (0.25, 1.5, -0.5)}
    m_set = {round(v, 6) for v in m_values if v in (0.25, 1.5, -0.5)}
    assert t_set == m_set == {0.25, 1.5, -0.5}
    bn_t = t[1].weight.detach().numpy()
    bn_m = m[1].gamma.asnumpy()
    np.testing.assert_array_equal(bn_t, bn_m)
