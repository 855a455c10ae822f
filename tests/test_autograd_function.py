"""R12: torch.autograd.Function subclasses become MindSpore Cells with bprop.

Before/after checks of the rewrite, and differential gradient tests: a torch module using three
custom Functions and its converted MindSpore module give the same forward output and the same
input (and weight) gradients, in PyNative and in GRAPH_MODE.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from torch2ms.convert import convert_source

MARK = "# torch2ms: not converted — torch.autograd.Function"

# Three custom Functions: a straight-through round (identity backward), a clipped/scaled ReLU
# gradient with non-tensor ctx attributes and a default argument, a two-input product whose custom
# gradients need save_for_backward and needs_input_grad.
SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    from torch.autograd import Function
    from torch.autograd.function import once_differentiable


    class RoundSTE(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.round(x)

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_output):
            return grad_output


    class ClippedReLU(Function):
        @staticmethod
        def forward(ctx, x, limit, scale=2.0):
            ctx.save_for_backward(x)
            ctx.limit = limit
            ctx.scale = scale
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            grad = grad_output * (x > 0).float() * ctx.scale
            return grad.clamp(-ctx.limit, ctx.limit), None, None


    class WeightedMul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad_out):
            x, y = ctx.saved_tensors
            gx = gy = None
            if ctx.needs_input_grad[0]:
                gx = 2.0 * grad_out * y
            if ctx.needs_input_grad[1]:
                gy = 3.0 * grad_out * x
            return gx, gy


    clipped_relu = ClippedReLU.apply


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 5)

        def forward(self, x, y):
            h = RoundSTE.apply(self.fc(x) * 3.0)
            h = clipped_relu(h, 1.5, 2.0)
            h = ClippedReLU.apply(h - 1.0, 0.75)
            return WeightedMul.apply(h, y).sum()
    """)


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # GRAPH_MODE looks the module up to parse construct's source
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _without_comments(code: str) -> str:
    return "\n".join(line for line in code.splitlines() if not line.strip().startswith("#"))


# ---- before / after ------------------------------------------------------------------------------


def test_r12_function_becomes_cell_with_bprop():
    res = convert_source(SOURCE)
    assert res.error is None
    code = res.code
    body = _without_comments(code)
    assert "torch" not in body and "ctx" not in body.replace("ctx_", "")
    assert "class RoundSTE(nn.Cell):" in code and "class ClippedReLU(nn.Cell):" in code
    assert "@staticmethod" not in code and "once_differentiable" not in code
    assert "def construct(self, x):\n        return ops.round(x)" in code
    assert "def bprop(self, x, out, grad_output):\n        return (grad_output,)" in code
    # save_for_backward / ctx attributes: recomputed from the inputs inside bprop.
    assert "def construct(self, x, limit, scale=2.0):\n        return x.clamp(min=0)" in code
    assert "def bprop(self, x, limit, scale, out, grad_output):" in code
    assert "saved = (x,)\n        ctx_limit = limit\n        ctx_scale = scale" in code
    assert "grad.clamp(-ctx_limit, ctx_limit), None, None" in code
    assert "if True:\n            gx = 2.0 * grad_out * y" in code
    # apply: an instance call, omitted defaults passed (GRAPH_MODE needs bprop's arity to match).
    assert "clipped_relu = ClippedReLU()" in code
    assert "h = RoundSTE()(self.fc(x) * 3.0)" in code
    assert "h = ClippedReLU()(h - 1.0, 0.75, 2.0)" in code
    assert "WeightedMul()(h, y).sum()" in code
    assert not [c for c in res.changes if c.action == "not-converted"]


def test_r12_extra_none_gradients_trimmed_and_single_wrapped():
    src = textwrap.dedent("""\
        import torch

        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.k = k
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None, None
    """)
    code = convert_source(src).code
    assert "def bprop(self, x, k, out, g):" in code
    assert "ctx_k = k" in code and "return g * ctx_k, None\n" in code  # torch's surplus None dropped


def test_r12_setup_context_style():
    src = textwrap.dedent("""\
        import torch

        class Cube(torch.autograd.Function):
            @staticmethod
            def forward(x, power=3):
                return x ** power

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, power = inputs
                ctx.save_for_backward(x)
                ctx.power = power

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * ctx.power * x ** (ctx.power - 1), None

        def cube(x):
            return Cube.apply(x)
    """)
    res = convert_source(src)
    code = res.code
    assert "setup_context" not in code and "torch" not in _without_comments(code)
    assert "def construct(self, x, power=3):" in code
    assert "def bprop(self, x, power, out, grad):" in code
    assert "inputs = (x, power)\n        output = out\n        x, power = inputs\n        saved = (x,)" in code
    assert "return Cube()(x, 3)" in code


