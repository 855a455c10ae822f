"""Issue 23 §1 (verdict): why RMSprop × BatchNorm2d stays DIFFERENT in the noise-band test
(tests/test_compare_train_noise_band.py, BEYOND), op by op on identical inputs — real torch, real MindSpore.

Measured (2 CPU cores, MindSpore 2.10, torch 2.14): the optimizer is not the cause — MindSpore's
RMSprop (mindspore.experimental.optim) follows torch's within float32 rounding on identical gradients
(2.4e-7 .. 7.2e-7 over 40 steps, eps outside the square root on both, zero-initialised square average,
no centering), for full-size gradients and for the 1e-8 rounding noise that reaches a bias before
BatchNorm. BatchNorm2d is: MindSpore's float32 CPU kernel rounds more than torch's, and more so as the
channel mean moves away from zero (forward error against float64, offset 10: 2.8e-6 vs torch 7.9e-7;
offset 100: 2.4e-5 vs 6.4e-6; input gradient at offset 100: 3.4e-6 vs 6.1e-7). RMSprop walks the conv
biases before BatchNorm by full-size steps driven by their pure-noise gradients, so the channel offsets
grow, and MindSpore's losses move 1e-6..7e-6 (absolute) from torch's per step while torch's own float32
run stays within 3.2e-6 relative of its float64 run; the relative distance passes the band only where the
loss has fallen (2.2e-4 at step 26, loss 0.034). No configuration difference (eps placement, centered,
momentum buffer, variance) was found: it is kernel rounding, named here and in the verdict as numerical
drift. Should MindSpore's kernel come within torch's rounding, the first test fails and the noise-band
case belongs in WITHIN.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from requires_support import require_modules

pytestmark = pytest.mark.differential


def _bn_errors(offset: float) -> tuple[float, float, float, float]:
    import mindspore as ms
    import torch

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((16, 8, 6, 6)) + offset).astype(np.float32)
    w = rng.standard_normal(x.shape).astype(np.float32)
    f = torch.nn.functional.batch_norm

    def torch_run(dtype: torch.dtype) -> tuple[np.ndarray, np.ndarray]:
        xt = torch.from_numpy(x).to(dtype).requires_grad_()
        out = f(xt, None, None, training=True, eps=1e-5)
        (out * torch.from_numpy(w).to(dtype)).sum().backward()
        return out.detach().double().numpy(), xt.grad.double().numpy()

    ref, gref = torch_run(torch.float64)
    t, gt = torch_run(torch.float32)
    bn = ms.nn.BatchNorm2d(8, eps=1e-5)
    bn.set_train(True)
    m = bn(ms.Tensor(x)).asnumpy().astype(np.float64)
    gm = ms.grad(lambda a: (bn(a) * ms.Tensor(w)).sum())(ms.Tensor(x)).asnumpy().astype(np.float64)
    return (
        float(np.abs(t - ref).max()),
        float(np.abs(m - ref).max()),
        float(np.abs(gt - gref).max()),
        float(np.abs(gm - gref).max()),
    )


@pytest.mark.parametrize("offset", [10.0, 100.0])
def test_mindspore_batchnorm2d_rounds_more_than_torch_as_the_channel_mean_moves(offset):
    require_modules("torch", "mindspore")
    t_fwd, m_fwd, t_grad, m_grad = _bn_errors(offset)
    # both are float32 rounding (far below a real difference) ...
    assert m_fwd < 1e-3 and m_grad < 1e-3, (m_fwd, m_grad)
    # ... but MindSpore's is the larger by a clear factor: the drift the noise band cannot absorb
    assert m_fwd > 2 * t_fwd, (offset, t_fwd, m_fwd)
    if offset >= 100:
        assert m_grad > 2 * t_grad, (offset, t_grad, m_grad)


@pytest.mark.parametrize("scale", [1.0, 1e-8])
def test_mindspore_rmsprop_follows_torch_on_identical_gradients(scale):
    require_modules("torch", "mindspore")
    import mindspore as ms
    import torch
    from mindspore.experimental import optim

    rng = np.random.default_rng(1)
    p0 = rng.standard_normal(64).astype(np.float32)
    tp = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    topt = torch.optim.RMSprop([tp], lr=1e-2)
    mp = ms.Parameter(ms.Tensor(p0.copy()), name="p")
    mopt = optim.RMSprop([mp], lr=1e-2)
    worst = 0.0
    for _ in range(40):
        g = (rng.standard_normal(64) * scale).astype(np.float32)
        tp.grad = torch.from_numpy(g.copy())
        topt.step()
        mopt((ms.Tensor(g),))
        worst = max(worst, float(np.abs(tp.detach().numpy() - mp.asnumpy()).max()))
    assert worst < 2e-6, worst
