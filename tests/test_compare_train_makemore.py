"""R26 compare-train on karpathy/makemore (../shared/realcode): the script as it is, converted by
``torch2ms convert`` at test time, run side by side with tiny sizes through its own flags on a small
generated names file. Its ``torch.utils.tensorboard.SummaryWriter`` becomes torch2ms.runtime's writer
(the converted script runs with MindSpore alone); its InfiniteDataLoader's
``RandomSampler(replacement=True, num_samples=int(1e10))`` is drawn lazily.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from requires_support import CORPUS, require_kit, require_module

from torch2ms.convert import convert_tree
from torch2ms.trainrun import compare_train

STEPS, TOL = 4, 1e-4


def _names(path: Path, count: int = 60) -> None:
    """A names.txt of random short lowercase words: what makemore reads, one per line."""
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 6))) for _ in range(count)]
    path.write_text("\n".join(words) + "\n", encoding="utf-8")


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("model_type", ["transformer"])
def test_r26_makemore_trains_the_same(tmp_path, model_type):
    require_module("tensorboard")  # the torch script's SummaryWriter needs it (the test extra has it)
    src = CORPUS / "karpathy" / "makemore"
    require_kit(src)
    convert_tree(str(src), str(tmp_path / "ms"))
    converted = (tmp_path / "ms" / "makemore.py").read_text(encoding="utf-8")
    assert "import torch" not in converted and "SummaryWriter(log_dir=args.work_dir)" in converted
    cwd = tmp_path / "run"
    cwd.mkdir()
    _names(cwd / "names.txt")
    args = ["--input-file", "names.txt", "--work-dir", "out", "--num-workers", "0", "--type", model_type]
    args += ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--n-embd2", "16", "--batch-size", "4"]
    rep = compare_train(
        str(src / "makemore.py"),
        str(tmp_path / "ms" / "makemore.py"),
        steps=STEPS,
        args=args,
        out_dir=str(tmp_path / "out"),
        cwd=str(cwd),
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= TOL, rep.first_divergence
    assert all(r["same_inputs"] for r in rep.rows)
    assert not [f for f in rep.findings if f["severity"] == "difference"], rep.findings