def test_r12_mark_dirty_kept_and_marked():
    src = textwrap.dedent("""\
        import torch

        class InplaceDouble(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x.mul_(2)

            @staticmethod
            def backward(ctx, g):
                return g * 2

        def double(x):
            return InplaceDouble.apply(x)
    """)
    res = convert_source(src)
    code = res.code
    assert f"{MARK}: ctx.mark_dirty" in code
    assert "class InplaceDouble(torch.autograd.Function):" in code  # kept as torch, never dropped
    assert "import torch" in code and "InplaceDouble.apply(x)" in code
    assert [c.api for c in res.changes if c.action == "not-converted"] == ["torch.autograd.Function"]
    assert not [c for c in res.changes if c.api == "torch.autograd.Function" and c.action == "converted"]


def test_r12_higher_order_backward_kept_and_marked():
    src = textwrap.dedent("""\
        import torch

        class Sq(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                with torch.enable_grad():
                    y = x.detach().requires_grad_()
                    (gx,) = torch.autograd.grad(y * y, y, g, create_graph=True)
                return gx
    """)
    res = convert_source(src)
    assert f"{MARK}: backward builds a differentiable graph" in res.code
    assert "class Sq(torch.autograd.Function):" in res.code


def test_r12_kb_entry_describes_the_conversion():
    from torch2ms.kb import load_kb

    entry = load_kb().get("torch.autograd.Function")
    assert entry.status == "composite" and entry.ms == "mindspore.nn.Cell" and "bprop" in entry.note


# ---- differential: gradients against torch autograd --------------------------------------------


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    import torch

    tmp = tmp_path_factory.mktemp("autograd_fn")
    (tmp / "torch_fn_net.py").write_text(SOURCE)
    res = convert_source(SOURCE, "torch_fn_net.py")
    (tmp / "ms_fn_net.py").write_text(res.code)
    tmod = _import(tmp / "torch_fn_net.py", "t2m_agf_torch_net")
    mmod = _import(tmp / "ms_fn_net.py", "t2m_agf_ms_net")
    torch.manual_seed(0)
    yield tmod, mmod
    for name in ("t2m_agf_torch_net", "t2m_agf_ms_net"):
        sys.modules.pop(name, None)


def _inputs():
    rng = np.random.default_rng(12)
    return rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)


def _torch_grads(tmod, x, y):
    import torch

    tnet = tmod.Net()
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    loss = tnet(tx, ty)
    loss.backward()
    return tnet, loss.item(), tx.grad.numpy(), ty.grad.numpy(), tnet.fc.weight.grad.numpy(), tnet.fc.bias.grad.numpy()


@pytest.mark.differential
@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
def test_r12_custom_gradients_match_torch(nets, mode):
    import mindspore as ms

    tmod, mmod = nets
    x, y = _inputs()
    tnet, t_loss, t_gx, t_gy, t_gw, t_gb = _torch_grads(tmod, x, y)
    assert np.abs(t_gx).sum() > 0 and np.abs(t_gy).sum() > 0  # the custom backwards are exercised
    mnet = mmod.Net()
    mnet.fc.weight.set_data(ms.Tensor(tnet.fc.weight.detach().numpy()))
    mnet.fc.bias.set_data(ms.Tensor(tnet.fc.bias.detach().numpy()))
    ms.set_context(mode=getattr(ms, mode))
    try:
        grad_fn = ms.value_and_grad(mnet, grad_position=(0, 1), weights=mnet.trainable_params())
        m_loss, ((m_gx, m_gy), (m_gw, m_gb)) = grad_fn(ms.Tensor(x), ms.Tensor(y))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert abs(float(m_loss.asnumpy()) - t_loss) <= 1e-5 * max(1.0, abs(t_loss))
    for name, got, want in (("x", m_gx, t_gx), ("y", m_gy, t_gy), ("fc.weight", m_gw, t_gw), ("fc.bias", m_gb, t_gb)):
        np.testing.assert_allclose(got.asnumpy(), want, atol=1e-6, rtol=1e-6, err_msg=f"gradient of {name}")


