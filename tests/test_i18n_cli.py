"""Chinese and English (issue 13, "Language"): the one-line refusals of compare (options, inputs, the
output index), of the factory specs, of compare-train and of weights (a file that is not a checkpoint),
the --runtime help, and the progress labels of convert and weights — Chinese under zh, the exact
English text under en."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

LOCALE_VARS = ("TORCH2MS_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def speak(monkeypatch):
    for var in LOCALE_VARS:
        monkeypatch.delenv(var, raising=False)
    return lambda lang: monkeypatch.setenv("TORCH2MS_LANG", lang)


def _refusal(call) -> str:
    with pytest.raises(Exception) as raised:
        call()
    return str(raised.value)


def _run(args: list[str], cwd: Path, lang: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS}
    return subprocess.run(
        [sys.executable, "-m", "torch2ms", "--lang", lang, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def test_compare_option_refusals_in_chinese_and_english(speak):
    from torch2ms.align.options import LossSpec, TrainOptions, check_input_shapes

    speak("zh")
    assert _refusal(lambda: LossSpec.parse("hinge")) == "--loss 'hinge'：请从 ce、ce:AXIS、mse、l1、model 中选择"
    assert _refusal(lambda: TrainOptions(steps=-1).validate()) == "--train-steps -1：请给出 0（不训练）或正数"
    assert _refusal(lambda: check_input_shapes([[2, 3], [4]], ["float32", "int64", "int64"])) == (
        "3 个 --input-dtype 值对应 2 个 --input-shape 值：请给出一个，或每个输入一个"
    )
    speak("en")
    assert _refusal(lambda: LossSpec.parse("hinge")) == "--loss 'hinge': choose one of ce, ce:AXIS, mse, l1, model"
    assert _refusal(lambda: TrainOptions(steps=-1).validate()) == (
        "--train-steps -1: give 0 (no training) or a positive number"
    )
    assert _refusal(lambda: check_input_shapes([[2, 3], [4]], ["float32", "int64", "int64"])) == (
        "3 --input-dtype values for 2 --input-shape values: give one, or one per input"
    )


def test_output_index_and_factory_refusals_in_chinese_and_english(speak):
    from torch2ms.align.outputs import select_output
    from torch2ms.factory import parse_spec

    def is_tensor(x):
        return isinstance(x, float)

    speak("zh")
    assert _refusal(lambda: select_output({"logits": 1.0, "loss": 2.0}, "acc", is_tensor)) == (
        "--output-index 'acc'：模型输出的 dict 的键为 ['logits', 'loss']"
    )
    assert _refusal(lambda: select_output((1.0, "x"), 1, is_tensor)) == "--output-index 1：该元素是 str，不是张量"
    assert _refusal(lambda: parse_spec("model.py:")).startswith(
        "'model.py:'：冒号后面没有内容；请写出工厂函数名，例如 "
    )
    speak("en")
    assert _refusal(lambda: select_output({"logits": 1.0, "loss": 2.0}, "acc", is_tensor)) == (
        "--output-index 'acc': the model's output dict has keys ['logits', 'loss']"
    )
    assert _refusal(lambda: select_output((1.0, "x"), 1, is_tensor)) == (
        "--output-index 1: that element is a str, not a tensor"
    )
    assert _refusal(lambda: parse_spec("model.py:")).startswith(
        "'model.py:': nothing after the colon; name the factory, e.g. "
    )


def test_compare_train_refusal_in_chinese_and_english(speak, tmp_path):
    from torch2ms.trainrun.runner import check_inputs

    script = tmp_path / "train.py"
    script.write_text("print(1)\n", encoding="utf-8")
    speak("zh")
    assert _refusal(lambda: check_inputs(str(script), str(script), None, 0, 1e-4)) == "--steps 0：至少需要 1 步"
    speak("en")
    assert _refusal(lambda: check_inputs(str(script), str(script), None, 0, 1e-4)) == (
        "--steps 0: give at least 1 step"
    )


def test_weights_refuses_a_file_that_is_not_a_checkpoint_in_chinese_and_english(tmp_path):
    (tmp_path / "empty.pth").write_bytes(b"")
    zh = _run(["weights", "empty.pth", "-o", "out.ckpt"], tmp_path, "zh")
    assert zh.returncode == 2 and "empty.pth：空文件" in zh.stderr, zh.stderr
    en = _run(["weights", "empty.pth", "-o", "out.ckpt"], tmp_path, "en")
    assert en.returncode == 2 and "empty.pth: empty file" in en.stderr, en.stderr


def test_convert_runtime_help_in_chinese(tmp_path):
    zh = _run(["convert", "--help"], tmp_path, "zh")
    assert zh.returncode == 0 and "vendor（默认）" in zh.stdout
    en = _run(["convert", "--help"], tmp_path, "en")
    assert "vendor (default): the torch2ms.runtime helpers" in " ".join(en.stdout.split())


def test_progress_labels_in_chinese_and_english(speak, tmp_path):
    from torch2ms.convert import convert_tree
    from torch2ms.progress import RichProgress

    src = tmp_path / "proj"
    src.mkdir()
    (src / "m.py").write_text("import torch\nx = torch.zeros(2)\n", encoding="utf-8")
    shown = {}
    for lang in ("zh", "en"):
        speak(lang)
        screen = io.StringIO()
        progress = RichProgress(Console(file=screen, force_terminal=True, width=120))
        convert_tree(str(src), str(tmp_path / f"out_{lang}"), jobs=1, progress=progress)
        shown[lang] = ANSI.sub("", screen.getvalue())
    assert "转换 Python 文件" in shown["zh"] and "converting Python files" not in shown["zh"]
    assert "converting Python files" in shown["en"]


def test_import_probe_and_weights_refusals_in_chinese_and_english(speak, tmp_path):
    from torch2ms.import_probe import code_run_at_import
    from torch2ms.weights.convert import WeightsError, check_output_path

    script = tmp_path / "train.py"
    script.write_text("import os\n\nfor epoch in range(3):\n    print(epoch)\n", encoding="utf-8")
    speak("zh")
    assert code_run_at_import(script) == "train.py: 第 3 行的一个循环"
    speak("en")
    assert code_run_at_import(script) == "train.py: a loop on line 3"
    ckpt = tmp_path / "w.pth"
    ckpt.write_bytes(b"x")
    speak("zh")
    with pytest.raises(WeightsError, match="就是输入的检查点；请换一个 -o"):
        check_output_path(str(ckpt), str(ckpt))
    speak("en")
    with pytest.raises(WeightsError, match="is the input checkpoint; choose another -o"):
        check_output_path(str(ckpt), str(ckpt))
