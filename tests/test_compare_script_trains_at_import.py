"""Issue 23 §3, class "a script that trains at import": `compare --torch gpt.py:Model()` on a script
with no `if __name__ == "__main__":` guard made each side train first. compare now runs only the
library slice of such a file (imports, the definitions the factory reaches, the module-level values they
read, a `with open(...)` that reads the vocabulary) and says so up front.

Generated scripts: every way a script works at import (a for loop, a while loop, a bare `train()`
call, a with block, a print) × every factory spelling (a class, a class with arguments, a function) ×
every place the file sits (standalone, inside a package with a relative import). Each run of the
training appends to a marker file and prints TRAINED: the test shows the training did not run, in
torch through the factory for the whole matrix, and end to end (`torch2ms convert`, then `compare` in
real torch and real MindSpore: MATCH) for each way of working at import. A target that needs a value
only the loop computes is imported whole, as before (no slice that would fail)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.cli import main

pytestmark = pytest.mark.differential

VOCAB = "abcdefgh"
HEAD = """
import torch
import torch.nn as nn
{helper_import}

torch.manual_seed(1337)
n_embd = 8
with open({vocab!r}) as f:
    text = f.read()
chars = sorted(set(text))
vocab_size = len(chars)


class Model(nn.Module):
    def __init__(self, hidden=n_embd):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, hidden)
        self.head = {head}

    def forward(self, idx):
        return self.head(self.emb(idx))


def make_model():
    return Model(hidden=n_embd)


def mark():
    with open({marker!r}, "a") as out:
        out.write("trained\\n")
    print("TRAINED")


model = Model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
"""
WORK = {
    "for_loop": """
for step in range(3):
    loss = model(torch.randint(0, vocab_size, (2, 4))).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    mark()
""",
    "while_loop": """
step = 0
while step < 2:
    step += 1
    mark()
""",
    "train_call": """
def train():
    mark()


train()
""",
    "with_block": """
with torch.no_grad():
    mark()
""",
    "print": """
print(model)
mark()
""",
}
SPECS = ["Model()", "Model(hidden=6)", "make_model()", "make_model"]
LAYOUTS = ["standalone", "package"]
HELPER = """
import torch.nn as nn


def head(n):
    return nn.Linear(n, len({vocab!r}))
"""


def write_script(root: Path, work: str, layout: str) -> tuple[Path, Path]:
    """The training script (and its helper module) under root; returns (script, marker)."""
    folder = root / "pkg" if layout == "package" else root
    folder.mkdir(parents=True, exist_ok=True)
    if layout == "package":
        (folder / "__init__.py").write_text("", encoding="utf-8")
        helper_import = "from .helpers import head"
    else:
        helper_import = "from helpers import head"
    (folder / "helpers.py").write_text(HELPER.format(vocab=VOCAB), encoding="utf-8")
    vocab = root / "input.txt"
    vocab.write_text(VOCAB, encoding="utf-8")
    marker = root / "trained.txt"
    # the converted copy reads the same files: absolute paths
    text = HEAD.format(helper_import=helper_import, vocab=str(vocab), marker=str(marker), head="head(hidden)")
    script = folder / "gpt.py"
    script.write_text(textwrap.dedent(text) + WORK[work], encoding="utf-8")
    return script, marker


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("work", list(WORK))
def test_factory_builds_the_model_without_training(tmp_path, capfd, work, spec, layout):
    require_module("torch")
    import torch

    from torch2ms.factory import build

    script, marker = write_script(tmp_path, work, layout)
    model = build(f"{script}:{spec}", tag=f"slice_{work}_{layout}")
    assert isinstance(model, torch.nn.Module)
    assert model.emb.num_embeddings == len(VOCAB)  # the vocabulary read in the with block
    out, err = capfd.readouterr()
    assert not marker.exists() and "TRAINED" not in out, "the script's training ran"
    assert "runs code at import" in err and spec.split("(")[0] in err, err


def test_a_target_that_needs_the_loop_is_imported_whole(tmp_path, capfd):
    require_module("torch")
    from torch2ms.factory import build

    script, marker = write_script(tmp_path, "for_loop", "standalone")
    # `loss` exists only once the loop has run: no slice can build this, the file runs whole as before
    got = build(f"{script}:loss", tag="slice_whole")
    assert marker.read_text(encoding="utf-8").count("trained") >= 3  # (the import probe runs it too)
    assert "runs code at import" not in capfd.readouterr().err
    assert got.ndim == 0


@pytest.mark.parametrize("work", list(WORK))
def test_compare_on_a_script_that_trains_at_import(tmp_path, capfd, work):
    require_module("torch")
    require_module("mindspore")
    script, marker = write_script(tmp_path / "torch", work, "standalone")
    out_dir = tmp_path / "ms"
    assert main(["convert", str(script.parent), "-o", str(out_dir)]) == 0
    capfd.readouterr()
    spec = "gpt.py:Model(hidden=6)"
    args = ["compare", "--torch", f"{script.parent}/{spec}", "--ms", f"{out_dir}/{spec}"]
    code = main([*args, "--input-shape", "2,4", "--input-dtype", "int64", "--no-graph"])
    out, err = capfd.readouterr()
    assert not marker.exists() and "TRAINED" not in out, "a side trained at import"
    assert code == 0 and "MATCH" in out, out + err
    assert err.count("runs code at import") >= 2, err  # said for each side