def _wrappers(mmod):
    """One small Cell per Function (GRAPH_MODE compiles Cells; lambdas do not parse)."""
    import mindspore as ms

    class RoundSTE(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.f = mmod.RoundSTE()

        def construct(self, u, v):
            return self.f(u * 1.7).sum()

    class ClippedReLU(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.f = mmod.ClippedReLU()

        def construct(self, u, v):
            return (self.f(u, 0.5, 3.0) * v).sum()

    class WeightedMul(ms.nn.Cell):
        def __init__(self):
            super().__init__()
            self.f = mmod.WeightedMul()

        def construct(self, u, v):
            return self.f(u, v).sum()

    return {"RoundSTE": RoundSTE, "ClippedReLU": ClippedReLU, "WeightedMul": WeightedMul}


_TORCH_BODIES = {
    "RoundSTE": lambda f, u, v: f(u * 1.7).sum(),
    "ClippedReLU": lambda f, u, v: (f(u, 0.5, 3.0) * v).sum(),
    "WeightedMul": lambda f, u, v: f(u, v).sum(),
}


@pytest.mark.differential
@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
@pytest.mark.parametrize("name", sorted(_TORCH_BODIES))
def test_r12_each_function_alone_matches_torch(nets, mode, name):
    """Each converted Function on its own, through mindspore.grad of a Cell that calls it."""
    import mindspore as ms
    import torch

    tmod, mmod = nets
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 4)) * 2).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    tu, tv = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    t_out = _TORCH_BODIES[name](getattr(tmod, name).apply, tu, tv)
    t_out.backward()
    cell = _wrappers(mmod)[name]()
    ms.set_context(mode=getattr(ms, mode))
    try:
        m_grads = ms.grad(cell, grad_position=(0, 1))(ms.Tensor(a), ms.Tensor(b))
        m_out = cell(ms.Tensor(a), ms.Tensor(b))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert abs(float(m_out.asnumpy()) - t_out.item()) <= 1e-5
    t_gv = tv.grad.numpy() if tv.grad is not None else np.zeros_like(b)  # RoundSTE does not use v
    np.testing.assert_allclose(m_grads[0].asnumpy(), tu.grad.numpy(), atol=1e-6, rtol=1e-6, err_msg="grad u")
    np.testing.assert_allclose(m_grads[1].asnumpy(), t_gv, atol=1e-6, rtol=1e-6, err_msg="grad v")


def test_r12_apply_of_an_imported_function():
    src = textwrap.dedent("""\
        import torch.nn as nn
        from .ops import RoundSTE

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                self.fc.apply(lambda m: None)
                return RoundSTE.apply(self.fc(x))
    """)
    res = convert_source(src, local_roots=frozenset({"pkg"}))
    assert "return RoundSTE()(self.fc(x))" in res.code
    assert "self.fc.apply(lambda m: None)" in res.code  # Module.apply on an instance is not a Function
    assert [c.action for c in res.changes if c.api == "torch.autograd.Function.apply"] == ["review"]


MULTI = textwrap.dedent('''\
    import torch


    class SplitScale(torch.autograd.Function):
        """Two outputs: backward gets one gradient per output."""

        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k, x + 1

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * ctx.k * 10 + gb, None


    class Cube(torch.autograd.Function):
        """New style: forward without ctx, setup_context fills it."""

        @staticmethod
        def forward(x, power=3):
            return x ** power

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.save_for_backward(x)
            ctx.power = power

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.power * x ** (ctx.power - 1) * 2, None


    class Net(torch.nn.Module):
        def forward(self, x):
            a, b = SplitScale.apply(x, 2.0)
            return (a * b).sum() + Cube.apply(x).sum()
    ''')


@pytest.mark.differential
def test_r12_multi_output_and_setup_context_match_torch(tmp_path):
    import mindspore as ms
    import torch

    res = convert_source(MULTI, "multi.py")
    assert "ga, gb = dout" in res.code and "+ Cube()(x, 3).sum()" in res.code
    (tmp_path / "t_multi.py").write_text(MULTI)
    (tmp_path / "m_multi.py").write_text(res.code)
    tmod = _import(tmp_path / "t_multi.py", "t2m_agf_t_multi")
    mmod = _import(tmp_path / "m_multi.py", "t2m_agf_m_multi")
    try:
        x = np.random.default_rng(5).standard_normal((6,)).astype(np.float32)
        tx = torch.tensor(x, requires_grad=True)
        t_out = tmod.Net()(tx)
        t_out.backward()
        for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
            ms.set_context(mode=getattr(ms, mode))
            try:
                m_out, m_grad = ms.value_and_grad(mmod.Net())(ms.Tensor(x))
            finally:
                ms.set_context(mode=ms.PYNATIVE_MODE)
            assert abs(float(m_out.asnumpy()) - t_out.item()) <= 1e-5 * max(1.0, abs(t_out.item())), mode
            np.testing.assert_allclose(m_grad.asnumpy(), tx.grad.numpy(), atol=1e-6, rtol=1e-6, err_msg=mode)
    finally:
        for name in ("t2m_agf_t_multi", "t2m_agf_m_multi"):
            sys.modules.pop(name, None)


def test_r12_unreplayable_forward_kept_with_its_earlier_call_sites():
    src = textwrap.dedent("""\
        import torch

        def use(x):
            return Gate.apply(x)

        class Gate(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                if x.sum() > 0:
                    return x
                return -x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.sign()
    """)
    res = convert_source(src)
    assert f"{MARK}: the forward returns from inside a block" in res.code
    assert "return Gate.apply(x)" in res.code and "class Gate(torch.autograd.Function):" in res.code
