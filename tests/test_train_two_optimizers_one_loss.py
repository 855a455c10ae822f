"""Issue 22 (``two-optimizers-one-loss``, the generator's ``zero_grad=several``): one loss, two optimizers over
different parameters of one model, ``opt1.zero_grad(); opt2.zero_grad(); loss.backward(); opt1.step();
opt2.step()``. One gradient over the union of both optimizers' parameters, each optimizer applied to its share.

Seen failing: a list of optimizers stepped in a loop (``for o in opts: o.step()``, ``[o.step() for o in
opts]``, ``self.opts`` in a Trainer) was left as a skeleton, ``opts[0].step()`` stopped the training stage
("Name 'grads_opts[0]' is not a valid identifier"), and ``model.zero_grad()`` did not clear the gradients kept
for the optimizers of its sub-modules (they summed over every step). (Named optimizers stepped in several
orders: tests/test_train_several_optimizers_one_backward.py.)

Generated matrix: how the gradients are cleared x how the optimizers step x how they are held (two names, a
list built in place, a list of names, a tuple unpacked) x where the loop lives (module level, a function,
``main()``, a Trainer holding it all on ``self``); the optimizer classes vary
with how they are held. Every case converts to one gradient call whose weights are both optimizers' and
one update per optimizer with its own share, cleared each step; a covering slice (tests/matrix_support.py),
in PyNative and GRAPH_MODE, is trained by torch and by the conversion with the real compare_train: SAME.
"""

from __future__ import annotations

import itertools
import re

import pytest
from matrix_support import covering
from requires_support import require_module

from torch2ms.convert import convert_tree
from torch2ms.convert.pipeline import convert_source

ZERO = ["each", "model", "loop", "set_to_none", "index"]
STEP = ["each", "loop", "comprehension", "index"]
HOLD = ["names", "list_built", "list_names", "tuple_unpack"]
PLACES = ["module", "function", "main", "trainer"]
MODES = ["pynative", "graph"]
# how the optimizers are held -> (their classes' constructors over {a} and {b})
CLASSES = {
    "names": ("torch.optim.SGD({a}, lr=0.1, momentum=0.9)", "torch.optim.SGD({b}, lr=0.05)"),
    "list_built": ("torch.optim.SGD({a}, lr=0.1)", "torch.optim.Adam({b}, lr=0.01)"),
    "list_names": ("torch.optim.Adam({a}, lr=0.01)", "torch.optim.RMSprop({b}, lr=0.001)"),
    "tuple_unpack": ("torch.optim.SGD({a}, lr=0.1, momentum=0.9)", "torch.optim.AdamW({b}, lr=0.01)"),
}
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


def _setup(hold: str) -> list[str]:
    a, b = (c.format(a="model.features.parameters()", b="model.head.parameters()") for c in CLASSES[hold])
    lines = ["model = Net()", "criterion = nn.CrossEntropyLoss()"]
    if hold == "names":
        return [*lines, f"opt1 = {a}", f"opt2 = {b}"]
    if hold == "list_built":
        return [*lines, f"opts = [{a}, {b}]"]
    if hold == "list_names":
        return [*lines, f"opt1 = {a}", f"opt2 = {b}", "opts = [opt1, opt2]"]
    return [*lines, f"opt1, opt2 = {a}, {b}", "opts = (opt1, opt2)"]


def _each(hold: str, call: str) -> list[str]:
    if hold == "list_built":
        return [f"opts[0].{call}", f"opts[1].{call}"]
    return [f"opt1.{call}", f"opt2.{call}"]


def _body(zero: str, step: str, hold: str) -> list[str]:
    many = "(opt1, opt2)" if hold == "names" else "opts"
    zeros = {
        "each": _each(hold, "zero_grad()"),
        "model": ["model.zero_grad()"],
        "loop": [f"for o in {many}:", "    o.zero_grad()"],
        "set_to_none": _each(hold, "zero_grad(set_to_none=True)"),
        "index": ["opts[0].zero_grad()", "opts[1].zero_grad()"],
    }[zero]
    steps = {
        "each": _each(hold, "step()"),
        "loop": [f"for o in {many}:", "    o.step()"],
        "comprehension": [f"[o.step() for o in {many}]"],
        "index": ["opts[0].step()", "opts[1].step()"],
    }[step]
    return [*zeros, "out = model(x)", "loss = criterion(out, y)", "loss.backward()", *steps]


