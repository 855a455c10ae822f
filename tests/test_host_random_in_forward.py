"""Issue 23 §1 (random streams beyond torch), item (b): Python's ``random`` used inside a model's forward that
the converted training step compiles (``@mindspore.jit``). A compiled graph parses the draw once and keeps its
value as a constant (measured on MindSpore 2.10: ``random.random()`` in a jitted construct gave the same value on
every call), so each step would reuse the first step's draw while torch draws anew. The converter writes such a
step uncompiled, with a comment naming the draws, and the conversion report names them too.

Before, only a draw spelled ``random.<api>(...)`` written in a class's ``forward`` was found: a helper function
forward calls, and ``from random import randint`` / ``import random as rd``, stayed compiled (frozen).

Generated matrix: the API (random / randint / choice / uniform / shuffle) × where the draw sits (in forward, in a
module-level helper forward calls, in a method forward calls on ``self``) × the import spelling — static: the step
is uncompiled and says why, in the code and in the report; run: compare-train (real torch, real MindSpore) says
SAME on a slice that covers every API, every place and every spelling (PyNative); in GRAPH_MODE, which compiles
every construct whatever the step says, compare-train names the draw (Python's stream differs), not "drift".
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from torch2ms.convert import convert_source, convert_tree

sys.path.insert(0, str(Path(__file__).parent))
from requires_support import require_modules

APIS = {
    "random": "()",
    "randint": "(0, 3)",
    "choice": "([0.5, 1.0, 1.5])",
    "uniform": "(-1.0, 1.0)",
    "shuffle": "(perm)",
}
PLACES = ("forward", "helper", "method")
SPELLINGS = {"module": ("import random\n", "random."), "alias": ("import random as rd\n", "rd."), "from": (None, "")}

SCRIPT = """{imports}import torch
import torch.nn as nn

{helper}
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
{method}
    def forward(self, x):
{body}        return self.fc({use})


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.linspace(-1.0, 1.0, 32).reshape(8, 4)
Y = X.sum(1, keepdim=True)
for step in range(4):
    opt.zero_grad()
    loss = ((model(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def _draw_lines(api: str, spelling: str, indent: str) -> str:
    call = SPELLINGS[spelling][1] + api + APIS[api]
    if api == "shuffle":
        return f"{indent}perm = [0, 1, 2, 3]\n{indent}{call}\n{indent}value = perm\n"
    return f"{indent}value = {call}\n"


def script(api: str, place: str, spelling: str) -> str:
    imports = SPELLINGS[spelling][0] or f"from random import {api}\n"
    helper = method = body = ""
    if place == "forward":
        body = _draw_lines(api, spelling, " " * 8)
    elif place == "helper":
        helper = "\ndef draw():\n" + _draw_lines(api, spelling, " " * 4) + "    return value\n\n"
        body = " " * 8 + "value = draw()\n"
    else:
        method = "\n    def draw(self):\n" + _draw_lines(api, spelling, " " * 8) + "        return value\n"
        body = " " * 8 + "value = self.draw()\n"
    use = "x[:, value]" if api == "shuffle" else "x * value"
    return SCRIPT.format(imports=imports, helper=helper, method=method, body=body, use=use)


CASES = list(itertools.product(APIS, PLACES, SPELLINGS))


@pytest.mark.parametrize("api, place, spelling", CASES)
def test_a_forward_drawing_from_python_random_runs_uncompiled_and_says_so(api, place, spelling):
    res = convert_source(script(api, place, spelling))
    assert not res.error and "not converted" not in res.code, res.code
    step = res.code[res.code.index("class TrainStep") :]
    assert "@ms.jit" not in step and "@mindspore.jit" not in step, step
    assert "Runs uncompiled: the step draws with" in step and f"random.{api}" in step, step
    notes = [c.note for c in res.changes if "draws with" in c.note]
    assert notes and f"random.{api}" in notes[0], res.changes


def test_a_forward_without_host_draws_stays_compiled():
    res = convert_source(script("random", "forward", "module").replace("random.random()", "torch.rand(()).item()"))
    assert not any("draws with" in c.note for c in res.changes), res.changes


# every API, every place and every spelling at least once
COMPARED = [
    ("random", "forward", "module"),
    ("randint", "helper", "from"),
    ("choice", "method", "alias"),
    ("uniform", "helper", "module"),
    ("shuffle", "forward", "from"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("api, place, spelling", COMPARED)
def test_compare_train_says_same_for_python_random_in_forward(api, place, spelling, tmp_path):
    require_modules("torch", "mindspore")
    from torch2ms.trainrun import compare_train

    src = tmp_path / "t" / "train.py"
    src.parent.mkdir()
    src.write_text(script(api, place, spelling), encoding="utf-8")
    convert_tree(str(src.parent), str(tmp_path / "m"))
    rep = compare_train(
        str(src), str(tmp_path / "m" / "train.py"), steps=4, out_dir=str(tmp_path / "o"), cwd=str(tmp_path)
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == 4, rep.rows
    assert rep.status == "same", (rep.first_divergence, rep.findings, rep.conditions)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("api, place, spelling", [("random", "helper", "alias"), ("shuffle", "method", "module")])
def test_in_graph_mode_a_python_random_draw_in_forward_is_named_not_drift(api, place, spelling, tmp_path):
    """GRAPH_MODE compiles every Cell's construct whatever the step says: the draw cannot be made per step
    there, so compare-train must name it (Python's stream differs), not call it numerical drift."""
    require_modules("torch", "mindspore")
    from torch2ms.trainrun import compare_train

    src = tmp_path / "t" / "train.py"
    src.parent.mkdir()
    src.write_text(script(api, place, spelling), encoding="utf-8")
    convert_tree(str(src.parent), str(tmp_path / "m"))
    rep = compare_train(
        str(src),
        str(tmp_path / "m" / "train.py"),
        steps=4,
        out_dir=str(tmp_path / "o"),
        cwd=str(tmp_path),
        mode="graph",
    )
    assert rep.error is None, rep.error
    assert rep.status == "different", (rep.first_divergence, rep.findings)
    streams = [f["message"] for f in rep.findings if f["kind"] == "streams"]
    assert streams and "Python's random" in streams[0], rep.findings
    assert rep.first_divergence and rep.first_divergence["cause"] != "numerical drift", rep.first_divergence
