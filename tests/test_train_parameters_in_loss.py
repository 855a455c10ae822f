"""Issue 22, class 10 (``parameters-generator-in-compiled-step``): ``model.parameters()`` read inside the
training step's loss, an L2 (or L1) penalty: ``loss = criterion(out, y) + 0.01 * sum(p.pow(2).sum() for p in
model.parameters())``.

The forward statements move into ``forward_fn``, which the compiled step differentiates, and MindSpore compiles
no ``Cell.get_parameters()`` there ("... 'mindspore.nn.cell.Cell.get_parameters' is not supported in
'construct'": the generator's ``loss=two_losses`` failed before its first step in both modes). The conversion
now binds ``torch2ms.runtime.torch_parameters(model)`` (torch's parameters: no BatchNorm statistics) before the
loop and reads that tuple in the step.

Generated matrix: the penalty's spelling x where the loop lives (module level, a function, ``main()``, a
Trainer's method on ``self.model``) x the mode (PyNative, GRAPH_MODE). Every case: the converted step reads no
``.parameters()`` / ``get_parameters()`` and stays compiled; a covering slice (tests/matrix_support.py) is
trained by torch and by the conversion with the real compare_train: SAME.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from matrix_support import covering
from requires_support import require_module

from torch2ms.convert import convert_tree
from torch2ms.convert.pipeline import convert_source

# spelling -> the statements that compute `loss` from `out`, `y` and the model `M` (the loop's model)
SPELLINGS = {
    "gen_pow": ["loss = criterion(out, y) + 0.01 * sum(p.pow(2).sum() for p in M.parameters())"],
    "list_square": ["l2 = sum([(p ** 2).sum() for p in M.parameters()])", "loss = criterion(out, y) + 1e-2 * l2"],
    "torch_sum": ["loss = criterion(out, y) + 0.005 * sum(torch.sum(p * p) for p in M.parameters())"],
    "l1_abs": ["loss = criterion(out, y) + 1e-3 * sum(p.abs().sum() for p in M.parameters())"],
    "for_loop": [
        "l2 = 0.0",
        "for p in M.parameters():",
        "    l2 = l2 + p.pow(2).sum()",
        "loss = criterion(out, y) + 0.01 * l2",
    ],
    "named_weights": [
        "l2 = sum(w.pow(2).sum() for name, w in M.named_parameters() if 'bias' not in name)",
        "loss = criterion(out, y) + 0.01 * l2",
    ],
    "next_param": ["loss = criterion(out, y) + 0.1 * next(M.parameters()).pow(2).mean()"],
    "inline_backward": [],  # the penalty inside `(...).backward()` itself
}
PLACES = ["module", "function", "main", "trainer"]
MODES = ["pynative", "graph"]
HEAD = """import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU())
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(self.features(x))


torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy(rng.randn(32, 6).astype(np.float32))
Y = torch.from_numpy(rng.randint(0, 3, 32).astype(np.int64))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=8)
"""
SETUP = [
    "model = Net()",
    "criterion = nn.CrossEntropyLoss()",
    "optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)",
]


def _loop(spelling: str, model: str, opt: str, crit: str) -> list[str]:
    body = [f"{opt}.zero_grad()", f"out = {model}(x)"]
    if spelling == "inline_backward":
        body.append(f"({crit}(out, y) + 0.01 * sum(p.pow(2).sum() for p in {model}.parameters())).backward()")
    else:
        body += [line.replace("M.", f"{model}.").replace("criterion", crit) for line in SPELLINGS[spelling]]
        body.append("loss.backward()")
    body.append(f"{opt}.step()")
    return ["for epoch in range(2):", "    for x, y in loader:", *("        " + line for line in body)]


def script(spelling: str, place: str) -> str:
    if place == "module":
        code = [*SETUP, *_loop(spelling, "model", "optimizer", "criterion")]
    elif place == "function":
        code = [
            "def train(model, optimizer, criterion):",
            *("    " + ln for ln in _loop(spelling, "model", "optimizer", "criterion")),
        ]
        code += ["", "", *SETUP, "train(model, optimizer, criterion)"]
    elif place == "main":
        code = ["def main():", *("    " + ln for ln in [*SETUP, *_loop(spelling, "model", "optimizer", "criterion")])]
        code += ["", "", 'if __name__ == "__main__":', "    main()"]
    else:
        loop = _loop(spelling, "self.model", "self.optimizer", "self.criterion")
        code = [
            "class Trainer:",
            "    def __init__(self, model, optimizer, criterion):",
            "        self.model, self.optimizer, self.criterion = model, optimizer, criterion",
            "",
            "    def fit(self):",
            *("        " + ln for ln in loop),
            "",
            "",
            *SETUP,
            "model.train()",  # (self.model.train() in the class is another class of issue 22: loop=trainer)
            "Trainer(model, optimizer, criterion).fit()",
        ]
    return HEAD + "\n" + "\n".join(code) + "\n"


CASES = list(itertools.product(SPELLINGS, PLACES))
JIT = re.compile(r"^\s*@(ms|mindspore)\.jit\s*$", re.M)


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source)
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text()


def _forward_fn(out: str) -> str:
    m = re.search(r"^( *)def forward_fn\(.*?^\1    return [^\n]*", out, re.M | re.S)
    assert m, out
    return m.group(0)


@pytest.mark.parametrize(("spelling", "place"), CASES, ids=["-".join(c) for c in CASES])
def test_parameters_in_loss_read_from_a_tuple_bound_before_the_loop(spelling, place):
    source = script(spelling, place)
    compile(source, "train.py", "exec")
    out = convert_source(source, "train.py").code
    assert "not converted" not in out, out
    # one compiled TrainStep; a statement with a block in the forward (a `for` over the parameters) takes the
    # general form (forward_fn + grad_fn, the gradients kept as torch keeps .grad)
    assert bool(JIT.search(out)) == (spelling != "for_loop") == ("class TrainStep" in out), out
    fwd = _forward_fn(out)
    # the batch is the step's argument, also where only the loss given to backward() reads it (inline_backward)
    assert re.search(r"def forward_fn\(x, y\)", fwd), fwd
    assert "parameters()" not in fwd and "get_parameters" not in fwd and "trainable_params" not in fwd, fwd
    helper = "torch_named_parameters" if spelling == "named_weights" else "torch_parameters"
    owner = "self.model" if place == "trainer" else "model"
    bind = re.search(rf"^\s*(\w+) = {helper}\({re.escape(owner)}\)$", out, re.M)
    assert bind, out
    assert bind.group(1) in fwd, fwd
    assert out.index(bind.group(0)) < out.index("def forward_fn"), out
    if spelling == "next_param":
        assert f"{bind.group(1)}[0]" in fwd, fwd


def test_torch_parameters_leave_batchnorm_statistics_out():
    """The helper's contents: torch's parameters() of the same net, in torch's order and names."""
    torch = require_module("torch")
    require_module("mindspore")
    from mindspore import nn as msnn

    from torch2ms.runtime import torch_named_parameters, torch_parameters

    ms_net = msnn.SequentialCell(msnn.Dense(3, 4), msnn.BatchNorm1d(4), msnn.Dense(4, 2))
    t_net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    names = [n for n, _ in torch_named_parameters(ms_net)]
    assert names == [n for n, _ in t_net.named_parameters()]
    shapes = [tuple(p.shape) for p in torch_parameters(ms_net)]
    assert shapes == [tuple(p.shape) for p in t_net.parameters()]


DIFFERENTIAL = covering(
    [(s, p, m) for s, p in CASES for m in MODES], keep=lambda c: c == ("gen_pow", "module", "graph")
)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "place", "mode"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_penalty_over_parameters_trains_as_torch(tmp_path, spelling, place, mode):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(spelling, place)
    (tmp_path / "train.py").write_text(source)
    _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "c" / "out" / "train.py"),
        steps=6,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
        mode=mode,
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 6


@pytest.mark.parametrize("with_parameters", [False, True], ids=["no-parameters", "parameters"])
def test_hoist_keeps_what_earlier_stages_generated(with_parameters):
    """The hoist runs over the forward statements after earlier stages wrote into them
    (``torch2ms.runtime.input_grads`` of a gradient penalty); those names are known by node identity
    (GeneratedRefs), so the nodes the hoist does not change stay the same objects."""
    import libcst as cst

    from torch2ms.convert.constructs.training.step_params import ParameterHoist
    from torch2ms.convert.generated import GeneratedRefs

    refs = GeneratedRefs()
    penalty = " + sum(p.sum() for p in model.parameters())" if with_parameters else ""
    stmt = cst.parse_statement(f"loss = torch2ms.runtime.input_grads(f, (x,))[0].sum(){penalty}\n")
    refs.register(stmt)
    out = ParameterHoist(refs, lambda stem: stem).apply(stmt)
    helper = [n for n in _attributes(out) if refs.full_name(n) == "torch2ms.runtime.input_grads"]
    assert len(helper) == 1, cst.Module([out]).code
    assert ("model_parameters" in cst.Module([out]).code) == with_parameters


def _attributes(node):
    import libcst as cst

    found = []

    class _All(cst.CSTVisitor):
        def visit_Attribute(self, n):
            found.append(n)

    node.visit(_All())
    return found
