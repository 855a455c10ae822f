"""Issue 21 §3: ``for m in x.modules():`` converts to ``for _, m in x.cells_and_names():`` (the loop a
MindSpore engineer writes, mindcv's ``_initialize_weights``), not to a loop over the generator
``(c for _, c in x.cells_and_names())``.

A generated matrix of spellings — where the loop stands (``__init__``, a method, a function, module
level), the receiver (``self``, a parameter, an attribute chain, a call result), the loop variable's
name, a ``for ... else`` — each converted and run in MindSpore against torch (the same layer types
visited, in the same order). Where the body reads ``_`` (or the loop unpacks, or the value is not a
loop's iterable) the generator stays, and still runs.
"""

from __future__ import annotations

import ast
import itertools

import pytest
from rc_models_support import convert_pair
from requires_support import require_modules

pytestmark = pytest.mark.differential

RECEIVERS = {
    "self": ("self", "method"),
    "parameter": ("net", "function"),
    "attribute": ("holder.net", "function"),
    "call_result": ("make()", "function"),
}
BODIES = {
    "plain": "seen.append(type({v}).__name__)",
    "for_else": "seen.append(type({v}).__name__)\n{pad}else:\n{pad}    seen.append('end')",
}
VARS = ("m", "module")

SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))
        self.head = nn.Linear(2, 2)

    def walk(self):
        seen = []
{method_loop}
        return seen


class Holder:
    net = Net()


holder = Holder()


def make():
    return Net()


def walk(net):
    seen = []
{function_loop}
    return seen
"""


def _loop(receiver: str, var: str, body: str, indent: str) -> str:
    pad = indent
    text = f"{pad}for {var} in {receiver}.modules():\n{pad}    " + body.format(v=var, pad=pad)
    return text


def _source(receiver_key: str, var: str, body_key: str) -> tuple[str, str]:
    receiver, where = RECEIVERS[receiver_key]
    body = BODIES[body_key]
    method = _loop(receiver, var, body, " " * 8) if where == "method" else "        pass"
    function = _loop(receiver, var, body, " " * 4) if where == "function" else "    pass"
    return SOURCE.format(method_loop=method, function_loop=function), where


MATRIX = list(itertools.product(RECEIVERS, VARS, BODIES))


@pytest.mark.parametrize(("receiver", "var", "body"), MATRIX)
def test_modules_loop_unpacks_cells_and_names(tmp_path, receiver, var, body):
    require_modules("torch", "mindspore")
    source, where = _source(receiver, var, body)
    tmod, mmod, code = convert_pair(source, tmp_path)
    assert f"for _, {var} in " in code and "(c for _, c in" not in code, code
    expected = tmod.Net().walk() if where == "method" else tmod.walk(tmod.Net())
    got = mmod.Net().walk() if where == "method" else mmod.walk(mmod.Net())
    names = {"Linear": "Dense", "Module": "Cell", "Sequential": "SequentialCell"}
    assert [names.get(n, n) for n in expected if n not in ("Net",)] == [n for n in got if n not in ("Net",)]


KEPT = {
    "body_reads_underscore": "for m in net.modules():\n        _ = m\n        seen.append(type(_).__name__)",
    "enumerate": "for i, m in enumerate(net.modules()):\n        seen.append(type(m).__name__)",
    "list": "for m in list(net.modules()):\n        seen.append(type(m).__name__)",
}


@pytest.mark.parametrize("case", list(KEPT))
def test_other_uses_keep_the_generator_and_run(tmp_path, case):
    require_modules("torch", "mindspore")
    source = SOURCE.format(method_loop="        pass", function_loop="    " + KEPT[case])
    tmod, mmod, code = convert_pair(source, tmp_path)
    walk = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name == "walk")
    assert "(c for _, c in net.cells_and_names())" in ast.unparse(walk), code
    assert len(mmod.walk(mmod.Net())) == len(tmod.walk(tmod.Net()))
