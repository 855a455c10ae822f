"""One deep file never ends a tree's run (found by `make fuzz`, seed 1: `convert_tree raised RecursionError`).

Before a tree converts, the driver reads every file for project facts (nn.Module subclasses, imports,
the layer map). Those walks ran in the driver's thread at the default recursion limit, outside the
per-file guard: one file of 1,500 chained ``x if c else ...`` made ``convert`` and ``scan`` raise for
the whole tree. Now a file over the nesting cap is left to its own conversion (which refuses it), and
the facts are read with the headroom the workers have. The class: deep expression shapes that parse
(no brackets: the parser allows 200 of those) x where they sit x under and over the cap, in one tree
with a plain model beside them, through convert and scan.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from torch2ms.analysis.headroom import MAX_NESTING
from torch2ms.convert import convert_tree
from torch2ms.convert.estimate import scan_with_estimate

SHAPES = {
    "ifexp-else": lambda n: "x if c else " * n + "x",
    "ifexp-legacy": lambda n: "torch.cuda.FloatTensor if c else " * n + "torch.FloatTensor",
    "sum": lambda n: " + ".join(["x"] * (n + 1)),
    "attribute": lambda n: "x" + ".a" * n,
    "not": lambda n: "not " * n + "c",
}
PLACES = {
    "module": lambda e: f"y = {e}\n",
    "class": lambda e: f"class Holder:\n    y = {e}\n",
    "forward": lambda e: f"class Net(nn.Module):\n    def forward(self, x):\n        c = True\n        return {e}\n",
}
HEAD = "import torch\nimport torch.nn as nn\n\nx = torch.ones(1)\nc = True\n"
PLAIN = "import torch\nimport torch.nn as nn\n\n\nclass Plain(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


def _tree(root: Path, depths: tuple[int, ...]) -> dict[str, int]:
    root.mkdir(parents=True)
    (root / "plain.py").write_text(PLAIN)
    made = {}
    for shape, expr in SHAPES.items():
        for place, wrap in PLACES.items():
            for n in depths:
                name = f"{shape}_{place}_{n}.py"
                (root / name).write_text(HEAD + wrap(expr(n)))
                made[name] = n
    return made


@pytest.mark.parametrize("entry", ["convert", "scan"])
def test_files_over_the_cap_are_refused_alone(tmp_path: Path, entry: str):
    made = _tree(tmp_path / "src", (MAX_NESTING + 100, 3 * MAX_NESTING))
    if entry == "convert":
        report = convert_tree(tmp_path / "src", tmp_path / "out", jobs=2)  # raised RecursionError before
        errors = {f.path: f.error for f in report.files}
        assert "nn.Cell" in (tmp_path / "out" / "plain.py").read_text()
    else:
        errors = {f.path: f.error for f in scan_with_estimate(tmp_path / "src", jobs=2).files}
    assert errors.pop("plain.py") is None
    assert set(errors) == set(made)
    for name, error in errors.items():
        assert error and "deep" in error, (name, error)


def test_files_under_the_cap_still_convert(tmp_path: Path):
    made = _tree(tmp_path / "src", (MAX_NESTING - 100,))
    report = convert_tree(tmp_path / "src", tmp_path / "out", jobs=2)
    errors = {f.path: f.error for f in report.files}
    assert {name for name in made if errors[name]} == set()
    assert errors["plain.py"] is None
