"""R26 compare-train switches Dropout off on both sides, including an RNN's dropout between its layers:
torch applies it inside the fused RNN kernel (not through F.dropout), MindSpore through an inner
nn.Dropout; a one-layer RNN drops nothing on either side, so it counts as no Dropout layer."""

from __future__ import annotations

import pytest
import torch

from torch2ms.trainrun import torch_boot
from torch2ms.trainrun.common import load_sibling

RNNS = (torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU)


@pytest.fixture
def restore_rnns(monkeypatch):
    for cls in RNNS:
        monkeypatch.setattr(cls, "forward", cls.forward)  # put back at teardown


@pytest.mark.parametrize("cls", RNNS, ids=lambda c: c.__name__)
def test_r26_rnn_dropout_between_layers_switched_off_in_training(restore_rnns, cls):
    torch.manual_seed(0)
    rnn, x = cls(4, 5, num_layers=2, dropout=0.5), torch.randn(3, 2, 4)
    reference = rnn.eval()(x)[0]
    assert not torch.equal(rnn.train()(x)[0], reference)  # unpatched, training drops between layers
    counts: dict[str, int] = {}
    torch_boot.patch_rnn_dropout(counts)
    assert torch.equal(rnn(x)[0], reference)
    assert rnn.dropout == 0.5  # the module keeps its setting
    assert counts == {f"torch.nn.{cls.__name__}(dropout between layers)": 1}


def test_r26_rnn_dropout_layers_counted_alike_on_both_sides():
    from mindspore import nn as msnn

    from torch2ms.trainrun import ms_hooks

    load_sibling("common")
    hooks = load_sibling("torch_hooks")
    t = torch.nn.ModuleList([torch.nn.LSTM(4, 4, 1, dropout=0.2), torch.nn.GRU(4, 4, 2, dropout=0.2)])
    m = msnn.CellList([msnn.LSTM(4, 4, 1, dropout=0.2), msnn.GRU(4, 4, 2, dropout=0.2)])
    assert hooks.Model("model0", t).mode_modules == [t[1]]
    t_modes, m_modes = hooks._modes(hooks.Model("model0", t).mode_modules), ms_hooks._modes(ms_hooks._mode_cells(m))
    assert t_modes["drop_total"] == m_modes["drop_total"] == 1
