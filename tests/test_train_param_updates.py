"""Two training-idiom classes of issue 22 §2 (tests/fuzz/train_idioms.py found them):

* data-inplace-update-after-step: ``for p in D.parameters(): p.data.clamp_(-c, c)`` after ``opt.step()``
  (a WGAN's weight clipping; decays, copies, fills; ``p.clamp_`` / ``p *= k`` under ``no_grad``) did
  nothing on MindSpore: the in-place rewrite ``p.data = p.data.clamp(...)`` changes the Python object,
  which the ``@ms.jit`` step (and GRAPH_MODE) does not see, and ``get_parameters()`` also clamped
  BatchNorm's moving statistics (buffers in torch). Now ``torch2ms.runtime.assign_data(p, ...)``
  (``ops.assign``) over ``torch2ms.runtime.torch_parameters(model)``;
* grad-set-to-none-loop: ``for p in model.parameters(): p.grad = None`` in place of ``zero_grad()``
  became a loop over ``zip(weights, None)`` (TypeError); now the gradient tuple's reset alone.

The same ``.data`` updates outside a loop (weight initialisation in a function or a constructor) take
``assign_data`` too; inside ``forward`` (compiled) they stay a rebinding.

Each class: a generated matrix of spellings × how the parameters are iterated × where the loop lives,
every case converted (one tree) and checked; a covering slice (tests/matrix_support.py) trained side by
side with the real compare-train, PyNative and GRAPH_MODE (SAME).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from matrix_support import converted_trains_like_torch, covering
from requires_support import require_module

from torch2ms.convert import convert_tree

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 8)
        self.bn = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc2(torch.tanh(self.bn(self.fc1(x))))


torch.manual_seed(0)
x = torch.randn(32, 3)
y = torch.randn(32, 1)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
"""

# ---- class data-inplace-update-after-step -------------------------------------------------------------------
UPDATES = {  # name -> (under no_grad, the statement on p)
    "data_clamp_": (False, "p.data.clamp_(-0.3, 0.3)"),
    "data_mul_": (False, "p.data.mul_(0.98)"),
    "data_add_": (False, "p.data.add_(-0.01 * p.data)"),
    "data_sub_": (False, "p.data.sub_(0.01 * p.data)"),
    "data_copy_": (False, "p.data.copy_(p.data.clamp(-0.3, 0.3))"),
    "data_fill_": (False, "p.data.fill_(0.05)"),
    "no_grad_clamp_": (True, "p.clamp_(-0.3, 0.3)"),
    "no_grad_mul_": (True, "p.mul_(0.98)"),
    "no_grad_isub": (True, "p -= 0.01 * p"),
    "no_grad_imul": (True, "p *= 0.98"),
}
ITERATE = {  # name -> (lines before, the loop header(s)); the loop variable is p
    "parameters": ([], ["for p in model.parameters():"]),
    "named_parameters": ([], ["for name, p in model.named_parameters():"]),
    "list": (["params = [model.fc1.weight, model.fc2.weight, model.fc2.bias]"], ["for p in params:"]),
    "several": ([], ["for m in (model.fc1, model.fc2):", "    for p in m.parameters():"]),
}
PLACES = ["module", "function", "method"]
MODES = ["pynative", "graph"]


def _update_loop(update: str, iterate: str) -> tuple[list[str], list[str]]:
    no_grad, line = UPDATES[update]
    before, heads = ITERATE[iterate]
    loop = [*heads, " " * (4 * len(heads)) + line]
    if no_grad:
        loop = ["with torch.no_grad():", *("    " + s for s in loop)]
    return before, loop


def _placed(step: list[str], before: list[str], place: str) -> str:
    """The training loop (4 batches × 2 epochs) with `step` as its body, in the scope `place` names."""
    loop = ["for epoch in range(2):", "    for i in range(0, 32, 8):", *("        " + s for s in step)]
    if place == "function":
        fn = ["def train(model, optimizer):", *("    " + s for s in [*before, *loop])]
        return "\n".join([*fn, "", "", "train(model, optimizer)"]) + "\n"
    if place == "method":
        own = [s.replace("model", "self.model").replace("optimizer", "self.optimizer") for s in [*before, *loop]]
        cls = [
            "class Trainer:",
            "    def __init__(self, model, optimizer):",
            "        self.model, self.optimizer = model, optimizer",
            "",
            "    def fit(self):",
            *("        " + s for s in own),
        ]
        return "\n".join([*cls, "", "", "Trainer(model, optimizer).fit()"]) + "\n"
    return "\n".join([*before, *loop]) + "\n"


def clamp_script(update: str, iterate: str, place: str) -> str:
    before, loop = _update_loop(update, iterate)
    step = [
        "optimizer.zero_grad()",
        "loss = ((model(x[i:i + 8]) - y[i:i + 8]) ** 2).mean()",
        "loss.backward()",
        "optimizer.step()",
        *loop,
    ]
    return NET + "\n" + _placed(step, before, place)


