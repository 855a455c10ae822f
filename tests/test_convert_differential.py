"""R6–R9, R27: a torch module and its converted MindSpore module give the same numbers, in PyNative
and GRAPH_MODE, with the torch weights copied over through convert_state_dict."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

SOURCE = textwrap.dedent("""\
    from functools import partial

    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Head(nn.Sequential):
        def __init__(self, c, n):
            super().__init__(nn.Linear(c, c), nn.ReLU(), nn.Linear(c, n))


    class Net(nn.Module):
        def __init__(self, norm_layer=None):
            super().__init__()
            norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
            self.features = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False),  # R7: pad_mode, has_bias
                nn.BatchNorm2d(8),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            )
            self.blocks = nn.ModuleList([nn.Linear(32, 32) for _ in range(2)])
            # MindSpore's CellDict refuses SequentialCell values: the Sequential subclass is an attribute.
            self.heads = nn.ModuleDict({"main": nn.Linear(32, 32)})
            self.head = Head(32, 5)
            self.norm = norm_layer(32)
            self.act = nn.GELU()
            self.scale = nn.Parameter(torch.ones(1) * 0.5)
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 0.75)
                    nn.init.constant_(m.bias, 0.1)

        def forward(self, x):
            x = self.features(x)
            n = x.size(0)
            x = F.adaptive_avg_pool2d(x, 2).view(n, -1)
            for blk in self.blocks:
                x = blk(x)
            x.mul_(2).add_(1)
            x = x.clamp_(min=-3.0)
            with torch.no_grad():
                x = x.to(x.device)
            x = torch.cat([self.act(self.norm(x)), x], dim=1)[:, :32]
            return self.head(self.heads["main"](x)) * self.scale
    """)


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # GRAPH_MODE looks the module up to parse construct's source
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    import torch

    tmp = tmp_path_factory.mktemp("diff")
    (tmp / "torch_net.py").write_text(SOURCE)
    res = convert_source(SOURCE, "torch_net.py")
    assert res.error is None and not [c for c in res.changes if c.action == "not-converted"]
    assert "import torch" not in res.code
    (tmp / "ms_net.py").write_text(res.code)
    torch_mod = _import(tmp / "torch_net.py", "t2m_diff_torch_net")
    ms_mod = _import(tmp / "ms_net.py", "t2m_diff_ms_net")
    torch.manual_seed(0)
    yield torch_mod.Net().eval(), ms_mod.Net(), res.code
    for name in ("t2m_diff_torch_net", "t2m_diff_ms_net"):
        sys.modules.pop(name, None)


def _copy_weights(tnet, mnet) -> None:
    """torch weights → the MindSpore cell through the KB renames (what `torch2ms weights` does)."""
    from torch2ms.kb import load_kb
    from torch2ms.proof import copy_torch_weights

    copy_torch_weights(tnet, mnet, load_kb())


def test_r9_fresh_init_matches(nets):
    tnet, mnet, _ = nets
    ms_params = {n: p.asnumpy() for n, p in mnet.parameters_and_names()}
    assert np.allclose(ms_params["features.1.gamma"], tnet.features[1].weight.detach().numpy())
    assert np.allclose(ms_params["features.1.beta"], 0.1)
    assert np.allclose(ms_params["scale"], 0.5)


@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
def test_r27_converted_module_matches_torch(nets, mode):
    import mindspore as ms
    import torch

    tnet, mnet, _ = nets
    _copy_weights(tnet, mnet)
    mnet.set_train(False)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x)).numpy()
    ms.set_context(mode=getattr(ms, mode))
    try:
        got = mnet(ms.Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)
