"""R11: the converted Adam follows torch's Adam also when gradients are near eps (50 steps).

MindSpore's experimental Adam adds eps before the bias correction; the KB maps Adam without
weight decay to AdamW(weight_decay=0.0), which is torch's Adam exactly.
"""

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.kb import load_kb
from torch2ms.kb.rewrite import rewrite_expression

pytestmark = pytest.mark.differential


def test_r11_adam_matches_torch_with_tiny_gradients():
    torch = require_module("torch")
    ms = require_module("mindspore")
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(64).astype(np.float32)
    scale = rng.choice([1e-9, 1e-8, 1e-6, 1e-3], size=64).astype(np.float32)

    w = torch.nn.Parameter(torch.tensor(w0))
    opt = torch.optim.Adam([w], lr=0.01)
    for _ in range(50):
        opt.zero_grad()
        ((w * torch.tensor(scale)).sum() + (w**2 * torch.tensor(scale)).sum()).backward()
        opt.step()

    src = rewrite_expression(load_kb(), "torch.optim.Adam(params, lr=0.01)").source
    assert "AdamW" in src and "weight_decay=0.0" in src
    p = ms.Parameter(ms.Tensor(w0), name="w")
    ms_opt = eval(src, {"mindspore": ms, "params": [p]})
    s = ms.Tensor(scale)
    grad_fn = ms.value_and_grad(lambda: (p * s).sum() + (p**2 * s).sum(), None, [p])
    for _ in range(50):
        _, grads = grad_fn()
        ms_opt(grads)
    assert np.abs(p.asnumpy() - w.detach().numpy()).max() < 1e-5
