"""nn.CrossEntropyLoss converts to MindSpore's own nn.CrossEntropyLoss (the runtime subclass that takes
torch's int64 labels), not a composition through a training wrapper: a generated matrix of where the
criterion is built (module level, a function, a Cell's __init__), how it is spelled (import forms) and
its arguments (positional weight, keywords, smoothing), run on int64 class labels and on probability
targets, in PyNative and in GRAPH_MODE (the criterion inside a Cell's construct), against torch.
"""

from __future__ import annotations

import itertools
import sys

import mindspore as ms
import numpy as np
import pytest
import torch

from torch2ms.convert import convert_source

_SPELLINGS = {
    "nn": ("import torch.nn as nn\n", "nn.CrossEntropyLoss"),
    "torch_nn": ("", "torch.nn.CrossEntropyLoss"),
    "from_import": ("from torch.nn import CrossEntropyLoss\n", "CrossEntropyLoss"),
    "modules_loss": ("", "torch.nn.modules.loss.CrossEntropyLoss"),
}
_ARGS = {
    "none": "",
    "weight_positional": "W",
    "reduction_sum": "reduction='sum'",
    "ignore": "ignore_index=1",
    "smoothing": "label_smoothing=0.15",
    "all": "weight=W, ignore_index=2, reduction='none', label_smoothing=0.1",
}
_WHERE = ("module", "function", "cell")
_TARGETS = {"int64": ((4, 5, 3), "idx"), "prob": ((4, 5), "prob")}


def _source(spelling: str, args: str, where: str) -> str:
    imp, name = _SPELLINGS[spelling]
    ctor = f"{name}({args.replace('W', 'torch.tensor(W)')})"
    head = f"import torch\n{imp}"
    if where == "module":
        return head + f"crit = {ctor}\nout = crit(torch.tensor(X), torch.tensor(Y))\n"
    if where == "function":
        return (
            head
            + f"\n\ndef f(x, y):\n    crit = {ctor}\n    return crit(x, y)\n\n\nout = f(torch.tensor(X), torch.tensor(Y))\n"
        )
    return head + (
        "\n\nclass M(torch.nn.Module):\n"
        f"    def __init__(self):\n        super().__init__()\n        self.crit = {ctor}\n\n"
        "    def forward(self, x, y):\n        return self.crit(x * 2.0, y)\n\n\n"
        "out = M()(torch.tensor(X), torch.tensor(Y))\n"
    )


def _inputs(target: str) -> dict:
    shape, kind = _TARGETS[target]
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "idx":
        y = rng.integers(0, shape[1], (shape[0], *shape[2:])).astype(np.int64)
    else:
        y = rng.random(shape).astype(np.float32)
        y /= y.sum(1, keepdims=True)
    return {"X": x, "Y": y, "W": (rng.random(shape[1]) + 0.5).astype(np.float32)}


@pytest.mark.parametrize(
    ("spelling", "args", "where", "target"),
    [
        c
        for c in itertools.product(_SPELLINGS, _ARGS, _WHERE, _TARGETS)
        if not (c[3] == "prob" and "ignore" in _ARGS[c[1]])
    ],
)
def test_cross_entropy_converted_matches_torch(spelling, args, where, target):
    src = _source(spelling, _ARGS[args], where)
    code = convert_source(src).code
    assert "WithLossCell" not in code and "NLLLoss" not in code and "import torch" not in code, code
    assert "CrossEntropyLoss(" in code and "from torch2ms.runtime import CrossEntropyLoss" in code, code
    t_ns = _inputs(target)
    exec(compile(src, "<torch>", "exec"), t_ns)
    m_ns = _inputs(target)
    exec(compile(code, "<converted>", "exec"), m_ns)
    np.testing.assert_allclose(m_ns["out"].asnumpy(), t_ns["out"].numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(
    ("args", "target"), [("none", "int64"), ("all", "int64"), ("none", "prob"), ("smoothing", "prob")]
)  # torch refuses ignore_index with probability targets
def test_cross_entropy_in_graph_mode(args, target, tmp_path, monkeypatch):
    # GRAPH_MODE compiles the Cell's construct and the criterion's (the int64 cast) from their source files
    import importlib.util

    src = _source("nn", _ARGS[args], "cell")
    code = convert_source(src).code
    call = "out = M()(ms.tensor(X), ms.tensor(Y))\n"
    assert call in code, code
    path = tmp_path / f"converted_ce_{args}_{target}.py"
    path.write_text(code.replace(call, ""), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, path.stem, mod)  # GRAPH_MODE resolves the construct's globals by module
    spec.loader.exec_module(mod)
    ns = _inputs(target)
    mod.W = ns["W"]
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        got = mod.M()(ms.tensor(ns["X"]), ms.tensor(ns["Y"])).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    t_ns = _inputs(target)
    exec(compile(src, "<torch>", "exec"), t_ns)
    np.testing.assert_allclose(got, t_ns["out"].numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize(("args", "target"), [("none", "int64"), ("all", "int64"), ("smoothing", "prob")])
def test_cross_entropy_gradient_matches_torch(args, target):
    # what training differentiates: the converted criterion's gradient with respect to the logits
    src = _source("nn", _ARGS[args], "module")
    code = convert_source(src).code.replace("out = crit(ms.tensor(X), ms.tensor(Y))\n", "")
    m_ns = _inputs(target)
    exec(compile(code, "<converted>", "exec"), m_ns)
    x = ms.tensor(m_ns["X"])
    got = ms.grad(lambda logits: m_ns["crit"](logits, ms.tensor(m_ns["Y"])).sum())(x).asnumpy()
    t_ns = _inputs(target)
    exec(compile(src.replace("out = crit(torch.tensor(X), torch.tensor(Y))\n", ""), "<torch>", "exec"), t_ns)
    tx = torch.tensor(t_ns["X"], requires_grad=True)
    t_ns["crit"](tx, torch.tensor(t_ns["Y"])).sum().backward()
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=2e-5, atol=2e-6)
