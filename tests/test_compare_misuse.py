"""R23/R30 (issue 15): every misuse of `compare` answers with one clear line on stderr and exit code 2 —
never a traceback, never the user's own sys.exit code, never a hang. Each case is a regression test.

None of these cases gets as far as comparing numbers: they are refused while the options are checked,
the user's module is imported or its factory called, or the torch side runs.
"""

from __future__ import annotations

import textwrap

import pytest
from requires_support import require_module

from torch2ms.cli import main

require_module("torch")

MODELS = textwrap.dedent("""
    import sys

    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self, width=4):
            super().__init__()
            self.fc = nn.Linear(6, width)

        def forward(self, x):
            return self.fc(x)


    class Needs(nn.Module):
        def __init__(self, n_classes):
            super().__init__()
            self.fc = nn.Linear(6, n_classes)

        def forward(self, x):
            return self.fc(x)


    def boom():
        raise RuntimeError("the factory blew up")


    def quits():
        sys.exit(3)


    class ExitsInForward(nn.Module):
        def forward(self, x):
            sys.exit(4)
""")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("misuse")
    (d / "models.py").write_text(MODELS, encoding="utf-8")
    (d / "syntax.py").write_text("import torch.nn as nn\nclass Net(nn.Module)\n    pass\n", encoding="utf-8")
    (d / "imports.py").write_text("import torch.nn as nn\nimport no_such_package_t2m\n", encoding="utf-8")
    (d / "exits.py").write_text("import sys\nsys.exit(5)\n", encoding="utf-8")
    (d / "raises.py").write_text("x = 1\nraise ValueError('module-level failure')\n", encoding="utf-8")
    (d / "trains.py").write_text(
        "import time\n\nfor epoch in range(10**6):  # a training loop without a __main__ guard\n    time.sleep(0.01)\n",
        encoding="utf-8",
    )
    (d / "garbage.pth").write_bytes(b"not a checkpoint at all")
    (d / "a_file").write_text("", encoding="utf-8")
    return d


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["compare", *argv, "--no-graph"])
    err = capsys.readouterr().err
    return code, " ".join(err.split())  # rich wraps long lines


def _refused(capsys, argv: list[str], *fragments: str) -> str:
    code, err = _run(capsys, *argv)
    assert code == 2, (argv, err)
    assert err.startswith("error:") and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


@pytest.mark.parametrize(
    "torch_spec, fragments",
    [
        ("syntax.py:Net", ["syntax.py:2: syntax error", "fix the file"]),
        ("imports.py:Net", ["imports.py:2:", "No module named 'no_such_package_t2m'", "install the missing package"]),
        ("exits.py:Net", ["exits.py:2:", "called sys.exit(5)", "if __name__ == '__main__':"]),
        ("raises.py:Net", ["raises.py:2:", "ValueError: module-level failure"]),
        ("models.py:Needs", ["Needs() needs arguments", "'n_classes'", "models.py:Needs(...)"]),
        ("models.py:boom", ["models.py:", "boom() failed: RuntimeError: the factory blew up"]),
        ("models.py:quits", ["called sys.exit(3)"]),
        ("models.py:ExitsInForward", ["the torch model fails on this input", "sys.exit(4)"]),
        ("models.py:Net(width=", ["is neither a name nor a Python expression"]),
        ("models.py:Nope", ["has no attribute 'Nope'"]),
    ],
)
def test_r23_broken_user_module_or_factory_is_one_line_exit_2(files, capsys, monkeypatch, torch_spec, fragments):
    monkeypatch.chdir(files)
    _refused(capsys, ["--torch", torch_spec, "--ms", "models.py:Net", "--input-shape", "2,6"], *fragments)


