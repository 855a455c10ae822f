"""compare-train --api (issue 25): name the ORIGINAL line behind the first divergent training step.

A small training script is generated (a custom forward of functional calls, in the module's own forward
or in a module-level helper it calls; a functional loss in the loop), converted with ``convert_tree``
(which writes the line map), and one line of the converted script is broken the way hand ports break —
in the forward (a GELU approximation, a softmax axis, swapped transpose axes, a layer_norm eps, a mask
added instead of filled) or in the loss (label smoothing). ``compare_train(..., api=True)`` runs real
torch and real MindSpore: it must find the first divergent step, rerun both sides to it, and name the
original line of the bug with its converted line, while an unmodified conversion reports nothing (no
divergence, and a recording forced at a step finds every paired call in agreement).
"""

from __future__ import annotations

import html
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from torch2ms.convert import convert_tree
from torch2ms.trainrun import compare_train

pytestmark = [pytest.mark.slow, pytest.mark.differential]

BODY = """\
h = fc(x)
h = F.gelu(h)
t = h.transpose(1, 2)
a = torch.matmul(h, t)
a = a.masked_fill(a > 1.0, 0.0)
a = F.softmax(a, dim=-1)
h = torch.matmul(a, h)
h = F.layer_norm(h, (8,), eps=1e-5)
return head(h.mean(dim=1))
"""