# ---- class grad-set-to-none-loop -------------------------------------------------------------------------------
CLEARS = {  # name -> the loop body on p (the clear)
    "grad_none": ["p.grad = None"],
    "guarded_zero_": ["if p.grad is not None:", "    p.grad.zero_()"],
    "guarded_data_zero_": ["if p.grad is not None:", "    p.grad.data.zero_()"],
    "guarded_none": ["if p.grad is not None:", "    p.grad = None"],
}
# (a clear loop over a list or over sub-modules' parameters is not converted yet: "the loop assigns to .grad")
CLEAR_ITERATE = ["parameters", "named_parameters"]
WHEN = ["before_forward", "after_step"]


def clear_script(clear: str, iterate: str, place: str, when: str) -> str:
    _, heads = ITERATE[iterate]
    loop = [*heads, *(" " * (4 * len(heads)) + s for s in CLEARS[clear])]
    fwd = ["loss = ((model(x[i:i + 8]) - y[i:i + 8]) ** 2).mean()", "loss.backward()", "optimizer.step()"]
    step = [*loop, *fwd] if when == "before_forward" else [*fwd, *loop]
    return NET + "\n" + _placed(step, [], place)


UPDATE_CASES = list(itertools.product(UPDATES, ITERATE, PLACES))
CLEAR_CASES = list(itertools.product(CLEARS, CLEAR_ITERATE, PLACES, WHEN))


def _name(case: tuple[str, ...]) -> str:
    return "-".join(case)


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, str]:
    """Every case of both matrices converted as one tree: case name -> the converted script."""
    root = tmp_path_factory.mktemp("param-updates")
    (root / "src").mkdir()
    scripts = {_name(c): clamp_script(*c) for c in UPDATE_CASES}
    scripts |= {_name(c): clear_script(*c) for c in CLEAR_CASES}
    for name, text in scripts.items():
        (root / "src" / f"{name.replace('-', '__')}.py").write_text(text)
    convert_tree(str(root / "src"), str(root / "out"))
    return {name: (root / "out" / f"{name.replace('-', '__')}.py").read_text() for name in scripts}


@pytest.mark.parametrize("case", UPDATE_CASES, ids=_name)
def test_inplace_update_after_step_assigns_the_parameter(converted, case):
    update, iterate, _place = case
    out = converted[_name(case)]
    ast.parse(out)
    assert "not converted" not in out and "port by hand" not in out, out
    assert "assign_data(p, " in out, out  # ops.assign: the jit step and GRAPH_MODE see it
    assert "p.data = " not in out and "p = p." not in out and "p.set_data(" not in out, out
    assert ".clamp_(" not in out and ".mul_(" not in out and ".copy_(" not in out and ".fill_(" not in out, out
    if iterate in ("parameters", "named_parameters", "several"):
        # torch's parameters(): without BatchNorm's moving statistics, which get_parameters() holds
        assert "torch_parameters(" in out, out
        assert ("named=True" in out) == (iterate == "named_parameters"), out


@pytest.mark.parametrize("case", CLEAR_CASES, ids=_name)
def test_grad_set_to_none_loop_is_the_gradient_reset(converted, case):
    out = converted[_name(case)]
    ast.parse(out)
    assert "not converted" not in out and "port by hand" not in out, out
    assert "zip(" not in out, out  # a loop over zip(weights, None) raised TypeError
    assert "= None  # torch2ms: for " in out, out  # the loop is the reset of the gradient tuple(s)


def _train(tmp_path: Path, source: str, mode: str, steps: int = 6):
    require_module("torch")
    require_module("mindspore")
    rep = converted_trains_like_torch(tmp_path, source, mode, steps)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == steps
    return rep


TRAINED_UPDATES = covering([(*c, m) for c in UPDATE_CASES for m in MODES])
TRAINED_CLEARS = covering([(*c, m) for c in CLEAR_CASES for m in MODES])


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", TRAINED_UPDATES, ids=_name)
def test_inplace_update_after_step_trains_the_same(tmp_path, case):
    *spelling, mode = case
    _train(tmp_path, clamp_script(*spelling), mode)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", TRAINED_CLEARS, ids=_name)
def test_grad_set_to_none_loop_trains_the_same(tmp_path, case):
    *spelling, mode = case
    _train(tmp_path, clear_script(*spelling), mode)


OUTSIDE = {  # where a `.data` in-place update lives outside a training loop -> converted to assign_data?
    "init_function": ("def init(m):\n    m.weight.data.normal_(0.0, 0.02)\n    m.bias.data.fill_(0)\n", True),
    "in_constructor": (
        "class A(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(2, 2)\n"
        "        self.l.weight.data.uniform_(-0.1, 0.1)\n",
        True,
    ),
    # compiled code calls no runtime helper: inside forward the update stays a rebinding, as before
    "in_forward": (
        "class B(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(2, 2)\n\n"
        "    def forward(self, x):\n        self.l.weight.data.clamp_(-1, 1)\n        return self.l(x)\n",
        False,
    ),
}


@pytest.mark.parametrize("place", list(OUTSIDE))
def test_data_inplace_update_outside_a_loop(place):
    from torch2ms.convert import convert_source

    source, assigned = OUTSIDE[place]
    out = convert_source("import torch\nimport torch.nn as nn\n\n\n" + source).code
    ast.parse(out)
    assert ("assign_data(" in out) == assigned, out
    assert ".data.normal_(" not in out and ".data.fill_(" not in out and ".data.clamp_(" not in out, out
