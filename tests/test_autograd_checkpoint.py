"""Issue 24: gradient checkpointing inside forward, in PyNative and GRAPH_MODE.

A ``torch.autograd.Function`` whose backward only runs the forward's function again and differentiates it
(guided-diffusion's ``CheckpointFunction`` with ``*args``, torch's old reentrant ``CheckpointFunction``, a
Function with explicit inputs) computes the gradients of a plain call: it becomes a Cell whose construct is
the forward, with no bprop, and MindSpore differentiates the call. ``torch.utils.checkpoint.checkpoint`` /
``checkpoint_sequential`` are KB entries (``mindspore.recompute``). A generated matrix: each Function
spelling × the ways code reaches it (a user ``checkpoint(func, inputs, params, flag)`` helper with the flag on
and off, ``F.apply`` directly, ``F.apply`` kept in a name, a submodule as the function), plus the
torch.utils.checkpoint spellings; forward output and the gradients of the input and of every parameter
equal to torch's, in both modes.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import MODES, convert_pair, load_all, ms_mode, weights_by_converter
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

# Function spellings: the class source (its name is always F).
FUNCTIONS = {
    # guided-diffusion's nn.py: ctx attributes, *args split by length, autograd.grad over inputs + params
    "guided": """\
class F(th.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with th.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with th.enable_grad():
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
            output_tensors = ctx.run_function(*shallow_copies)
        input_grads = th.autograd.grad(
            output_tensors,
            ctx.input_tensors + ctx.input_params,
            output_grads,
            allow_unused=True,
        )
        del ctx.input_tensors
        del ctx.input_params
        del output_tensors
        return (None, None) + input_grads
""",
    # torch's old reentrant checkpoint: save_for_backward(*args), autograd.backward, the function called by its
    # parameter name in the forward
    "reentrant": """\
class F(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.save_for_backward(*args)
        with th.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        inputs = ctx.saved_tensors
        detached = tuple(inp.detach().requires_grad_(inp.requires_grad) for inp in inputs)
        with th.enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, th.Tensor):
            outputs = (outputs,)
        th.autograd.backward(outputs, args)
        grads = tuple(inp.grad for inp in detached)
        return (None, None) + grads
""",
    # explicit inputs, no *args: the function and two tensors
    "explicit": """\
class F(th.autograd.Function):
    @staticmethod
    def forward(ctx, fn, x, w):
        ctx.fn = fn
        ctx.save_for_backward(x, w)
        with th.no_grad():
            y = fn(x, w)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        x = x.detach().requires_grad_()
        w = w.detach().requires_grad_()
        with th.enable_grad():
            y = ctx.fn(x, w)
        gx, gw = th.autograd.grad(y, (x, w), grad)
        return None, gx, gw
""",
}

# How forward reaches the Function: (the expression of x, the Function spellings it fits).
CALLS = {
    "helper_on": ("checkpoint(self._forward, (x,), self.parameters(), True)", ("guided",)),
    "helper_off": ("checkpoint(self._forward, (x,), self.parameters(), False)", ("guided",)),
    "apply": ("F.apply(self._forward, 1, x, *self.parameters())", ("guided",)),
    "alias": ("ckpt(self._forward, 1, x, *self.parameters())", ("guided",)),
    "submodule": ("checkpoint(self.block, (x,), self.parameters(), True)", ("guided",)),
    "re_apply": ("F.apply(self._forward, True, x)", ("reentrant",)),
    "re_alias": ("ckpt(self._forward, True, x)", ("reentrant",)),
    "re_submodule": ("F.apply(self.block, True, x)", ("reentrant",)),
    "ex_apply": ("F.apply(mix, x, self.w)", ("explicit",)),
    "ex_alias": ("ckpt(mix, x, self.w)", ("explicit",)),
}
# torch.utils.checkpoint spellings (KB entries): the import line and the expression of x.
UTILS = {
    "checkpoint": (
        "import torch.utils.checkpoint",
        "torch.utils.checkpoint.checkpoint(self._forward, x, use_reentrant=False)",
    ),
    "checkpoint_from": (
        "from torch.utils.checkpoint import checkpoint as cp",
        "cp(self.block, x, use_reentrant=False)",
    ),
    "checkpoint_sequential": (
        "from torch.utils.checkpoint import checkpoint_sequential",
        "checkpoint_sequential(self.seq, 2, x, use_reentrant=False)",
    ),
}

SOURCE = """\
import torch
import torch as th
import torch.nn as nn
from torch.autograd import Function
{imports}


def checkpoint(func, inputs, params, flag):
    if flag:
        args = tuple(inputs) + tuple(params)
        return F.apply(func, len(inputs), *args)
    else:
        return func(*inputs)


def mix(x, w):
    return torch.tanh(x @ w) + x


{function}

ckpt = F.apply


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
        self.w = nn.Parameter(torch.randn(4, 4) * 0.5)

    def _forward(self, x):
        return torch.tanh(self.lin(x)) * 2.0 + x

    def forward(self, x):
        h = {call}
        return h * h + self.w.sum()
"""

# A Function spelling for torch.utils.checkpoint cases: none is defined, F only names a trivial one.
PLAIN = """\
class F(th.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g
"""


def _grads_torch(tnet, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    torch = require_module("torch")
    tx = torch.tensor(x, requires_grad=True)
    out = tnet(tx)
    (out * torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    grads = {
        n: (p.grad.numpy() if p.grad is not None else np.zeros(p.shape, np.float32)) for n, p in tnet.named_parameters()
    }
    return out.detach().numpy(), tx.grad.numpy(), grads


def _grads_ms(mnet, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    import mindspore as ms

    n = int(np.prod(mnet(ms.Tensor(x)).shape))

    class Loss(ms.nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.k = ms.Tensor(np.arange(n, dtype=np.float32))

        def construct(self, x):
            out = self.net(x)
            return (out * self.k.reshape(out.shape)).sum(), out

    params = mnet.trainable_params()
    fn = ms.value_and_grad(Loss(mnet), grad_position=0, weights=params, has_aux=True)
    (_, out), (gx, gws) = fn(ms.Tensor(x))
    names = {p.name.removeprefix("net."): g.asnumpy() for p, g in zip(params, gws)}
    return out.asnumpy(), gx.asnumpy(), names


def _check(tmp_path, source: str, marker: str) -> None:
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert marker in code, code
    torch = require_module("torch")
    torch.manual_seed(0)
    tnet = tmod.Net()
    ckpt = weights_by_converter(tnet, tmp_path)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    t_out, t_gx, t_gw = _grads_torch(tnet, x)
    assert np.abs(t_gx).sum() > 0
    for mode in MODES:
        with ms_mode(mode):
            mnet = mmod.Net()
            load_all(mnet, ckpt)
            m_out, m_gx, m_gw = _grads_ms(mnet, x)
        np.testing.assert_allclose(m_out, t_out, rtol=1e-5, atol=1e-5, err_msg=f"{mode}: output")
        np.testing.assert_allclose(m_gx, t_gx, rtol=1e-5, atol=1e-5, err_msg=f"{mode}: gradient of x")
        assert set(m_gw) == set(t_gw), (sorted(m_gw), sorted(t_gw))
        for name, want in t_gw.items():
            np.testing.assert_allclose(m_gw[name], want, rtol=1e-5, atol=1e-5, err_msg=f"{mode}: gradient of {name}")


CASES = [(fn, call) for call, (_expr, fits) in CALLS.items() for fn in fits]


@pytest.mark.parametrize(("function", "call"), CASES)
def test_checkpoint_function_matches_torch(tmp_path, function, call):
    source = SOURCE.format(imports="", function=FUNCTIONS[function], call=CALLS[call][0])
    _check(tmp_path, source, "class F(nn.Cell):")


@pytest.mark.parametrize("spelling", UTILS)
def test_torch_utils_checkpoint_matches_torch(tmp_path, spelling):
    imports, expr = UTILS[spelling]
    source = SOURCE.format(imports=imports, function=PLAIN, call=expr)
    _check(tmp_path, source, "recompute(")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_checkpoint_function_is_a_cell_without_bprop(function):
    source = SOURCE.format(imports="", function=FUNCTIONS[function], call="x")
    res = convert_source(source)
    code = res.code
    assert res.error is None
    cls = code[code.index("class F(") : code.index("ckpt = ")]
    assert "class F(nn.Cell):" in cls and "def construct(self, " in cls, cls
    assert "def bprop" not in cls and "def backward" not in cls and "torch." not in cls and "ctx." not in cls, cls
    assert "gradient checkpointing" in cls  # the mark says why the backward is gone
    assert not [c for c in res.changes if c.action == "not-converted"], res.changes
    assert "import torch" not in code


def test_a_function_with_a_real_backward_is_not_taken_for_a_checkpoint():
    """A backward that differentiates something else than the stored function (or scales its gradients
    without calling it again) keeps its own gradient rule."""
    source = """\
import torch


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, x):
        ctx.fn = fn
        ctx.save_for_backward(x)
        return fn(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return None, g * 3.0
"""
    code = convert_source(source).code
    assert "def bprop(self, fn, x, out, g):" in code and "gradient checkpointing" not in code
