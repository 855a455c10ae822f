"""R26 compare-train on real training scripts: pytorch/examples mnist, mnist_rnn, vae (--fake-data: the
MNIST download is served generated data on both sides) and super_resolution (a few generated images in
its BSDS300 folder), each converted by `torch2ms convert` from ../shared/realcode at test time and run
unmodified side by side with its original: the losses agree step by step to 1e-4 relative.

The converted scripts run as torch2ms wrote them (FIXES, the lines a user would still have to edit, is
empty: `len(train_loader.dataset)` converts to the size of the dataset the loader reads). VAE draws its noise inside the step: compare-train gives both
sides the same pseudo-noise, and the report says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from requires_support import CORPUS as KIT_CORPUS
from requires_support import require_kit

from torch2ms.convert import convert_tree
from torch2ms.trainrun import compare_train

pytestmark = [pytest.mark.slow, pytest.mark.differential]

EXAMPLES = KIT_CORPUS / "pytorch" / "examples"
STEPS, TOL = 4, 1e-4
FIXES: dict[str, list[tuple[str, str]]] = {  # marked lines a user would still edit: none left
    "mnist": [],
    "mnist_rnn": [],
    "vae": [],
    "super_resolution": [],
}
ARGS = {
    "mnist": ["--epochs", "1"],
    "mnist_rnn": ["--epochs", "1"],
    "vae": ["--epochs", "1"],
    "super_resolution": [
        "--upscale_factor",
        "3",
        "--batchSize",
        "2",
        "--testBatchSize",
        "2",
        "--nEpochs",
        "1",
        "--threads",
        "0",
    ],
}


def bsds300(cwd: Path) -> None:
    """super_resolution downloads BSDS300 unless dataset/BSDS300/images exists: a few random images."""
    rng = np.random.default_rng(0)
    from PIL import Image

    for split, n in (("train", 8), ("test", 4)):
        folder = cwd / "dataset" / "BSDS300" / "images" / split
        folder.mkdir(parents=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (260, 270, 3), dtype=np.uint8)).save(folder / f"{i}.jpg")


@pytest.mark.parametrize("name", sorted(FIXES))
def test_r26_realcode_script_trains_the_same(tmp_path, name):
    require_kit(EXAMPLES / name)
    converted = tmp_path / "ms"
    convert_tree(str(EXAMPLES / name), str(converted))
    script = converted / "main.py"
    text = script.read_text(encoding="utf-8")
    for old, new in FIXES[name]:
        text = text.replace(old, new)
    script.write_text(text, encoding="utf-8")
    cwd = tmp_path / "run"
    cwd.mkdir()
    (cwd / "results").mkdir()  # vae saves its sample images there
    if name == "super_resolution":
        bsds300(cwd)
    rep = compare_train(
        str(EXAMPLES / name / "main.py"),
        str(script),
        steps=STEPS,
        args=ARGS[name],
        fake_data=name != "super_resolution",
        out_dir=str(tmp_path / "out"),
        cwd=str(cwd),
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= TOL, rep.first_divergence
    assert all(r["same_inputs"] for r in rep.rows)
    assert not [f for f in rep.findings if f["severity"] == "difference"], rep.findings
    if name == "vae":
        assert any("torch.randn_like ×4, ops.randn_like ×4" in c for c in rep.conditions), rep.conditions
    if name in ("mnist", "mnist_rnn"):
        assert any(c.startswith("Dropout switched off on both sides") for c in rep.conditions)
