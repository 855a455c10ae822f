"""The covering slice ``make test`` runs of a matrix (tests/matrix_support.py): every value of every axis (and
with ``pairs`` every pair the matrix holds) is in it, it is the same in every process, the cases kept by name
stay, and the switch gives the whole matrix back. Checked on generated matrices of every shape the tests use:
tuples, ``pytest.param``, products with holes, one axis, values that are dicts."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import pytest
from matrix_support import FULL_ENV, covering, product


def _matrices():
    rng = random.Random(7)
    for n in range(40):
        sizes = [rng.randint(1, 6) for _ in range(rng.randint(1, 5))]
        cases = list(itertools.product(*[[f"a{i}v{j}" for j in range(s)] for i, s in enumerate(sizes)]))
        if n % 3 == 0:  # a product with holes (rows the matrix leaves out)
            cases = [c for c in cases if rng.random() > 0.3] or cases[:1]
        yield n, cases


@pytest.mark.parametrize(("n", "cases"), list(_matrices()))
@pytest.mark.parametrize("pairs", [False, True])
def test_every_value_and_pair_is_covered(monkeypatch, n, cases, pairs):
    monkeypatch.delenv(FULL_ENV, raising=False)
    got = covering(cases, pairs=pairs)
    assert got == [c for c in cases if c in got]  # a subset, in the matrix's order
    width = len(cases[0])
    for i in range(width):
        assert {c[i] for c in got} == {c[i] for c in cases}
    if pairs:
        for i, j in itertools.combinations(range(width), 2):
            assert {(c[i], c[j]) for c in got} == {(c[i], c[j]) for c in cases}
    if not pairs and width > 1 and len(cases) > 12:
        assert len(got) < len(cases)
    assert covering(cases, pairs=pairs) == got


def test_params_keep_and_dict_values(monkeypatch):
    monkeypatch.delenv(FULL_ENV, raising=False)
    cases = [
        pytest.param(a, {"k": b}, id=f"{a}-{b}") for a, b in itertools.product(range(5), range(5)) if (a, b) != (4, 4)
    ]
    got = covering(cases, keep=lambda p: p.id == "3-3")
    assert "3-3" in {p.id for p in got}
    assert {p.values[0] for p in got} == set(range(5)) and {p.values[1]["k"] for p in got} == set(range(5))
    assert len(got) < len(cases)
    one_axis = [(i,) for i in range(9)]
    assert covering(one_axis, pairs=True) == one_axis  # one axis: every case is its own value


@pytest.mark.parametrize("value", ["1", "all"])
def test_the_switch_and_an_older_one_give_the_whole_matrix(monkeypatch, value):
    cases = list(itertools.product("abc", "xyz", "123"))
    monkeypatch.delenv(FULL_ENV, raising=False)
    monkeypatch.delenv("OLD_MATRIX", raising=False)
    assert len(product("abc", "xyz", "123")) < len(cases)
    monkeypatch.setenv("OLD_MATRIX", value)
    assert covering(cases, legacy=("OLD_MATRIX",)) == cases
    monkeypatch.delenv("OLD_MATRIX")
    monkeypatch.setenv(FULL_ENV, value)
    assert product("abc", "xyz", "123") == cases


def test_the_slice_is_the_same_in_another_process(monkeypatch):
    """xdist workers collect apart: string hashing differs per process, the slice must not."""
    monkeypatch.delenv(FULL_ENV, raising=False)
    code = (
        "import itertools, sys; sys.path.insert(0, sys.argv[1]); from matrix_support import product;"
        "print(product('abcd', 'wxyz', '1234', 'pq'))"
    )
    here = str(Path(__file__).parent)
    runs = {
        subprocess.run(
            [sys.executable, "-c", code, here],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
        ).stdout
        for seed in (1, 2, 3)
    }
    assert len(runs) == 1 and runs == {str(product("abcd", "wxyz", "1234", "pq")) + "\n"}
