"""R25 (issue 15): misuses of `check-data` answer with one line and a documented exit code — an endless
or one-shot iterator never hangs the count of batches per epoch, a user's sys.exit never becomes the
tool's exit code, a broken pipeline file is named with its line."""

from __future__ import annotations

import textwrap

import pytest
from requires_support import require_module

from torch2ms.cli import main

PIPES = textwrap.dedent("""
    import sys

    import numpy as np


    class Finite:
        def __iter__(self):
            for i in range(4):
                yield np.full((2, 3), i, np.float32), np.array([0, 1], np.int64)


    class Endless:
        def __iter__(self):
            i = 0
            while True:  # an endless stream, as an IterableDataset of a sampler that never stops
                yield np.full((2, 3), i % 4, np.float32), np.array([0, 1], np.int64)
                i += 1


    class ExitsWhileRead:
        def __iter__(self):
            yield np.zeros((2, 3), np.float32), np.array([0, 1], np.int64)
            sys.exit(8)


    def one_shot():
        return iter(Finite())


    def quits():
        sys.exit(7)


    def make(n):
        return n
""")


@pytest.fixture()
def pipes(tmp_path, monkeypatch):
    (tmp_path / "pipes.py").write_text(PIPES, encoding="utf-8")
    (tmp_path / "syntax.py").write_text("def f(:\n    pass\n", encoding="utf-8")
    (tmp_path / "a_file").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check-data", *argv])
    out, err = capsys.readouterr()
    return code, " ".join(out.split()), " ".join(err.split())


def test_r25_endless_iterator_is_read_k_batches_and_its_count_left_open(pipes, capsys):
    code, out, err = _run(capsys, "--torch", "pipes.py:Finite", "--ms", "pipes.py:Endless", "--batches", "3")
    assert code == 0, (out, err)  # the first 3 batches agree; the endless count is not a verdict
    assert "batches per epoch: torch 4, MindSpore None" in out
    assert "stopped counting after 100001 batches: the pipeline looks endless" in out


def test_r25_one_shot_iterator_is_not_counted_twice(pipes, capsys):
    code, out, _ = _run(capsys, "--torch", "pipes.py:Finite", "--ms", "pipes.py:one_shot", "--json")
    assert code == 0
    import json

    report = json.loads(out)
    assert report["mindspore"]["batches_per_epoch"] is None and report["mindspore"]["batches_read"] == 2
    assert "one-shot iterator" in report["mindspore"]["count_note"]


def test_r25_sys_exit_in_a_factory_is_exit_2_not_the_users_code(pipes, capsys):
    code, _, err = _run(capsys, "--torch", "pipes.py:Finite", "--ms", "pipes.py:quits")
    assert code == 2 and err.startswith("error:") and "quits() called sys.exit(7)" in err and "pipes.py:" in err


def test_r25_sys_exit_while_reading_is_a_pipeline_finding(pipes, capsys):
    code, out, _ = _run(capsys, "--torch", "pipes.py:Finite", "--ms", "pipes.py:ExitsWhileRead")
    assert code == 1 and "MindSpore pipeline raised" in out and "SystemExit: 8" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--ms", "syntax.py:f"], "syntax.py:1: syntax error"),
        (["--ms", "pipes.py:make"], "make() needs arguments"),
        (["--ms", "pipes.py:Finite", "--out", "a_file"], "--out a_file: is a file"),
        (["--ms", "pipes.py:Finite", "--batches", "0"], "--batches must be at least 1"),
        (["--ms", "nothing"], "expected PATH_OR_MODULE:FACTORY"),
    ],
)
def test_r25_usage_errors_are_one_line_exit_2(pipes, capsys, argv, fragment):
    code, _, err = _run(capsys, "--torch", "pipes.py:Finite", *argv)
    assert code == 2 and err.startswith("error:") and fragment in err and "Traceback" not in err, err


def test_r25_factory_expression_builds_the_pipeline(pipes, capsys):
    code, out, _ = _run(capsys, "--torch", "pipes.py:Finite()", "--ms", "pipes.py:iter(Finite())")
    assert code == 0 and "pipelines agree" in out


@pytest.mark.differential
def test_r25_endless_generator_dataset_does_not_hang(pipes, monkeypatch):
    ds = require_module("mindspore.dataset")
    import numpy as np

    from torch2ms.data import check_data, collect

    monkeypatch.setattr(collect, "COUNT_SECONDS", 1.0)

    def endless():
        i = 0
        while True:  # get_dataset_size() would read this forever
            yield np.full((2, 3), i % 4, np.float32), np.array([0, 1], np.int64)
            i += 1

    dataset = ds.GeneratorDataset(endless, ["x", "y"], shuffle=False)
    report = check_data("pipes.py:Finite", dataset, batches=2)
    assert report.ms.batches_per_epoch is None and "looks endless" in report.ms.count_note
    assert report.ok, report.to_markdown()


def test_r25_progress_counts_the_batches_of_each_side(pipes):
    import io

    from rich.console import Console

    from torch2ms.data import check_data
    from torch2ms.progress import RichProgress

    screen = io.StringIO()
    with RichProgress(Console(file=screen, force_terminal=True, width=100)) as progress:
        report = check_data("pipes.py:Finite", "pipes.py:Finite", batches=3, progress=progress)
    assert report.ok
    shown = screen.getvalue()
    assert "torch: read batches" in shown and "MindSpore: read batches" in shown and "3/3" in shown
