"""Issue 24: ``hs.pop()`` on its own line, in a loop, on a local list of tensors of different shapes
(guided-diffusion's UNet skip connections) fails in MindSpore 2.10's GRAPH_MODE ("index 2 is out of bounds
for dimension with size 2", a Transpose perm error). Where the list is a plain local of the method, the
converter writes the pop as indexing and a rebinding slice (``p = hs[-1]``, ``hs = hs[:-1]``).

A generated matrix, equal to torch in PyNative and GRAPH_MODE: pop form (``pop()``, ``pop(-1)``,
``pop(0)``, ``pop(1)``) × how the list is built (appended in a loop, a literal) × its tensors (same shapes,
different shapes) × where it sits (forward, a helper method forward calls) × where the pop is (its own line,
inside an expression): it proves the rewrite keeps Python's meaning; these small bodies also pass with the
pop kept. What breaks the pop in GRAPH_MODE is the popped tensor reaching code that reads its shape as numbers
and splits by them (the UNet's attention): the UNet cases at the end fail with the pop kept, as the kit did.
Lists that are not plain locals (a parameter, an alias, passed to a call, an attribute, closed over, a
non-literal index) keep their pops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from matrix_support import product
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


@pytest.mark.parametrize(("form", "build", "widths", "pop", "place"), product(FORMS, BUILDS, WIDTHS, POPS, PLACES))
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


# A UNet in small (guided-diffusion's shape): skips of different shapes popped into blocks whose attention reads
# the shapes as Python numbers and splits by them. With ``hs.pop()`` kept, GRAPH_MODE runs the popped tensor
# through its Any-type path and fails ("index 2 is out of bounds for dimension with size 2").
UNET = """
import math
import torch
import torch.nn as nn

class Run(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        with torch.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with torch.enable_grad():
            shallow_copies = [x.view_as(x) for x in ctx.input_tensors]
            output_tensors = ctx.run_function(*shallow_copies)
        input_grads = torch.autograd.grad(
            output_tensors,
            ctx.input_tensors + ctx.input_params,
            output_grads,
            allow_unused=True,
        )
        del ctx.input_tensors
        del ctx.input_params
        del output_tensors
        return (None, None) + input_grads


class Block(nn.Module):
    def __init__(self, a, b, up):
        super().__init__()
        self.conv = nn.Conv2d(a, b, 1)
        self.norm = nn.GroupNorm(a // 2, a)
        self.qkv = nn.Conv1d(a, 3 * a, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest") if up else nn.Identity()
    def forward(self, x, emb):
        return Run.apply(self._forward, 2, x, emb)

    def _forward(self, x, emb):
        b, c, *spatial = x.shape
        x = x.reshape(b, c, -1)
        qkv = self.qkv(self.norm(x))
        bs, width, length = qkv.shape
        assert width % 3 == 0
        ch = width // 3
        q, k, v = qkv.reshape(bs, ch * 3, length).split(ch, dim=1)
        scale = 1 / math.sqrt(math.sqrt(ch))
        weight = torch.einsum("bct,bcs->bts", q * scale, k * scale)
        weight = torch.softmax(weight.float(), dim=-1).type(weight.dtype)
        a = torch.einsum("bts,bcs->bct", weight, v)
        x = (x + a.reshape(bs, -1, length)).reshape(b, c, *spatial)
        e = emb[:, :1]
        while len(e.shape) < len(x.shape):
            e = e[..., None]
        return self.up(self.conv(x) + e)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.downs = nn.ModuleList([
            nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 6, 3, stride=2, padding=1),
            nn.Conv2d(6, 6, 3, padding=1), nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.Conv2d(8, 8, 3, padding=1),
        ])
        self.ups = nn.ModuleList([Block(16, 8, False), Block(16, 6, True), Block(12, 6, False), Block(12, 4, True), Block(8, 4, False), Block(8, 4, False)])
    def forward(self, x):
        hs = []
        emb = x.mean(dim=(2, 3))
        h = x
        for module in self.downs:
            h = module(h)
            hs.append(h)
        for module in self.ups:
{pop}
            h = module(h, emb)
        return h
"""
UNET_POPS = {
    "in_expression": "            h = torch.cat([h, hs.{form}], dim=1)",
    "own_line": "            skip = hs.{form}\n            h = torch.cat([h, skip], dim=1)",
}


@pytest.mark.parametrize("form", ("pop()", "pop(-1)"))
@pytest.mark.parametrize("pop", UNET_POPS)
def test_unet_skips_with_attention_equal_torch(tmp_path, pop, form):
    tmod, mmod, code = convert_pair(UNET.replace("{pop}", UNET_POPS[pop].format(form=form)), tmp_path)
    assert ".pop(" not in code, code
    torch = require_module("torch")
    torch.manual_seed(0)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    errors = compare_modes(tmod.Net(), mmod.Net, [x], tmp_path)
    assert max(errors.values()) <= 1e-5, (errors, code)
