"""R7: torch's Embedding(padding_idx=...) keeps the padding row's gradient at zero; MindSpore's
nn.Embedding only zero-initialises the row and trains it. The KB routes such calls to
torch2ms.runtime.Embedding; here real torch and real MindSpore compute the same gradients."""

from __future__ import annotations

import numpy as np
import pytest

from torch2ms.convert import convert_source


def test_r7_embedding_targets_the_runtime_class_only_with_padding_idx():
    src = (
        "import torch.nn as nn\n\nplain = nn.Embedding(10, 4)\nnone = nn.Embedding(10, 4, padding_idx=None)\n"
        "pad = nn.Embedding(10, 4, padding_idx=0)\n"
    )
    code = convert_source(src, "e.py").code
    assert "plain = nn.Embedding(10, 4)" in code and "none = nn.Embedding(10, 4, padding_idx=None)" in code
    assert "pad = Embedding(10, 4, padding_idx=0)" in code and "from torch2ms.runtime import Embedding" in code


@pytest.mark.differential
@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
def test_r7_embedding_padding_row_gets_no_gradient_as_in_torch(mode):
    import mindspore as ms
    import torch

    import torch2ms.runtime
    from torch2ms.kb import load_kb
    from torch2ms.kb.rewrite import rewrite_expression
    from torch2ms.proof import copy_torch_weights

    kb = load_kb()
    ctor = rewrite_expression(kb, "torch.nn.Embedding(10, 4, padding_idx=2)", {})
    torch.manual_seed(0)
    t = torch.nn.Embedding(10, 4, padding_idx=2)
    with torch.no_grad():
        t.weight[2] = 0.5  # a padding row that is not zero: the forward must still return it
    m = eval(ctor.source, {"torch2ms": torch2ms})
    copy_torch_weights(t, m, kb)
    rng = np.random.default_rng(0)
    ids = np.array([[2, 1, 2, 5], [7, 2, 0, 9]])
    w = rng.standard_normal((2, 4, 4)).astype(np.float32)

    t_out = t(torch.from_numpy(ids))
    (t_out * torch.from_numpy(w)).sum().backward()

    def loss(i, weights):
        return (m(i) * weights).sum()

    ms.set_context(mode=getattr(ms, mode))
    try:
        grad_fn = ms.value_and_grad(loss, None, m.trainable_params())
        _, (m_grad,) = grad_fn(ms.Tensor(ids), ms.Tensor(w))
        m_out = m(ms.Tensor(ids))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(m_out.asnumpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-6)
    t_grad = t.weight.grad.numpy()
    assert not t_grad[2].any() and t_grad[1].any()  # torch: nothing flows into the padding row
    np.testing.assert_allclose(m_grad.asnumpy(), t_grad, rtol=1e-5, atol=1e-6)
