"""make test's lean tier (tests/lean_support.py): which cases of a function run within its time budget."""

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

from lean_support import BUDGET_S, lean_selection

TESTS = Path(__file__).resolve().parent


def _items(name, axes, marker=None):
    out = []
    for values in itertools.product(*axes.values()):
        params = dict(zip(axes, values))
        out.append(
            SimpleNamespace(
                nodeid=f"tests/test_x.py::{name}[{'-'.join(map(str, values))}]",
                originalname=name,
                callspec=SimpleNamespace(params=params),
                get_closest_marker=lambda m, marker=marker: object() if m == marker else None,
            )
        )
    return out


def test_a_costly_function_runs_what_its_budget_allows_covering_each_value_first():
    items = _items("test_m", {"opt": ["sgd", "adam", "rms", "adamw"], "place": ["module", "function", "method"]})
    kept = lean_selection(items, {"tests/test_x.py::test_m": 5.0}, budget=20.0)
    assert len(kept) == 4
    assert {k.callspec.params["opt"] for k in kept} == {"sgd", "adam", "rms", "adamw"}
    assert {k.callspec.params["place"] for k in kept} == {"module", "function", "method"}
    assert [k.nodeid for k in kept] == [i.nodeid for i in items if i in kept]  # collected order kept


def test_at_least_one_case_runs_and_cheap_unknown_or_every_case_functions_run_whole():
    costly = _items("test_costly", {"a": [1, 2, 3]})
    cheap = _items("test_cheap", {"a": [1, 2, 3]})
    unknown = _items("test_unknown", {"a": [1, 2, 3]})
    claims = _items("test_claims", {"a": [1, 2, 3]}, marker="every_case")
    table = {
        "tests/test_x.py::test_costly": 60.0,
        "tests/test_x.py::test_cheap": 1.0,
        "tests/test_x.py::test_claims": 60.0,
    }
    kept = lean_selection(costly + cheap + unknown + claims, table, budget=20.0)
    assert sum(k.originalname == "test_costly" for k in kept) == 1
    assert [k for k in kept if k.originalname != "test_costly"] == cheap + unknown + claims


PROJECT_TEST = """
import pytest

@pytest.mark.parametrize("a", range(6))
def test_m(a):
    pass
"""

PROJECT_CONFTEST = """
import pytest
from lean_support import lean_items

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    lean_items(config, items)
"""


def test_make_test_deselects_and_make_test_full_runs_everything(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(PROJECT_CONFTEST))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text(textwrap.dedent(PROJECT_TEST))
    table = tmp_path / "seconds.tsv"
    table.write_text(f"# header\ntests/test_m.py::test_m\t{BUDGET_S * 0.4}\n")  # room for 2 of the 6 cases
    env = {**os.environ, "PYTHONPATH": str(TESTS), "TORCH2MS_CASE_SECONDS": str(table)}
    env.pop("TORCH2MS_FULL_MATRIX", None)

    def run(**extra):
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        out = subprocess.run(cmd, cwd=tmp_path, env={**env, **extra}, capture_output=True, text=True, timeout=120)
        return out.stdout + out.stderr

    assert "2 passed, 4 deselected" in run()
    assert "6 passed" in run(TORCH2MS_FULL_MATRIX="1")