HEAD = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
NET = """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
{forward}
"""
LOOP = """

def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    xs = torch.from_numpy(rng.standard_normal((6, 4, 8, 8)).astype(np.float32))
    ys = torch.from_numpy(rng.integers(0, 3, (6, 4)))
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(6):
        opt.zero_grad()
        out = model(xs[i])
        loss = F.cross_entropy(out, ys[i], label_smoothing=0.1)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""

LOCATIONS = {
    "forward": HEAD + NET.format(forward=textwrap.indent("fc, head = self.fc, self.head\n" + BODY, " " * 8)) + LOOP,
    "helper": HEAD
    + "def block(fc, head, x):\n"
    + textwrap.indent(BODY, "    ")
    + NET.format(forward="        return block(self.fc, self.head, x)")
    + LOOP,
}

# bug kind → (converted text, broken text, the torch line's text it must name, where the code lives)
BUGS = {
    "softmax_axis": ("ops.softmax(a, axis=-1)", "ops.softmax(a, axis=-2)", "a = F.softmax(a, dim=-1)", "helper"),
    "transpose_not_swapped": ("h.swapaxes(1, 2)", "h.swapaxes(2, 2)", "t = h.transpose(1, 2)", "forward"),
    "layer_norm_eps": ("epsilon=1e-5", "epsilon=1e-1", "h = F.layer_norm(h,", "forward"),
    "mask_added": (
        "a = a.masked_fill(a > 1.0, 0.0)",
        "a = a + (a > 1.0).astype(a.dtype) * 0.0",
        "a = a.masked_fill(a > 1.0, 0.0)",
        "helper",
    ),
    "mean_axis": ("h.mean(dim=1)", "h.mean(dim=2)", "return head(h.mean(dim=1))", "helper"),
    "loss_smoothing": ("label_smoothing=0.1", "label_smoothing=0.3", "loss = F.cross_entropy(out,", "forward"),
}
# A GELU's approximation (tanh for erf, ~1e-4) stays inside compare-train's loss tolerance in this script:
# tests/test_compare_api.py names it in one forward. A line that raises is named here too:
RAISES = {"permute_out_of_range": ("h.swapaxes(1, 2)", "h.swapaxes(1, 5)", "t = h.transpose(1, 2)")}


def _convert(tmp_path: Path, location: str) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(LOCATIONS[location], encoding="utf-8")
    convert_tree(src, tmp_path / "out")
    return tmp_path / "out"


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def _run(tmp_path: Path, **kw):
    return compare_train(
        str(tmp_path / "src" / "train.py"),
        str(tmp_path / "out" / "train.py"),
        steps=2,
        out_dir=str(tmp_path / "work"),
        cwd=str(tmp_path),
        api=True,
        **kw,
    )


def test_unmodified_conversion_reports_nothing(tmp_path):
    _convert(tmp_path, "helper")
    rep = _run(tmp_path)
    assert rep.status == "same", (rep.findings, rep.error)
    assert rep.api is None  # no divergent step: nothing recorded, nothing named


@pytest.mark.parametrize("location", sorted(LOCATIONS))
def test_a_step_recorded_on_an_unmodified_conversion_agrees_call_by_call(tmp_path, location):
    """The recording itself forced at step 2 (index 1): every paired call of the forward and the loss
    agrees, and the pairs cover the whole forward and the loss (no call lost to the move into forward_fn)."""
    from torch2ms.trainrun.api_step import api_divergence

    _convert(tmp_path, location)
    work = (tmp_path / "work").resolve()
    src, out = tmp_path / "src" / "train.py", tmp_path / "out" / "train.py"
    _run(tmp_path)  # the torch side's record (initial weights, batches) that the MindSpore side loads
    config = work / "config.json"
    assert json.loads(config.read_text())["ms_script"] == str(out.resolve()) and src.is_file()
    api = api_divergence({"index": 1, "step": 2}, config, work, (tmp_path, 600.0, None, 0, None), "pynative")
    assert api["status"] == "match" and api["first"] is None, api
    assert api["paired"] >= 9, api  # the eight forward statements and the loss


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_injected_api_bug_in_a_training_step_names_the_original_line(tmp_path, bug):
    old, new, torch_line, location = BUGS[bug]
    out = _convert(tmp_path, location)
    converted = (out / "train.py").read_text(encoding="utf-8")
    assert converted.count(old) == 1, converted
    (out / "train.py").write_text(converted.replace(old, new), encoding="utf-8")
    rep = _run(tmp_path, mode="graph" if bug == "layer_norm_eps" else "pynative")
    assert rep.status == "different" and rep.first_divergence is not None, (rep.findings, rep.error)
    api = rep.api
    assert api is not None and api["status"] == "divergence", api
    assert api["switched_to_pynative"] is (bug == "layer_norm_eps")
    first = api["first"]
    assert first["original"]["line"] == _line_of(LOCATIONS[location], torch_line), first
    assert torch_line in first["original"]["text"]
    assert first["converted"]["line"] == _line_of(converted, old) and new in first["converted"]["text"]
    assert first["inputs_agree"] is True and first["cause"] == "this_call", first
    assert json.loads((tmp_path / "work" / "report.json").read_text())["api"]["first"]["original"] == first["original"]
    page = (tmp_path / "work" / "report.html").read_text(encoding="utf-8")
    row = next(r for r in page.split("<tr>") if "<th class=k>line</th>" in r)  # the two lines, side by side
    assert html.escape(first["original"]["text"]) in row and html.escape(first["converted"]["text"]) in row
    shutil.rmtree(tmp_path / "work", ignore_errors=True)


@pytest.mark.parametrize("location", sorted(LOCATIONS))
@pytest.mark.parametrize("bug", sorted(RAISES))
def test_a_line_that_raises_in_a_training_step_is_named(tmp_path, bug, location):
    old, new, torch_line = RAISES[bug]
    out = _convert(tmp_path, location)
    converted = (out / "train.py").read_text(encoding="utf-8")
    (out / "train.py").write_text(converted.replace(old, new), encoding="utf-8")
    rep = _run(tmp_path)
    assert rep.status == "error" and rep.api is not None, (rep.error, rep.api)
    first = rep.api["first"]
    assert first["error"] and first["cause"] == "error", first
    assert first["original"]["line"] == _line_of(LOCATIONS[location], torch_line), first


def test_cli_passes_api_and_its_byte_limit(monkeypatch):
    """The command is a thin shell: --api and --api-max-mb reach compare_train."""
    import torch2ms.trainrun.api as api_module
    from torch2ms.cli import main

    seen = {}

    def fake(torch_script, ms_script, **kw):
        seen.update(kw)
        raise api_module.TrainUsageError("stop here")

    monkeypatch.setattr(api_module, "compare_train", fake)
    argv = ["compare-train", "--torch", "a.py", "--ms", "b.py", "--api", "--api-max-mb", "2"]
    assert main(argv) == 2
    assert seen["api"] is True and seen["api_bytes"] == 2 << 20
    main(["compare-train", "--torch", "a.py", "--ms", "b.py"])
    assert seen["api"] is False
