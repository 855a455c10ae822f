"""Issue 22, class 8: a 0-dim tensor formatted with a spec where its type is not visible.

torch's 0-dim tensor formats as its number (``f"{loss:.4f}"``); MindSpore's Tensor refuses any spec. Where the
light type inference does not know the value (a dict of losses a function returns, a loss a training step
returns, a value from a list), a float presentation type (``f e g %``) formats ``float(value)``: what torch
formats for a tensor, and the same text for a Python or numpy number. Generated matrix: where the value
comes from x the spec x the spelling (f-string, ``str.format`` with automatic, explicit or keyword fields,
the builtin ``format``, ``%``) x where the statement lives (module level, a function, a method); the converted
script's printed lines must equal torch's, character for character.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source, convert_tree

SOURCES = {
    "dict_from_function": ("losses = estimate()", "losses['train']"),
    "returned_by_step": ("lossD = step()", "lossD"),
    "list_item": ("history = [step(), step()]", "history[-1]"),
    "tuple_unpacked": ("a, b = step(), 3", "a"),
    "python_int": ("n = count()", "n"),
    "numpy_scalar": ("v = np.float32(0.123456)", "v"),
    "attribute": ("box = Box()", "box.loss"),
}
SPECS = (".4f", "8.3e", ".2g", ".1%", ">10.5f")

HEAD = """
import numpy as np
import torch


def estimate():
    return {"train": torch.tensor(1.2345678) * 2, "val": torch.tensor(0.5)}


def step():
    w = torch.tensor([0.25, -1.5])
    return (w * w).sum() / 3


def count():
    return 7


class Box:
    def __init__(self):
        self.loss = torch.tensor(0.3333333)
"""


# How the value meets its spec: an f-string, str.format (automatic, explicit and keyword fields, a field
# twice), the builtin format(), %-formatting (MindSpore's Tensor takes it: it must stay as it was).
SPELLINGS = {
    "fstring": 'f"{{{expr}:{spec}}}"',
    "format_auto": '"{{:{spec}}}".format({expr})',
    "format_index": '"{{0:{spec}}}|{{0:{spec}}}".format({expr})',
    "format_keyword": '"{{n}} {{v:{spec}}}".format(v={expr}, n=3)',
    "format_second": '"{{}} {{:{spec}}}".format("x", {expr})',
    "builtin_format": 'format({expr}, "{spec}")',
    "percent": '"%{pct}" % {expr}',
}
# Where the formatting statement lives: module level, a function, a method.
PLACES = ("module", "function", "method")


def _lines(spelling: str) -> list[str]:
    lines = []
    for name, (setup, expr) in SOURCES.items():
        lines.append(setup)
        for spec in SPECS:
            pct = spec.replace("%", "f%%").replace(">", "")
            text = SPELLINGS[spelling].format(expr=expr, spec=spec, pct=pct)
            lines.append(f'print("{name} {spelling} {spec}", {text})')
    return lines


def _script(place: str = "module") -> str:
    body = [line for spelling in SPELLINGS for line in _lines(spelling)]
    if place == "function":
        body = ["def report():", *("    " + line for line in body), "", "", "report()"]
    elif place == "method":
        body = [
            "class Reporter:",
            "    def run(self):",
            *("        " + line for line in body),
            "",
            "",
            "Reporter().run()",
        ]
    return "\n".join([HEAD, *body]) + "\n"


def _run(path, block: bool) -> list[str]:
    prelude = ""
    if block:  # the converted script runs with MindSpore alone
        prelude = textwrap.dedent("""
            import sys
            class _Block:
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in ("torch", "torch2ms"):
                        raise ImportError(name)
            sys.meta_path.insert(0, _Block())
        """)
    code = (
        prelude
        + f"import runpy, sys\nsys.path[0] = {str(path.parent)!r}\nrunpy.run_path({str(path)!r}, run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout.splitlines()


@pytest.mark.differential
@pytest.mark.parametrize("place", PLACES)
def test_unknown_values_formatted_with_a_float_spec_print_as_torch(tmp_path, place):
    require_module("torch")
    require_module("mindspore")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fmt.py").write_text(_script(place), encoding="utf-8")
    convert_tree(tmp_path / "src", tmp_path / "out")  # the runtime vendored: MindSpore alone runs it
    want, got = _run(tmp_path / "src" / "fmt.py", False), _run(tmp_path / "out" / "fmt.py", True)
    assert len(want) == len(SOURCES) * len(SPECS) * len(SPELLINGS)
    for w, g in itertools.zip_longest(want, got):
        assert g == w


@pytest.mark.parametrize("spec", ["", ">10", "d", "x", "{width}.2f"])
def test_other_specs_and_visible_numbers_are_left_alone(spec):
    """No spec, a non-float presentation type, a nested spec and a value that is visibly a number keep their
    text: only a float presentation type on a value of unknown type is wrapped."""
    src = f"import torch\nwidth = 8\nv = step()\nprint(f'{{v:{spec}}}', f'{{len([1]):.2f}}', f'{{0.5:.1f}}')\n"
    code = convert_source(src).code
    assert "float(" not in code, code


@pytest.mark.parametrize(
    "text",
    [
        "'{}'.format(v)",  # no spec
        "'{:>10}'.format(v)",  # no presentation type
        "'{:d}'.format(v)",
        "'{0} {0:.2f}'.format(v)",  # the same value also formatted without a spec: as it was
        "'{0.real:.2f}'.format(v)",  # an attribute of the field: not this rule's
        "'{:{w}.2f}'.format(v, w=8)",  # a nested spec
        "'{:.2f}'.format(len([1]))",  # visibly a number
        "format(v, 'd')",
        "format(v)",
        "'%.2f' % v",  # MindSpore's Tensor takes %-formatting
    ],
)
def test_format_calls_left_alone(text):
    code = convert_source(f"import torch\nv = step()\nprint({text})\n").code
    assert "float(" not in code and text in code, code
