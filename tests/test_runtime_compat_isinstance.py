"""R8 (found by compare-train on karpathy/minGPT's Trainer): a torch class kept as a value becomes
``TorchCompat("torch.nn.X")``, and ``isinstance(m, (nn.Linear,))`` (configure_optimizers' whitelist) must
keep working: the check runs on the MindSpore class. Each pair of layers answers as torch does."""

from __future__ import annotations

import pytest
import torch
from mindspore import nn as msnn

from torch2ms.runtime import TorchCompat

NAMES = ["Linear", "LayerNorm", "Embedding", "Conv2d"]


def _layers() -> tuple[dict[str, torch.nn.Module], dict[str, msnn.Cell]]:
    t = {"Linear": torch.nn.Linear(2, 3), "LayerNorm": torch.nn.LayerNorm(3), "Embedding": torch.nn.Embedding(4, 3)}
    t["Conv2d"] = torch.nn.Conv2d(1, 1, 3)
    m = {"Linear": msnn.Dense(2, 3), "LayerNorm": msnn.LayerNorm((3,)), "Embedding": msnn.Embedding(4, 3)}
    m["Conv2d"] = msnn.Conv2d(1, 1, 3)
    return t, m


@pytest.mark.parametrize("cls", NAMES)
def test_r8_torch_class_as_value_answers_isinstance_like_torch(cls):
    t, m = _layers()
    compat = TorchCompat(f"torch.nn.{cls}")
    for name in NAMES:
        assert isinstance(m[name], compat) == isinstance(t[name], getattr(torch.nn, cls)), (cls, name)
        assert isinstance(m[name], (compat,)) == isinstance(t[name], (getattr(torch.nn, cls),)), (cls, name)
    assert issubclass(type(m[cls]), compat)


def test_r8_torch_function_as_value_is_no_class():
    assert not isinstance(msnn.Dense(2, 3), TorchCompat("torch.nn.functional.relu"))
