"""R26 compare-train on input it cannot compare: one line that says what went wrong and what to do,
exit 2, no traceback — a wrong path, a script that crashes, one that never steps an optimizer, one that
needs arguments, a converted script that crashes after the torch side ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from torch2ms.cli import main

SMALL = Path(__file__).resolve().parent / "trainrun" / "train_small.py"


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch):
    """The messages hold long paths: a narrow COLUMNS (an xdist worker's) would fold them mid-word."""
    monkeypatch.setenv("COLUMNS", "1000")


def cli(capsys, tmp_path: Path, *args: str) -> tuple[int, str]:
    rc = main(["compare-train", *args, "--out", str(tmp_path / "out")])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return rc, " ".join(text.split())  # rich wraps long lines


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return str(path)


def test_r26_missing_script_is_a_usage_error(capsys, tmp_path):
    rc, text = cli(capsys, tmp_path, "--torch", str(tmp_path / "nope.py"), "--ms", str(SMALL))
    assert rc == 2 and "--torch" in text and "nope.py: no such file" in text


def test_r26_bad_arguments_are_usage_errors(capsys, tmp_path):
    rc, text = cli(capsys, tmp_path, "--torch", str(SMALL), "--ms", str(SMALL), "--steps", "0")
    assert rc == 2 and "--steps 0: give at least 1 step" in text
    rc, text = cli(capsys, tmp_path, "--torch", str(SMALL), "--ms", str(SMALL), "--torch-python", "/no/python")
    assert rc == 2 and "/no/python: no such interpreter" in text


@pytest.mark.differential
def test_r26_crashing_torch_script_names_file_and_line(capsys, tmp_path):
    crash = script(tmp_path, "crash.py", "import torch\n\nweights = torch.ones(3)\nscale = 1 / 0\n")
    rc, text = cli(capsys, tmp_path, "--torch", crash, "--ms", str(SMALL))
    assert rc == 2
    assert (
        f"the torch script crashed before its first optimizer step at {crash}:4: ZeroDivisionError: division by zero"
        in text
    )


@pytest.mark.differential
def test_r26_script_that_never_calls_backward(capsys, tmp_path):
    body = "import torch\n\nmodel = torch.nn.Linear(4, 2)\nprint(model(torch.ones(1, 4)).sum().item())\n"
    rc, text = cli(capsys, tmp_path, "--torch", script(tmp_path, "infer.py", body), "--ms", str(SMALL))
    assert rc == 2 and "ran to its end without an optimizer step (no backward()/step() was seen)" in text


@pytest.mark.differential
def test_r26_script_that_needs_arguments(capsys, tmp_path):
    body = "import argparse\nimport torch\n\np = argparse.ArgumentParser()\np.add_argument('--data', required=True)\np.parse_args()\n"
    rc, text = cli(capsys, tmp_path, "--torch", script(tmp_path, "needs.py", body), "--ms", str(SMALL))
    assert rc == 2
    assert "the torch script exited with status 2 before its first optimizer step" in text
    assert "the following arguments are required: --data" in text and "give them after `--`" in text


@pytest.mark.slow
@pytest.mark.differential
def test_r26_crashing_mindspore_script(capsys, tmp_path):
    ms = script(tmp_path, "train_ms.py", "import mindspore\n\nraise RuntimeError('not ported yet')\n")
    rc, text = cli(capsys, tmp_path, "--torch", str(SMALL), "--ms", ms, "--steps", "2")
    assert rc == 2
    assert (
        f"the MindSpore script crashed before its first optimizer step at {ms}:3: RuntimeError: not ported yet" in text
    )
