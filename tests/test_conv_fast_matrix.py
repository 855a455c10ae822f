"""Issue 22 class 12: the runtime's Conv2d / Conv1d/2d/3dTranspose (MindSpore's Cells computed on CPU as
im2col/col2im + MatMul, or as a convolution of the zero-inserted input) equal torch — a generated matrix.

MindSpore 2.10's CPU Conv2D and Conv2DTranspose kernels run at tens of MFLOP/s at a DCGAN's widths
(bench/conv_transpose_bench.py), so ``torch2ms convert --cpu-fast-conv`` maps torch's layers to these
Cells (by default they stay MindSpore's own). Each row writes a torch net with one layer spelled as users
write it (keywords, tuples, ``padding='same'``), converts it with the option on, carries
the weights over with ``torch2ms weights`` and compares, in PyNative and in GRAPH_MODE: the output, the
input gradient and the weight (and bias) gradients against torch's autograd for one random cotangent.

Axes: dims (1, 2, 3), stride, padding, output_padding, dilation, groups, bias. Rows torch or the converter
refuses are not generated (output_padding >= max(stride, dilation); ConvTranspose1d output_padding, and
a 2-D output_padding above padding, have no MindSpore form; Conv3dTranspose takes no depth dilation).
``make test`` runs a fixed slice that covers every value of every axis; ``TORCH2MS_FULL_CONV_MATRIX=1``
runs all rows.
"""

from __future__ import annotations

import itertools
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rc_models_support import MODES, convert_pair, load_all, ms_mode, relative_error, weights_by_converter
from requires_support import require_module

pytestmark = pytest.mark.differential
require_module("torch")
require_module("mindspore")

TOL = 1e-5
_SHAPES = {1: (2, 4, 5), 2: (2, 4, 5, 4), 3: (1, 4, 3, 4, 3)}


def _transposed_rows() -> list[tuple[Any, ...]]:
    rows = []
    for dims, stride, padding, out_pad, dilation, groups, bias in itertools.product(
        (1, 2, 3), (1, 2, 3), (0, 1, 2), (0, 1), (1, 2), (1, 2), (True, False)
    ):
        if out_pad >= max(stride, dilation) or (dims == 1 and out_pad) or (dims == 3 and dilation > 1):
            continue
        if dims == 2 and out_pad > padding:
            continue
        rows.append(("ConvTranspose", dims, stride, padding, out_pad, dilation, groups, bias))
    return rows


def _conv_rows() -> list[tuple[Any, ...]]:
    rows = []
    for stride, padding, dilation, groups, bias in itertools.product(
        (1, 2), (0, 1, (1, 2), "'same'", "'valid'"), (1, 2), (1, 2), (True, False)
    ):
        if padding == "'same'" and stride > 1:
            continue  # torch refuses
        rows.append(("Conv", 2, stride, padding, 0, dilation, groups, bias))
    return rows


def _slice(rows: list[tuple[Any, ...]], n: int, seed: int) -> list[tuple[Any, ...]]:
    """A fixed sample of ``n`` rows in which every value of every axis appears (greedy cover first)."""
    rng = random.Random(seed)
    rows = sorted(rows, key=repr)
    rng.shuffle(rows)
    chosen: list[tuple[Any, ...]] = []
    seen: set[tuple[int, Any]] = set()
    for row in rows:
        new = {(i, v) for i, v in enumerate(row)} - seen
        if new:
            chosen.append(row)
            seen |= new
    for row in rows:
        if len(chosen) >= n:
            break
        if row not in chosen:
            chosen.append(row)
    return chosen


FULL = bool(os.environ.get("TORCH2MS_FULL_CONV_MATRIX"))
ROWS = _transposed_rows() + _conv_rows() if FULL else _slice(_transposed_rows(), 16, 22) + _slice(_conv_rows(), 8, 12)


def _source(row: tuple[Any, ...]) -> str:
    kind, dims, stride, padding, out_pad, dilation, groups, bias = row
    spelled = f"padding={padding}" + (f", output_padding={out_pad}" if out_pad else "")
    layer = f"nn.{kind}{dims}d(4, 6, 3, stride={stride}, {spelled}, dilation={dilation}, groups={groups}, bias={bias})"
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        f"        super().__init__()\n        self.layer = {layer}\n\n    def forward(self, x):\n        return self.layer(x)\n"
    )


def _torch_side(tnet: Any, x: np.ndarray, cot_seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    import torch

    xt = torch.tensor(x, requires_grad=True)
    out = tnet(xt)
    cot = np.random.default_rng(cot_seed).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * torch.from_numpy(cot)).sum().backward()
    grads = [xt.grad.numpy()] + [p.grad.numpy() for p in tnet.parameters()]
    return [out.detach().numpy()] + grads, cot


