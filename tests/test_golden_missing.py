"""A missing golden file fails unless --update-golden is given (tests/test_golden.py): for each
expected file of a case (expected.py, expected_changes.txt) deleted, a run without the flag fails
and writes nothing, a run with it writes the file and passes, and the run after that passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CASE = "gpt_block"


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(TESTS)
    node = f"test_golden.py::test_r6_golden_file_converts_to_its_pinned_output[{CASE}]"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--tb=line", node, *args]
    return subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("deleted", ["expected.py", "expected_changes.txt"])
def test_a_deleted_golden_file_fails_until_update_golden_writes_it(tmp_path, deleted):
    shutil.copy(TESTS / "test_golden.py", tmp_path)
    shutil.copy(TESTS / "conftest.py", tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    shutil.copytree(TESTS / "golden" / CASE, tmp_path / "golden" / CASE)
    target = tmp_path / "golden" / CASE / deleted
    pinned = target.read_text(encoding="utf-8")
    target.unlink()

    plain = _pytest(tmp_path)
    assert plain.returncode == 1 and "is missing: run with --update-golden" in plain.stdout, plain.stdout
    assert not target.exists()

    updated = _pytest(tmp_path, "--update-golden")
    assert updated.returncode == 0, updated.stdout
    assert target.read_text(encoding="utf-8") == pinned  # the converter's output is the pinned file

    again = _pytest(tmp_path)
    assert again.returncode == 0, again.stdout
