"""Issue 24: ``hs.pop()`` on its own line, in a loop, on a local list of tensors of different shapes
(guided-diffusion's UNet skip connections) fails in MindSpore 2.10's GRAPH_MODE ("index 2 is out of bounds
for dimension with size 2", a Transpose perm error). Where the list is a plain local of the method, the
converter writes the pop as indexing and a rebinding slice (``p = hs[-1]``, ``hs = hs[:-1]``).

A generated matrix, equal to torch in PyNative and GRAPH_MODE: pop form (``pop()``, ``pop(-1)``,
``pop(0)``, ``pop(1)``) × how the list is built (appended in a loop, a literal) × its tensors (same shapes,
different shapes) × where it sits (forward, a helper method forward calls) × where the pop is (its own line,
inside an expression). Lists that are not plain locals (a parameter, an alias, passed to a call, an
attribute, closed over, a non-literal index) keep their pops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from rc_models_support import compare_modes, convert_pair
from requires_support import CORPUS, require_kit, require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

FORMS = ("pop()", "pop(-1)", "pop(0)", "pop(1)")
BUILDS = {
    "append_loop": "hs = []\nh = x\nfor m in self.downs:\n    h = m(h)\n    hs.append(h)",
    "literal": "h1 = self.downs[0](x)\nh2 = self.downs[1](h1)\nh3 = self.downs[2](h2)\nh4 = self.downs[3](h3)\n"
    "hs = [h1, h2, h3, h4]",
}
WIDTHS = {"same": (4, 4, 4, 4), "different": (6, 8, 5, 3)}
POPS = {
    "own_line": "p = hs.{form}\nacc = m(acc) + torch.cat([acc, p], dim=1).mean(1, keepdim=True) * len(hs)",
    "in_expression": "acc = m(acc) + torch.cat([acc, hs.{form}], dim=1).mean(1, keepdim=True)\nacc = acc * len(hs)",
}
PLACES = ("forward", "helper")

SOURCE = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.downs = nn.ModuleList([{downs}])
        self.ups = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def merge(self, x):
{merge}

    def forward(self, x):
{forward}
"""


def _indent(code: str, n: int) -> str:
    return "\n".join(" " * n + line for line in code.splitlines())


def _source(form: str, build: str, widths: str, pop: str, place: str) -> str:
    sizes = (4, *WIDTHS[widths])
    downs = ", ".join(f"nn.Linear({a}, {b})" for a, b in itertools.pairwise(sizes))
    body = BUILDS[build] + "\nacc = x\nfor m in self.ups:\n" + _indent(POPS[pop].format(form=form), 4)
    body += "\nreturn acc + hs[0].mean(1, keepdim=True)"
    merge, forward = ("return x", body) if place == "forward" else (body, "return self.merge(x) * 2")
    return SOURCE.format(downs=downs, merge=_indent(merge, 8), forward=_indent(forward, 8))


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("pop", POPS)
@pytest.mark.parametrize("widths", WIDTHS)
@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("form", FORMS)
def test_plain_local_pops_equal_torch(tmp_path, form, build, widths, pop, place):
    tmod, mmod, code = convert_pair(_source(form, build, widths, pop, place), tmp_path)
    assert ".pop(" not in code and "hs = hs[" in code, code
    torch = require_module("torch")
    torch.manual_seed(0)
    tnet = tmod.Net()
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    errors = compare_modes(tnet, mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)


# (statements before the loop, the pop line): the list is not a plain local of the method, so the pop stays
KEPT = {
    "parameter": ("", "p = ys.pop()"),
    "alias": ("ys = [x, x]\nzs = ys", "p = ys.pop()"),
    "passed_to_call": ("ys = [x, x]", "self.note(ys)\np = ys.pop()"),
    "attribute": ("self.ys = [x, x]", "p = self.ys.pop()"),
    "closure": ("ys = [x, x]\nf = lambda: ys[0]", "p = ys.pop()"),
    "returned_list": ("ys = [x, x]", "p = ys.pop()\nreturn ys"),
    "in_tuple": ("ys = [x, x]\nt = (ys, 1)", "p = ys.pop()"),
    "non_literal_index": ("ys = [x, x]\ni = 0", "p = ys.pop(i)"),
    "annotated": ("ys: list = [x, x]", "p = ys.pop()"),
    "global": ("global ys\nys = [x, x]", "p = ys.pop()"),
    "same_target": ("ys = [x, x]", "ys = ys.pop()"),
    "from_call": ("ys = self.make(x)", "p = ys.pop()"),
}


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("case", KEPT)
def test_pops_of_lists_that_are_not_plain_locals_stay(case, place):
    before, line = KEPT[case]
    body = before + "\nfor m in self.ups:\n" + _indent(line, 4) + "\nreturn x"
    method = "forward" if place == "forward" else "merge"
    source = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n"
    source += f"    def {method}(self, x, ys=None):\n{_indent(body, 8)}\n"
    code = convert_source(source).code
    assert ".pop(" in code and "= ys[" not in code, code


def test_guided_diffusion_unet_skip_connections():
    """The kit's UNetModel.forward (gd_unet, gd_unet_1d, gd_unet_classcond_scaleshift fail in GRAPH_MODE with
    the pop: "index 2 is out of bounds for dimension with size 2"): its skips are indexed and sliced."""
    path = require_kit(CORPUS / "openai" / "guided-diffusion" / "guided_diffusion" / "unet.py")
    code = convert_source(path.read_text(encoding="utf-8"), "unet.py").code
    assert "hs.pop(" not in code
    assert code.count("_t2m_pop = hs[-1]\n            hs = hs[:-1]\n            h = cat([h, _t2m_pop], axis=1)") == 1
