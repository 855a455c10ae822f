"""Issue 22, named class 1 and two classes of the training-idiom generator, tested over their spellings.

- **eval-only-after-training** (class 1): a torch module starts in training mode, a MindSpore cell in
  inference mode. A model whose first step runs in torch's default mode (``eval()`` only after training,
  ``eval()`` then ``train()`` at each epoch's end, no mode call at all) must get ``set_train(True)`` before
  the step, on the model's own expression wherever it lives; one whose mode the script sets before the
  first step must not.
- **mode-switch-on-attribute-model**: ``self.model.train()`` in a Trainer whose class never calls
  ``self.model.parameters()`` (in the method that holds the step, or in ``fit()`` around ``train_epoch()``),
  ``models['net'].train()``, ``nets[0].train(mode=False)``: every mode switch of the trained model becomes
  ``set_train`` (a Cell has no ``train``: AttributeError).
- **next-batch-inside-step** (class 10): ``x, y = next(it)`` fetches the batch on the host; it must stay in
  the loop, not go into the compiled ``forward_fn`` with the iterator as the step's argument — over an
  iterator per epoch, a list's iterator, ``itertools.cycle``, ``next(iter(loader))`` each step, a ``while
  True`` loop ended by StopIteration, ``batch = next(it)`` then unpacked.

Matrix: where the model is built and held (module level, a function, ``main()``, a Trainer's attribute with
the loop in one method or split over two, a dict, a list) × where its mode is switched × how the batch is fetched. Every case is converted and checked
statically (``make test`` runs a pairwise covering slice, ``TORCH2MS_FULL_MATRIX=1`` all 392); a covering
slice runs through the real compare-train (PyTorch and MindSpore, each in its own process): SAME.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest
from matrix_support import covering
from requires_support import require_module
from train_places_support import FETCHES, INSERTS, MODES, PLACES, inserts, model_expr, script

from torch2ms.convert import convert_tree

MATRIX = list(itertools.product(PLACES, MODES, FETCHES))
STATIC = covering(MATRIX, pairs=True)
# every value of every axis once, and the rows the generator first failed on
RUN = covering(
    MATRIX,
    keep=lambda c: (
        c in {("trainer", "train_only", "for"), ("module", "eval_after", "for"), ("module", "before", "iter_epoch")}
    ),
)
TRAIN_MODE = ".set_train(True)  # torch2ms: a torch module starts in training mode"


def _convert(root: Path, source: str) -> str:
    (root / "src").mkdir(parents=True)
    (root / "src" / "train.py").write_text(source, encoding="utf-8")
    convert_tree(str(root / "src"), str(root / "out"))
    return (root / "out" / "train.py").read_text(encoding="utf-8")


def _functions(tree: ast.Module, name: str) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith(name)]


def _ids(cases):
    return ["-".join(c) for c in cases]


@pytest.mark.parametrize(("place", "mode", "fetch"), STATIC, ids=_ids(STATIC))
def test_converted_loop_trains_its_model_in_training_mode_and_fetches_on_the_host(tmp_path, place, mode, fetch):
    out = _convert(tmp_path, script(place, mode, fetch))
    tree = ast.parse(out)
    assert "not converted" not in out and "import torch" not in out, out
    # every mode switch of the model is a Cell's: train()/eval() are left on nothing
    left = re.findall(r"^.*\.(?:train|eval)\(.*$", out, re.M)
    assert not left, out
    # set_train(True) written exactly when torch's first step runs in the default mode, on the model
    inserted = re.findall(r"^\s*(.*?)" + re.escape(TRAIN_MODE), out, re.M)
    assert inserted == ([model_expr(place)] if inserts(place, mode) else []), out
    # the step is converted, and the batch is fetched outside its differentiated function
    forward = _functions(tree, "forward_fn")
    assert forward, out
    for fn in forward:
        assert not any(isinstance(n, ast.Name) and n.id in ("next", "iter") for n in ast.walk(fn)), out
        assert {a.arg for a in fn.args.args} <= {"x", "y", "batch"}, out
    fetches = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "next"]
    assert bool(fetches) == (fetch != "for"), out


def test_matrix_covers_every_place_mode_and_fetch():
    for k, axis in enumerate((PLACES, MODES, FETCHES)):
        assert {c[k] for c in STATIC} == set(axis)
        assert {c[k] for c in RUN} == set(axis)
    assert INSERTS < set(MODES)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("place", "mode", "fetch"), RUN, ids=_ids(RUN))
def test_converted_loop_trains_the_same(tmp_path, place, mode, fetch):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = script(place, mode, fetch)
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "c" / "out" / "train.py"),
        steps=5,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 5