def _on_self(line: str) -> str:
    return re.sub(r"(?<![\w.'])(model|criterion|opt1|opt2|opts)\b", r"self.\1", line)


def script(zero: str, step: str, hold: str, place: str) -> str:
    loop = ["for epoch in range(2):", "    for x, y in loader:", *("        " + ln for ln in _body(zero, step, hold))]
    setup = _setup(hold)
    if place == "module":
        code = [*setup, *loop]
    elif place == "function":
        names = "model, criterion, opt1, opt2" if hold == "names" else "model, criterion, opts"
        code = [f"def train({names}):", *("    " + ln for ln in loop), "", "", *setup, f"train({names})"]
    elif place == "trainer":  # everything held by the Trainer, built in its __init__
        own = [_on_self(ln) for ln in ["self.model.train()", *loop]]
        code = ["class Trainer:", "    def __init__(self):", *("        " + _on_self(ln) for ln in setup), ""]
        code += ["    def fit(self):", *("        " + ln for ln in own), "", "", "Trainer().fit()"]
    else:
        code = [
            "def main():",
            *("    " + ln for ln in [*setup, *loop]),
            "",
            "",
            'if __name__ == "__main__":',
            "    main()",
        ]
    return HEAD + "\n" + "\n".join(code) + "\n"


CASES = [
    c
    for c in itertools.product(ZERO, STEP, HOLD, PLACES)
    if not ("index" in c[:2] and c[2] == "names")  # no list to index
]


@pytest.mark.parametrize(("zero", "step", "hold", "place"), CASES, ids=["-".join(c) for c in CASES])
def test_one_gradient_each_optimizer_its_share(zero, step, hold, place):
    source = script(zero, step, hold, place)
    compile(source, "train.py", "exec")
    out = convert_source(source, "train.py").code
    assert "not converted" not in out and "zero_grad" not in _static(out), out
    opts = ["opts[0]", "opts[1]"] if hold == "list_built" else ["opt1", "opt2"]
    if place == "trainer":
        opts = [f"self.{o}" for o in opts]
    assert "set_train" not in "".join(re.findall(r"^\s*(?:self\.)?opt.*set_train.*$", out, re.M)), (
        out
    )  # an optimizer no module
    # one value_and_grad over both optimizers' parameters
    grads = re.findall(r"value_and_grad\(\w+, None, (.*)\)$", out, re.M)
    assert len(grads) == 1, out
    # each optimizer applied to its own share, each share cleared at each step before the backward
    applied = re.findall(r"^\s*(\S+)\((grads_\w+)\)  # torch2ms: ", out, re.M)
    items = ["opts[0]", "opts[1]"] if step == "index" or hold == "list_built" else ["opt1", "opt2"]
    items = [f"self.{o}" for o in items] if place == "trainer" else items  # the step's spelling
    assert [a for a, _ in applied] == items, out
    assert len({g for _, g in applied}) == 2, out
    loop = out[out.index("for epoch in range(2):") :]
    for _opt, g in applied:
        assert re.search(rf"^\s*{g} = None", loop, re.M), (g, out)
        assert re.search(rf"^\s*{g} = accumulate_grads\({g}, grads\[", loop, re.M), (g, out)
    assert not re.search(r"^\s*for o in", loop, re.M) and "o.step()" not in _static(loop), out


def _static(out: str) -> str:
    """The code without the conversion's trailing comments (which quote torch's statements)."""
    return "\n".join(line.split("  # torch2ms:")[0] for line in out.splitlines())


DIFFERENTIAL = covering(
    [(*c, m) for c in CASES for m in MODES],
    keep=lambda c: (
        c in {("each", "each", "names", "module", "graph"), ("model", "loop", "list_built", "function", "pynative")}
    ),
)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(
    ("zero", "step", "hold", "place", "mode"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL]
)
def test_two_optimizers_train_as_torch(tmp_path, zero, step, hold, place, mode):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(zero, step, hold, place)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(source)
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    rep = compare_train(
        str(tmp_path / "src" / "train.py"),
        str(tmp_path / "out" / "train.py"),
        steps=8,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
        mode=mode,
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 16 and {r["opt"] for r in rep.rows} == {0, 1}  # each step, each optimizer