@pytest.mark.parametrize(
    "extra, fragments",
    [
        (["--input-shape", "100000,100000,1000"], ["10,000,000,000,000 elements", "keep an input under"]),
        (["--input-shape", "2,0"], ["every dimension must be a positive integer"]),
        (["--input-shape", "2,6", "--weights", "garbage.pth"], ["--weights", "torch cannot read it as a checkpoint"]),
        (["--input-shape", "2,6", "--weights", "missing.pth"], ["--weights missing.pth: no such file"]),
        (["--input-shape", "2,6", "--out", "a_file"], ["--out a_file: is a file"]),
        (["--input-shape", "2,6", "--out", "a_file/sub"], ["is a file, so the directory cannot be created"]),
        (["--input-shape", "2,6", "--loss", "hinge"], ["--loss 'hinge': choose one of ce, ce:AXIS, mse, l1, model"]),
        (["--input-shape", "2,6", "--lr", "nan"], ["--lr nan: must be a finite number"]),
        (["--input-shape", "2,6", "--input-dtype", "complex64"], ["--input-dtype 'complex64'"]),
    ],
)
def test_r23_bad_options_are_refused_before_any_model_runs(files, capsys, monkeypatch, extra, fragments):
    monkeypatch.chdir(files)
    _refused(capsys, ["--torch", "models.py:Net", "--ms", "models.py:Net", *extra], *fragments)


def test_r26_negative_train_steps_is_a_usage_error(files, capsys, monkeypatch):
    from torch2ms.align import CompareOptions, CompareUsageError, TrainOptions, compare_models

    monkeypatch.chdir(files)
    with pytest.raises(SystemExit) as exc:  # argparse's own refusal: exit 2 with the reason
        main(
            [
                "compare",
                "--torch",
                "models.py:Net",
                "--ms",
                "models.py:Net",
                "--input-shape",
                "2,6",
                "--train-steps",
                "-3",
            ]
        )
    assert exc.value.code == 2
    assert "--train-steps: -3: give 0 (no training) or a positive number" in capsys.readouterr().err
    with pytest.raises(CompareUsageError, match="--train-steps -3"):  # the library says the same
        compare_models("models.py:Net", "models.py:Net", CompareOptions(input_shapes=[(2, 6)], train=TrainOptions(-3)))


def test_r23_file_that_trains_at_import_is_stopped_with_advice(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    err = _refused(
        capsys,
        ["--torch", "trains.py:Net", "--ms", "models.py:Net", "--input-shape", "2,6", "--import-timeout", "3"],
        "importing it did not finish within 3 s",
        "a loop on line 3",
        "if __name__ == '__main__':",
        "--import-timeout",
    )
    assert "trains.py" in err


def test_r23_import_check_reads_the_source_before_spawning_anything(tmp_path):
    from torch2ms.import_probe import code_run_at_import

    quiet = tmp_path / "model.py"
    quiet.write_text(
        'import torch\n"""doc"""\nlogger = __import__("logging").getLogger(__name__)\nWIDTH = 4\n'
        "def build():\n    return 1\n\nif __name__ == '__main__':\n    for i in range(3):\n        build()\n",
        encoding="utf-8",
    )
    assert code_run_at_import(quiet) is None  # definitions, constants and a guarded script: no child import
    (tmp_path / "helpers.py").write_text("import argparse\nargs = argparse.ArgumentParser().parse_args()\n")
    script = tmp_path / "train.py"
    script.write_text("from helpers import args\nclass Net: pass\n", encoding="utf-8")
    assert code_run_at_import(script) == "helpers.py: a call to argparse.ArgumentParser().parse_args() on line 2"


@pytest.mark.parametrize("command", ["compare", "check-data", "export"])
def test_r30_help_documents_exit_codes(capsys, command):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text and "  0  " in text and "  1  " in text and "  2  usage or input error" in text


@pytest.mark.differential
def test_r30_json_stdout_holds_only_the_report_when_the_model_prints(tmp_path, capsys, monkeypatch):
    import json

    require_module("mindspore")
    chatty = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    chatty += "        self.fc = nn.Linear(6, 4)\n\n    def forward(self, x):\n        print('shape', x.shape)\n"
    chatty += "        return self.fc(x)\n"
    port = "import mindspore.nn as nn\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
    port += "        self.fc = nn.Dense(6, 4)\n\n    def construct(self, x):\n        print('shape', x.shape)\n"
    port += "        return self.fc(x)\n"
    (tmp_path / "t.py").write_text(chatty, encoding="utf-8")
    (tmp_path / "m.py").write_text(port, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # stderr counts as a terminal: still no progress with --json
    code = main(["compare", "--torch", "t.py:Net", "--ms", "m.py:Net", "--input-shape", "2,6", "--no-graph", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["status"] == "match"  # the model's prints went to stderr
    assert "shape" in err and "torch side" not in err
