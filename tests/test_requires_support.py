"""A green run means it ran: what CI has (the frameworks, the real-code kit, ../shared/reference) is
asked for through tests/requires_support.py, which FAILS in CI (``CI`` set) and skips elsewhere, and
the run ends with one line saying what was skipped and why.

The matrix: each kind of requirement × where it is asked (module level, a test, a fixture) × CI set
or not, run as a real pytest session over generated test files with the thing hidden; and the
static rule that no test skips by hand for one of those reasons."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# What each requirement asks for, with the thing hidden (a folder that is not there, a module that is not).
ASKS = {
    "module": 'require_module("torch2ms_no_such_module")',
    "package_dir": 'require_package_dir("torch2ms_no_such_module")',
    "kit": "require_kit()",
    "kit_file": 'require_kit(CORPUS / "karpathy" / "minGPT")',
    "reference": 'require_reference(REFERENCE / "torch_api_priority.tsv")',
}
HEADER = "import pytest\nfrom requires_support import CORPUS, REFERENCE, require_kit, require_module, require_package_dir, require_reference\n"


def _source(ask: str, where: str) -> str:
    if where == "module":
        return HEADER + f"{ask}\n\ndef test_it():\n    pass\n"
    if where == "fixture":
        return HEADER + f"@pytest.fixture\ndef thing():\n    return {ask}\n\ndef test_it(thing):\n    pass\n"
    return HEADER + f"def test_it():\n    {ask}\n"


def _pytest(folder: Path, ci: bool, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    env |= {
        "PYTHONPATH": str(TESTS),
        "TORCH2MS_REALCODE": str(folder / "no-kit-here"),
        "TORCH2MS_REFERENCE": str(folder / "no-reference-here"),
    }
    if ci:
        env["CI"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rs", *args]
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """One test file per (requirement, place it is asked), beside a copy of tests/conftest.py."""
    folder = tmp_path_factory.mktemp("requires")
    (folder / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (folder / "pytest.ini").write_text("[pytest]\n")
    for name, ask in ASKS.items():
        for where in ("module", "test", "fixture"):
            (folder / f"test_{name}_{where}.py").write_text(_source(ask, where))
    return folder


CASES = [(name, where) for name in ASKS for where in ("module", "test", "fixture")]


def test_in_ci_every_missing_expected_thing_fails_the_run(generated):
    res = _pytest(generated, True, "-q", "--tb=line", "--continue-on-collection-errors")
    assert res.returncode == 1, res.stdout + res.stderr
    counts = re.search(r"(\d+) failed", res.stdout), re.search(r"(\d+) errors?", res.stdout)
    failed = sum(int(m.group(1)) for m in counts if m)
    assert failed == len(CASES), res.stdout  # module level: a collection error; fixture: a setup error
    assert " skipped" not in res.stdout.splitlines()[-1], res.stdout
    assert res.stdout.count("CI has it, so this test must run") >= len(CASES), res.stdout


def test_outside_ci_they_skip_and_the_run_says_what_and_why(generated):
    res = _pytest(generated, False, "-q", "--tb=short")
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(rf"\b{len(CASES)} skipped\b", res.stdout), res.stdout
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("skipped ")]
    assert len(lines) == 1, res.stdout
    expected = (
        len([c for c in CASES if c[0] in ("module", "package_dir")]),
        len([c for c in CASES if c[0].startswith("kit")]),
    )
    assert f"missing module {expected[0]} (torch2ms_no_such_module)" in lines[0]
    assert f"missing kit {expected[1]}" in lines[0] and "missing reference 3" in lines[0]
    assert "in CI (CI set) the expected ones fail instead" in lines[0]


def test_a_real_test_fails_in_ci_when_the_reference_is_hidden(tmp_path):
    """The rule holds on the suite itself: tests/test_kb_data.py's priority-list test with the
    reference hidden fails with CI set and skips without."""
    node = "tests/test_kb_data.py::test_r1_every_priority_torch_api_has_an_entry"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    env["TORCH2MS_REFERENCE"] = str(tmp_path / "hidden")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--tb=line", node]
    ci = subprocess.run(cmd, cwd=ROOT, env=env | {"CI": "1"}, capture_output=True, text=True, timeout=300)
    user = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert ci.returncode == 1 and "1 failed" in ci.stdout, ci.stdout
    assert user.returncode == 0 and "1 skipped" in user.stdout and "missing reference 1" in user.stdout, user.stdout


# Skips that stay by hand: what a machine may legitimately lack.
LEGITIMATE = ("GPU", "FIFO", "chromium")
HAND_SKIP = re.compile(r"pytest\.(importorskip|skip)\(|pytest\.mark\.skipif\(")
HAND_PATH = re.compile(r'"shared"\s*/\s*"(realcode|reference)"')


def test_no_test_skips_by_hand_for_what_ci_has():
    """importorskip, a hand skip or a hand-built ../shared path outside requires_support.py would be a
    skip CI turns green again; only a GPU, a FIFO or Chromium may be skipped by hand."""
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        if "golden" in path.parts or path.name in ("requires_support.py", Path(__file__).name):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            near = " ".join(lines[max(0, i - 2) : i + 2])
            if HAND_SKIP.search(line) and not any(word in near for word in LEGITIMATE):
                wrong.append(f"{path.relative_to(ROOT)}:{i + 1}: {line.strip()}")
            if HAND_PATH.search(line) and path.name != "fuzz_convert.py":
                wrong.append(f"{path.relative_to(ROOT)}:{i + 1}: {line.strip()}")
    assert wrong == [], "ask tests/requires_support.py instead:\n" + "\n".join(wrong)
