"""Issue 22, class 2: ``zero_grad()`` where the loop rewrite does not see it.

The training-loop stage turns the ``zero_grad()`` calls of the loop it rewrites into its gradient
bookkeeping; a call elsewhere stayed torch's, and MindSpore's optimizers and cells have no such method
(``AttributeError: The 'SGD' object has no attribute 'zero_grad'``): before the loop (gradient accumulation,
a ``zero_grad()`` after each ``step()``), in a helper (``def reset_grad(): d_opt.zero_grad(); g_opt.zero_grad()``),
called before the loop and after the step. They go now: MindSpore keeps no gradients on the parameters, and
the rewritten loop starts from none.

Generated matrix (tests/fuzz/train_idioms.py): the zero_grad spelling x where the loop lives (module level, a
function, ``main()``, a ``while`` with a step counter, ``enumerate(loader, 1)``, a Trainer class); statically,
no ``zero_grad`` is left in any conversion; a slice of it, and a GAN whose helper clears both networks,
trained by torch and by the conversion with compare-train: SAME (accumulation accumulates: the losses and the
parameters after the steps agree).
"""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))
from train_idioms import make_case

# axis=value of each spelling: where the zero_grad sits
SPELLINGS = {
    "after_step": ("zero_grad", "after_step"),  # before the loop and after each step()
    "helper": ("zero_grad", "helper"),  # reset_grad() before each forward
    "helper_after_step": ("zero_grad", "helper_after_step"),  # reset_grad() before the loop and after step()
    "before_loop": ("zero_grad", "before_loop"),  # zero_grad(set_to_none=True) before the loop, and in it
    "accumulation": ("clip", "accum"),  # before the loop, and under `if (i + 1) % 2 == 0:` after step()
    "accumulation_clip": ("clip", "accum_clip"),
}
PLACES = ["module", "function", "main", "while", "enumerate1", "trainer"]
# A module-level helper cannot reach main()'s local optimizer: that pair is no torch script.
CASES = [(s, p) for s, p in itertools.product(SPELLINGS, PLACES) if not (s.startswith("helper") and p == "main")]


def _case(spelling: str, place: str, model: str = "mlp", seed: int = 3):
    axis, value = SPELLINGS[spelling]
    return make_case(axis, value, model, seed, extra={"loop": place})


def _convert(tmp_path: Path, text: str) -> Path:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "train.py").write_text(text, encoding="utf-8")
    convert_tree(str(tmp_path / "torch"), str(tmp_path / "ms"))
    return tmp_path / "ms" / "train.py"


@pytest.mark.parametrize(("spelling", "place"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_no_zero_grad_call_is_left(tmp_path, spelling, place):
    case = _case(spelling, place)
    assert "zero_grad" in case.text and (place == "module" or f"loop-{place}" in case.name)
    out = _convert(tmp_path, case.text).read_text(encoding="utf-8")
    ast.parse(out)
    calls = [n for n in ast.walk(ast.parse(out)) if isinstance(n, ast.Attribute) and n.attr == "zero_grad"]
    assert not calls, out
    assert "not converted" not in out, out


def test_gan_helper_clearing_both_networks_is_left_empty(tmp_path):
    case = make_case("gan", "reset_grad", "gan", 5)
    out = _convert(tmp_path, case.text).read_text(encoding="utf-8")
    assert "zero_grad" not in out, out
    helper = next(n for n in ast.parse(out).body if isinstance(n, ast.FunctionDef) and n.name == "reset_grad")
    assert [type(s) for s in helper.body] == [ast.Pass], out


def test_zero_grad_of_something_else_stays(tmp_path):
    """A receiver the file never shows as an optimizer or a module (a user's object with its own zero_grad)."""
    text = make_case("zero_grad", "after_step", "mlp", 3).text + "\n\nclass Meter:\n    def zero_grad(self):\n"
    text += "        self.n = 0\n\n\nmeter = Meter()\nmeter.zero_grad()\n"
    out = _convert(tmp_path, text).read_text(encoding="utf-8")
    assert "meter.zero_grad()" in out and "optimizer.zero_grad()" not in out, out


DIFFERENTIAL = [
    ("after_step", "module", "cnn"),
    ("helper_after_step", "function", "mlp"),
    ("before_loop", "main", "rnn"),
    ("accumulation", "while", "mlp"),
    ("accumulation_clip", "enumerate1", "cnn"),
    ("helper", "while", "rnn"),
]


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(("spelling", "place", "model"), DIFFERENTIAL, ids=["-".join(c) for c in DIFFERENTIAL])
def test_trains_as_torch(tmp_path, spelling, place, model):
    require_module("torch")
    require_module("mindspore")
    from fuzz_train import run_case

    res = run_case(_case(spelling, place, model, seed=11), tmp_path)
    assert res.status == "same", res.cause


@pytest.mark.slow
@pytest.mark.differential
def test_gan_with_reset_grad_trains_as_torch(tmp_path):
    require_module("torch")
    require_module("mindspore")
    from fuzz_train import run_case

    res = run_case(make_case("gan", "reset_grad", "gan", 5), tmp_path)
    assert res.status == "same", res.cause
