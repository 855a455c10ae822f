"""R23/R26 (issue 13): `compare` on a real model as its project writes it — pytorch/examples' minGPT-ddp GPT,
read from ../shared/realcode at test time and converted by torch2ms there. Its factory takes a config
object (an expression evaluated in the module), its forward takes (idx, targets) and returns (logits, loss),
its inputs are token ids that must stay below the vocabulary of its first Embedding.

Real torch and real MindSpore run on the same seeded inputs and weights, through the command line as a
user types it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from requires_support import CORPUS, require_kit, require_module

from torch2ms.cli import main
from torch2ms.convert import convert_tree

pytestmark = pytest.mark.differential

EXAMPLES = CORPUS / "pytorch" / "examples"
MINGPT = EXAMPLES / "distributed" / "minGPT-ddp" / "mingpt"
CONFIG = "n_layer=2, n_head=2, n_embd=32, vocab_size=64, block_size=16, embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0"
GPT = f"GPT(GPTConfig(model_type=None, {CONFIG}))"


@pytest.fixture(scope="module")
def gpt(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    require_kit(MINGPT)
    d = tmp_path_factory.mktemp("mingpt")
    shutil.copytree(MINGPT, d / "torch_side")
    report = convert_tree(str(d / "torch_side"), str(d / "ms_side"))
    assert not report.failed, report.failed
    return d


def _compare(capsys, gpt: Path, factory: str, *argv: str) -> tuple[int, str, str]:
    code = main(
        ["compare", "--torch", f"{gpt}/torch_side/model.py:{factory}", "--ms", f"{gpt}/ms_side/model.py:{factory}"]
        + list(argv)
    )
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


@pytest.mark.slow
def test_r26_realcode_gpt_trains_with_the_loss_it_returns(gpt, capsys):
    # (idx, targets): both int64, drawn below the 64-row token Embedding; the model's own loss is element 1
    argv = ["--input-shape", "2,8", "--input-shape", "2,8", "--input-dtype", "int64", "--no-graph", "--json"]
    argv += ["--train-steps", "3", "--loss", "model", "--output-index", "1", "--optimizer", "adamw", "--lr", "1e-3"]
    code, out, err = _compare(capsys, gpt, GPT, *argv)
    assert "Traceback" not in err
    rep = json.loads(out)
    assert code == 0 and rep["status"] == "match", (rep["first_divergence"], rep["problems"], err)
    tr = rep["training"]
    assert tr["loss"] == "model" and len(tr["ms_losses"]) == len(tr["torch_losses"]) == 3
    assert max(tr["loss_rel"]) <= tr["loss_tol"]  # the verdict and the tolerance it prints agree


@pytest.mark.slow
def test_r26_realcode_gpt_sequence_targets_on_the_last_axis(gpt, capsys):
    # logits (batch, time, vocab): cross-entropy over the last axis against seeded (batch, time) targets
    argv = ["--input-shape", "2,8", "--input-dtype", "int64", "--no-graph", "--json"]
    argv += ["--train-steps", "2", "--loss", "ce:-1", "--output-index", "0"]
    code, out, err = _compare(capsys, gpt, GPT, *argv)
    rep = json.loads(out)
    assert code == 0 and rep["status"] == "match", (rep["first_divergence"], rep["problems"], err)
    assert rep["training"]["loss"] == "ce:-1" and len(rep["training"]["ms_losses"]) == 2


def test_r23_realcode_gpt_factory_that_fails_is_one_line(gpt, capsys):
    bad = "GPT(GPTConfig(model_type=None, n_layer=2, n_head=3, n_embd=32, vocab_size=64, block_size=16))"
    code, _, err = _compare(capsys, gpt, bad, "--input-shape", "2,8", "--input-dtype", "int64", "--no-graph")
    assert code == 2 and err.startswith("error:") and "Traceback" not in err, err
    assert "model.py:41:" in err and "AssertionError" in err, err  # n_embd % n_head: the user's own assert


def test_r23_realcode_gpt_input_longer_than_its_block_is_named(gpt, capsys):
    code, _, err = _compare(capsys, gpt, GPT, "--input-shape", "1,20", "--input-dtype", "int64", "--no-graph")
    assert code == 2 and err.startswith("error:") and "Traceback" not in err, err
    assert "Cannot forward sequence of length 20, block size is only 16" in err, err
