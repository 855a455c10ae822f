"""R26 compare-train on a real torch script and its conversion, run unmodified in two processes.

tests/trainrun/train_small.py (BN + Dropout MLP, two parameter groups, SGD-momentum, StepLR per epoch,
a shuffling DataLoader) is converted with `torch2ms convert`; the conversion trains like the original
(same losses to 1e-4 relative, step by step). Then one bug at a time is injected into the converted
script — a learning rate changed, `set_train` removed, the scheduler stepped per batch instead of per
epoch, the loss reduction changed, a parameter group dropped — and the command must name the right
step and the right cause. The torch side also runs in an environment without torch2ms or MindSpore
(--torch-python), and --own-data reports the two pipelines' batches.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from torch2ms.convert import convert_tree
from torch2ms.trainrun import compare_train

pytestmark = [pytest.mark.slow, pytest.mark.differential]

HERE = Path(__file__).resolve().parent
TORCH_SCRIPT = HERE / "trainrun" / "train_small.py"
STEPS = 10  # six batches an epoch: the second epoch runs at half the learning rate


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("small_ms")
    convert_tree(str(TORCH_SCRIPT.parent), str(out))
    return str(out)


def inject(tmp_path: Path, out: str, old: str, new: str) -> str:
    """The converted script with one bug injected, beside the helpers its conversion carries (torch2ms_runtime/)."""
    source = (Path(out) / "train_small.py").read_text(encoding="utf-8")
    assert old in source, f"the converted script no longer contains {old!r}: update the injection"
    path = tmp_path / "ms" / "train_small.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(source.replace(old, new), encoding="utf-8")
    if (Path(out) / "torch2ms_runtime").is_dir():
        shutil.copytree(Path(out) / "torch2ms_runtime", path.parent / "torch2ms_runtime")
    return str(path)


def run(tmp_path: Path, ms_script: str, **kw):
    return compare_train(
        str(TORCH_SCRIPT), ms_script, steps=STEPS, out_dir=str(tmp_path / "out"), cwd=str(tmp_path), **kw
    )


def test_r26_converted_script_trains_the_same(tmp_path, converted):
    rep = run(tmp_path, inject(tmp_path, converted, "", ""))
    assert rep.status == "same", (rep.findings, rep.error)
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= 1e-4
    assert all(r["same_inputs"] for r in rep.rows)  # torch's shuffled batches, replayed
    assert rep.rows[6]["torch_lr"] == [0.05, 0.025] and rep.rows[6]["ms_lr"] == pytest.approx([0.05, 0.025])
    assert any("Dropout switched off on both sides (torch: 1 layer(s)" in c for c in rep.conditions)
    assert not any(f["kind"] == "torch-import" for f in rep.findings)  # the MindSpore side never imported torch
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "report.json").is_file()


INJECTED = {
    "lr": ("lr=0.1,", "lr=0.2,", 2, "learning rate differs"),
    "set_train": ("        model.set_train()\n", "", 1, "BN/Dropout mode differs"),
    "scheduler_per_batch": (
        "  # torch2ms: forward, loss.backward(), optimizer.step()\n        scheduler.step()",
        "  # torch2ms: forward, loss.backward(), optimizer.step()\n            scheduler.step()",
        3,
        "learning-rate schedule differs (the MindSpore scheduler steps more often",
    ),
    "loss_reduction": ("CrossEntropyLoss()", "CrossEntropyLoss(reduction='sum')", 1, "loss reduction differs"),
    "group_dropped": (
        ', {"params": model.head.trainable_params(), "lr": 0.05}]',
        "]",
        2,
        "parameter groups differ",
    ),
}


@pytest.mark.parametrize("bug", sorted(INJECTED))
def test_r26_injected_bug_named_at_its_step(tmp_path, converted, bug):
    old, new, step, cause = INJECTED[bug]
    rep = run(tmp_path, inject(tmp_path, converted, old, new))
    assert rep.status == "different" and rep.exit_code == 1, rep.error
    assert rep.first_divergence["step"] == step, rep.first_divergence
    assert rep.first_divergence["cause"].startswith(cause), rep.first_divergence


def test_r26_torch_side_in_another_environment(tmp_path, converted):
    """--torch-python: an interpreter that cannot import torch2ms or MindSpore (the articles' two venvs)."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch2ms', 'mindspore'):\n"
        "            raise ImportError(name + ' is not installed in this environment')\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    python = tmp_path / "torch-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={block} exec {sys.executable} "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    rep = run(tmp_path, inject(tmp_path, converted, "", ""), torch_python=str(python))
    assert rep.status == "same", (rep.error, rep.sides["torch"]["output_tail"])


def test_r25_own_data_reports_both_pipelines(tmp_path, converted):
    """Each side shuffles with its own generator: the batches differ from the first step, and the report says so."""
    rep = run(tmp_path, inject(tmp_path, converted, "", ""), data="own")
    assert rep.status == "different"
    assert rep.first_divergence["step"] == 1 and rep.first_divergence["cause"] == "the batches differ"
    assert rep.rows[0]["torch_inputs"]["shape"] == rep.rows[0]["ms_inputs"]["shape"] == [16, 8]
    assert any(c.startswith("own data: each side ran its own pipeline") for c in rep.conditions)
    assert os.path.isfile(tmp_path / "out" / "report.json")
