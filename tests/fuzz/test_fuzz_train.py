"""Issue 22 §2: the training-idiom generator in CI — a fixed-seed slice of generated training scripts
(train_idioms.py), each converted by the real ``convert_tree`` and compared with its conversion by the
real ``compare_train`` (PyTorch and MindSpore each in its own process); the property is SAME. An idiom
listed in ``train_idioms.KNOWN`` must still fail (under its class name): one that passes fails the test,
so the list shrinks. ``make fuzz-train`` runs the long campaign (fuzz_train.py)."""

from __future__ import annotations

import ast
import random

import pytest
from fuzz_train import run_campaign, summary
from matrix_support import full_matrix
from train_idioms import AXES, BASE, KNOWN, MODELS, idioms, make_case, make_cases

# make test's lean tier runs 6 generated scripts (~15 s each on 2 cores); make test-full 12.
SEED, CASES = 22, 12 if full_matrix() else 6


def slice_cases():
    """CASES idioms drawn with SEED (the base among them), each over a drawn base."""
    rng = random.Random(SEED)
    picked = [("loop", "module"), *rng.sample(idioms(), CASES - 1)]
    return [make_case(a, v, rng.choice(MODELS), rng.randrange(1000), rng.choice([4, 8])) for a, v in picked]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return run_campaign(slice_cases(), jobs=2, workdir=tmp_path_factory.mktemp("fuzz-train"))


def test_i22_generated_scripts_parse_and_vary_one_idiom():
    cases = make_cases(1, 3 * (len(idioms()) + 1))
    assert {c.idiom for c in cases} >= {f"{a}={v}" for a, v in idioms()}
    assert {c.model for c in cases} >= {*MODELS, "gan"}
    for c in cases:
        ast.parse(c.text, c.name)
        assert c.value != BASE[c.axis] or c.idiom == "loop=module"
    assert len({c.name for c in cases}) == len(cases)


def test_i22_known_table_names_real_idioms_and_classes():
    for key, cls in KNOWN.items():
        idiom, _, model = key.partition("@")
        axis, _, value = idiom.partition("=")
        assert value in AXES.get(axis, ()) and value != BASE[axis], key
        assert model in ("", *MODELS, "gan"), key
        assert cls.strip(), key


@pytest.mark.slow
@pytest.mark.differential
def test_i22_slice_trains_the_same_or_is_known(campaign):
    assert len({r.idiom.split("=")[0] for r in campaign}) >= min(6, CASES - 1)
    new = [r for r in campaign if not r.ok and not r.known]
    fixed = [r for r in campaign if r.ok and r.known]
    assert not new, summary(campaign)
    assert not fixed, "known classes now SAME, remove them from KNOWN: " + ", ".join(
        f"{r.idiom} ({r.known})" for r in fixed
    )