def _ms_side(mnet: Any, x: np.ndarray, cot: np.ndarray) -> list[np.ndarray]:
    import mindspore as ms
    from mindspore import nn

    class Loss(nn.Cell):
        def __init__(self, net: Any, cot: Any) -> None:
            super().__init__()
            self.net, self.cot = net, cot

        def construct(self, inp: Any) -> Any:
            return (self.net(inp) * self.cot).sum()

    params = mnet.trainable_params()
    out = mnet(ms.Tensor(x))
    gx, gw = ms.grad(Loss(mnet, ms.Tensor(cot)), grad_position=0, weights=params)(ms.Tensor(x))
    return [out.asnumpy(), gx.asnumpy()] + [g.asnumpy() for g in gw]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: "-".join(str(v).strip("'") for v in r))
def test_fast_conv_equals_torch_forward_and_gradients(row: tuple[Any, ...], tmp_path: Path) -> None:
    import torch

    from torch2ms.runtime import convolution

    torch.manual_seed(0)
    tmod, mmod, code = convert_pair(_source(row), tmp_path, cpu_fast_conv=True)
    kind, dims = row[0], row[1]
    cls = f"Conv{dims}dTranspose" if kind == "ConvTranspose" else "Conv2d"
    assert f"= {cls}(" in code, code  # the runtime's layer, not mindspore.nn's
    tnet = tmod.Net()
    shape = (2, 4, 8, 7) if kind == "Conv" else _SHAPES[dims]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    expected, cot = _torch_side(tnet, x, 2)
    ckpt = weights_by_converter(tnet, tmp_path)
    for mode in MODES:
        with ms_mode(mode):
            mnet = mmod.Net()
            load_all(mnet, ckpt)
            assert isinstance(mnet.layer, getattr(convolution, cls))
            got = _ms_side(mnet, x, cot)
        assert len(got) == len(expected)
        for name, e, g in zip(["output", "d_input", "d_weight", "d_bias"], expected, got):
            err = relative_error(e, g.reshape(e.shape))
            assert err <= TOL, (mode, name, err, code)


def test_the_fast_forward_is_what_runs_on_cpu() -> None:
    """The matrix proves the CPU path: each layer takes it there (MindSpore's own forward elsewhere)."""
    from torch2ms.runtime.convolution import Conv1dTranspose, Conv2d, Conv2dTranspose, Conv3dTranspose

    assert Conv2d(4, 6, 3)._fast and not Conv2d(4, 6, 3, group=2)._fast  # grouped: MindSpore's forward
    for cls in (Conv1dTranspose, Conv2dTranspose, Conv3dTranspose):
        assert cls(4, 6, 3)._fast


_LAYERS = (
    "        self.a = nn.Conv2d(3, 8, 3, padding=1)\n"
    "        self.b = nn.ConvTranspose1d(3, 8, 3)\n"
    "        self.c = nn.ConvTranspose2d(3, 8, 3, stride=2)\n"
    "        self.d = nn.ConvTranspose3d(3, 8, 3)\n"
)
_NET = (
    "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n" + _LAYERS
)


def test_native_layers_by_default_runtime_layers_with_the_option(tmp_path: Path) -> None:
    """Converted code keeps MindSpore's own layers (what Ascend runs); --cpu-fast-conv opts in to the runtime's."""
    from torch2ms.convert import convert_source, convert_tree

    native = convert_source(_NET, "net.py").code
    for cls in ("nn.Conv2d(", "nn.Conv1dTranspose(", "nn.Conv2dTranspose(", "nn.Conv3dTranspose("):
        assert cls in native, native
    assert "torch2ms" not in native, native
    fast = convert_source(_NET, "net.py", cpu_fast_conv=True).code
    assert "from torch2ms.runtime import Conv1dTranspose, Conv2d, Conv2dTranspose, Conv3dTranspose" in fast, fast
    for cls in ("Conv2d(", "Conv1dTranspose(", "Conv2dTranspose(", "Conv3dTranspose("):
        assert f"= {cls}" in fast and f"nn.{cls}" not in fast, fast
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "net.py").write_text(_NET)
    for option, expected in ((False, "self.a = nn.Conv2d("), (True, "self.a = Conv2d(")):
        out = tmp_path / f"out{int(option)}"
        convert_tree(tmp_path / "src", out, jobs=1, cpu_fast_conv=option)
        assert expected in (out / "net.py").read_text()
    assert (out / "torch2ms_runtime").is_dir()  # vendored with the option: runs without torch2ms


def test_cli_cpu_fast_conv_option(tmp_path: Path) -> None:
    from torch2ms.cli import main

    (tmp_path / "net.py").write_text(_NET)
    assert main(["convert", str(tmp_path / "net.py"), "-o", str(tmp_path / "out"), "--cpu-fast-conv"]) == 0
    assert "self.a = Conv2d(" in (tmp_path / "out" / "net.py").read_text()
