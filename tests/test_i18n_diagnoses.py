"""Chinese and English (issue 13, "Language"): the diagnosis sentences of compare, check-data and
compare-train, scan's risks, lookup's argument lines, the skip reasons, the marks the distributed /
checkpoint / data-pipeline constructs write into converted code, and torch2ms-report.md — each run in
Chinese shows Chinese, and in English shows the text as it always was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from i18n_support import SRC

LOCALE_VARS = ("TORCH2MS_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def _has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.fixture
def speak(monkeypatch):
    """``speak("zh")`` / ``speak("en")``: the language torch2ms speaks in this process."""
    for var in LOCALE_VARS:
        monkeypatch.delenv(var, raising=False)
    return lambda lang: monkeypatch.setenv("TORCH2MS_LANG", lang)


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


# ---- compare's hints ------------------------------------------------------------------------------


def test_compare_layer_hints_in_chinese_and_english(speak):
    from torch2ms.align.diagnose import container_hint, describe

    cell = SimpleNamespace(epsilon=1e-7)
    speak("zh")
    zh = describe("values", "", "torch.nn.LayerNorm", {"eps": 1e-5}, cell, None)
    assert "LayerNorm 的 epsilon 不同" in zh and "epsilon=1e-05" in zh
    box = container_hint("up", "Up", SimpleNamespace(), "up.conv")
    assert "Up.forward 与 SimpleNamespace.construct" in box and "拼接或堆叠张量的顺序" in box
    speak("en")
    assert describe("values", "", "torch.nn.LayerNorm", {"eps": 1e-5}, cell, None) == (
        "LayerNorm epsilon differs: torch eps=1e-05, MindSpore epsilon=1e-07 "
        "(MindSpore's default is 1e-7: pass epsilon=1e-05)"
    )
    assert container_hint("up", "Up", SimpleNamespace(), "up.conv").startswith(
        "compare Up.forward and SimpleNamespace.construct between receiving the inputs"
    )


def test_compare_kb_pitfall_hint_uses_the_chinese_note(speak):
    from torch2ms.align.diagnose import describe
    from torch2ms.kb import load_kb

    kb = load_kb()
    entry = next(e for e in kb if e.note_zh and e.kind == "class")
    speak("zh")
    zh = describe("values", "", entry.torch, {}, None, kb)
    assert zh == f"知识库（{entry.short}）：{entry.note_zh}"
    speak("en")
    assert describe("values", "", entry.torch, {}, None, kb) == f"KB ({entry.short}): {entry.note}"


def test_compare_non_finite_note_in_chinese_still_starts_with_the_side(speak):
    """The layer classifier tells which side has NaN/Inf by the note's first word."""
    import numpy as np

    from torch2ms.align.metrics import diff

    speak("zh")
    ms_bad = diff(np.ones(4), np.array([1.0, np.nan, 1.0, 1.0])).nonfinite
    torch_bad = diff(np.array([np.inf, 1.0, 1.0, 1.0]), np.ones(4)).nonfinite
    assert ms_bad == "MindSpore 有 1 个 NaN/Inf 值，而 torch 在这些位置没有"
    assert torch_bad.startswith("torch 有 1 个") and _has_chinese(torch_bad)
    speak("en")
    assert diff(np.ones(4), np.array([1.0, np.nan, 1.0, 1.0])).nonfinite == (
        "MindSpore has 1 NaN/Inf value(s) where torch does not"
    )


# ---- check-data ----------------------------------------------------------------------------------


def test_check_data_findings_titles_and_fixes_in_chinese(speak):
    import numpy as np

    from torch2ms.data.diagnose import diagnose_batch_count, diagnose_error, diagnose_shapes, name_affine

    speak("zh")
    layout = diagnose_shapes((2, 3, 8, 8), (2, 8, 8, 3), "image")
    assert layout is not None and "尺寸相同，但维度顺序不同" in layout.message
    assert layout.title == "HWC 与 CHW 排布不同" and "vision.HWC2CHW()" in layout.fix and _has_chinese(layout.fix)
    scaled = name_affine(np.array([255.0] * 3), np.zeros(3), "head")
    assert "MindSpore 的数值是 ×255 的" in scaled.message and scaled.evidence[0].startswith("逐通道")
    count = diagnose_batch_count(4, 3)
    assert count is not None and "MindSpore 丢弃了最后一个不完整的批次" in count.message
    raised = diagnose_error("MindSpore", "RuntimeError: Decode first")
    assert raised.message == "MindSpore 数据管道报错：图像列仍是编码后的字节"
    assert raised.to_dict()["pitfall"] == "decode"  # keys stay as they are
    speak("en")
    layout = diagnose_shapes((2, 3, 8, 8), (2, 8, 8, 3), "image")
    assert layout is not None and layout.message == (
        "shape torch (2, 3, 8, 8), MindSpore (2, 8, 8, 3): same sizes, transposed (MindSpore NHWC, torch NCHW)"
    )
    assert layout.title == "HWC vs CHW layout"
    count = diagnose_batch_count(4, 3)
    assert count is not None and count.message == (
        "batches per epoch: torch 4, MindSpore 3: off by one, MindSpore drops the last partial batch"
    )


def test_check_data_configuration_hints_in_chinese(speak):
    from torch2ms.data.hints import config_hints

    t_cfg = {"ops": [("Resize", {"interpolation": "BICUBIC"})], "shuffle": False}
    m_cfg = {"ops": [("Decode", {"to_pil": "False"}), ("Resize", {"interpolation": "BICUBIC"})], "shuffle": True}
    speak("zh")
    zh = [f.message for f in config_hints(t_cfg, m_cfg)]
    assert any("numpy/OpenCV 路径" in m for m in zh) and any("Inter.PILCUBIC" in m and _has_chinese(m) for m in zh)
    assert "torch shuffle=False，MindSpore 数据源 shuffle=True" in zh
    speak("en")
    en = [f.message for f in config_hints(t_cfg, m_cfg)]
    assert "torch shuffle=False, MindSpore source shuffles=True" in en and not any(_has_chinese(m) for m in en)


# ---- compare-train -------------------------------------------------------------------------------


def _row(i: int, torch_loss: float, ms_loss: float, *, ms_bn_train: int = 2) -> dict:
    return {
        "index": i,
        "step": i + 1,
        "opt": 0,
        "ms_opt": 0,
        "torch_loss": torch_loss,
        "ms_loss": ms_loss,
        "rel": abs(ms_loss - torch_loss) / abs(torch_loss),
        "torch_lr": [0.1],
        "ms_lr": [0.1],
        "torch_grad_norm": 1.0,
        "ms_grad_norm": 1.0,
        "clip": None,
        "same_inputs": True,
        "torch_inputs": {"shape": [4, 3]},
        "ms_inputs": {"shape": [4, 3]},
        "torch_modes": {"model0": {"bn_train": 2, "bn_total": 2, "drop_train": 0, "drop_total": 0}},
        "ms_modes": {"model0": {"bn_train": ms_bn_train, "bn_total": 2, "drop_train": 0, "drop_total": 0}},
    }


def test_compare_train_causes_in_chinese(speak):
    from torch2ms.trainrun.causes import likeliest_cause, run_findings

    reduction = [_row(0, 1.0, 4.0)]
    drift = [_row(0, 1.0, 1.0), _row(1, 1.0, 1.0), _row(2, 1.0, 1.5)]
    inference = [_row(0, 1.0, 1.0, ms_bn_train=0)]
    speak("zh")
    cause, facts = likeliest_cause(reduction, 0, [])
    assert cause == "损失的归约方式不同" and facts == [
        "第一步时 MindSpore 的损失是另一边的 4 倍（批大小为 4：'sum' 对 'mean'）"
    ]
    cause, facts = likeliest_cause(drift, 2, [])
    assert cause == "数值漂移" and "请逐层比较" in facts[0]
    (mode,) = run_findings(inference, {"events": []}, {"events": []})
    assert mode["message"].startswith("第 1 步：处于训练模式的 BatchNorm 层：torch 2/2，MindSpore 0/2（model0）")
    assert "model.set_train(True)" in mode["message"] and "推理模式" in mode["message"]
    speak("en")
    assert likeliest_cause(reduction, 0, [])[0] == "loss reduction differs"
    assert likeliest_cause(drift, 2, [])[0] == "numerical drift"
    (mode,) = run_findings(inference, {"events": []}, {"events": []})
    assert mode["message"] == (
        "at step 1: BatchNorm layers in training mode: torch 2/2, MindSpore 0/2 (model0) — the converted script "
        "trains in inference mode: call model.set_train(True) before the loop (MindSpore Cells start in inference mode)"
    )


def test_compare_train_side_errors_in_chinese(speak):
    from torch2ms.trainrun.api import side_error
    from torch2ms.trainrun.runner import SideRun

    error = {"type": "ValueError", "message": "bad shape", "where": "train.py:12"}
    crashed = SideRun("ms", 1, 1.0, {"events": [{}] * 3, "status": "crashed", "error": error}, "")
    hung = SideRun("torch", None, 9.0, None, "")
    speak("zh")
    assert side_error(crashed, 60) == "MindSpore 脚本在 3 次优化器更新后崩溃（位于 train.py:12）：ValueError: bad shape"
    assert side_error(hung, 60) == "torch 脚本未在 60 秒内结束（请调大 --timeout，或调小 --steps）"
    speak("en")
    assert side_error(crashed, 60) == (
        "the MindSpore script crashed after 3 optimizer step(s) at train.py:12: ValueError: bad shape"
    )
    assert side_error(hung, 60) == "the torch script did not finish within 60 s (raise --timeout, or lower --steps)"


# ---- scan, lookup, skip reasons --------------------------------------------------------------------

RISKY = """import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        try:
            return x.size(0)
        except RuntimeError:
            return 0
"""


def test_scan_risks_in_chinese(tmp_path):
    (tmp_path / "m.py").write_text(RISKY, encoding="utf-8")
    zh = _run(["scan", "m.py", "--format", "md"], tmp_path, "zh")
    assert zh.returncode == 0, zh.stderr
    assert "forward 中有 try/except" in zh.stdout and "Tensor.size 是 int" in zh.stdout
    en = _run(["scan", "m.py", "--format", "md"], tmp_path, "en")
    assert "try/except in forward: GRAPH_MODE fails" in en.stdout and not _has_chinese(en.stdout)


def test_lookup_argument_differences_in_chinese(tmp_path):
    zh = _run(["lookup", "nn.Conv2d", "--json"], tmp_path, "zh")
    assert zh.returncode == 0, zh.stderr
    assert "总是显式传入，MindSpore 的默认值不同" in zh.stdout and "（torch 默认值 1）" in zh.stdout
    en = _run(["lookup", "nn.Conv2d", "--json"], tmp_path, "en")
    assert "always passed, MindSpore's default differs" in en.stdout and "(torch default 1)" in en.stdout


def test_skip_reasons_in_chinese_keep_their_suffix_strippable(tmp_path, speak):
    from torch2ms.analysis.sourcefiles import BadInput, decode_source, walk_tree, without_skipped

    (tmp_path / ".git").mkdir()
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("", encoding="utf-8")
    speak("zh")
    skipped = {p.path.name: p.reason for p in walk_tree(tmp_path).skipped}
    assert skipped == {".git": "版本控制文件夹", "env": "虚拟环境（含 pyvenv.cfg）"}
    with pytest.raises(BadInput) as zh:
        decode_source(b"\x00binary")
    assert str(zh.value) == "二进制文件（含 NUL 字节）；已跳过"
    assert without_skipped(str(zh.value)) == "二进制文件（含 NUL 字节）"
    speak("en")
    with pytest.raises(BadInput) as en:
        decode_source(b"\x00binary")
    assert without_skipped(str(en.value)) == "binary file (contains NUL bytes)"


def test_every_chinese_skip_reason_ends_as_the_suffix_is_translated():
    """``without_skipped`` strips the translated "; skipped": every reason ending in it must end in its
    translation, word for word."""
    from babel.messages.pofile import read_po

    with (SRC / "locale" / "zh_CN" / "LC_MESSAGES" / "torch2ms.po").open("rb") as fh:
        catalog = {m.id: m.string for m in read_po(fh) if isinstance(m.id, str) and m.id}
    suffix = catalog["; skipped"]
    wrong = [msg for msg, zh in catalog.items() if msg.endswith("; skipped") and not zh.endswith(suffix)]
    assert wrong == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_weights_names_a_fifo_in_chinese_without_the_skip_suffix(tmp_path):
    os.mkfifo(tmp_path / "w.pth")
    zh = _run(["weights", "w.pth", "-o", "out.ckpt"], tmp_path, "zh")
    assert zh.returncode != 0 and "命名管道（FIFO），不是普通文件" in zh.stderr and "已跳过" not in zh.stderr


# ---- converted code and its report -------------------------------------------------------------------

DDP_TRAIN = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Pairs(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.zeros(4), i % 2


def main(rank, world_size):
    dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)
    net = nn.Linear(4, 2)
    model = DDP(net)
    loader = DataLoader(Pairs(), batch_size=2, shuffle=True, pin_memory=True)
    for x, y in loader:
        print(model(x).sum())
    dist.barrier()
    torch.save(net.state_dict(), "w.pt")
    net.load_state_dict(torch.load("w.pt"))


if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""


def _marks(code: str) -> list[str]:
    return [line.split("# torch2ms:", 1)[1].strip() for line in code.splitlines() if "# torch2ms:" in line]


def test_distributed_checkpoint_and_data_marks_in_chinese_are_stable_when_converted_again(speak):
    from torch2ms.convert import convert_source

    speak("zh")
    code = convert_source(DDP_TRAIN).code
    marks = _marks(code)
    for expected in (
        "分布式数据并行：用 `msrun --worker_num=2",  # the header
        "gloo 是 torch 的 CPU 后端",
        'init_process_group(backend="gloo")：MindSpore 按设备选择',
        "torch barrier()：所有 worker 都参与后才会有进程返回",
        "mp.spawn → 每个 worker 一个进程",
        "已去掉（MindSpore 中没有对应写法）：pin_memory",
    ):
        assert any(expected in m for m in marks), (expected, marks)
    assert convert_source(code).code == code
    speak("en")
    english = convert_source(DDP_TRAIN).code
    assert not _has_chinese(english) and "# torch2ms: gloo is torch's CPU backend" in english
    assert convert_source(english).code == english


def test_convert_report_md_in_chinese(tmp_path):
    (tmp_path / "train.py").write_text(DDP_TRAIN, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("kept", encoding="utf-8")
    zh = _run(["convert", "train.py", "-o", "out_zh"], tmp_path, "zh")
    assert zh.returncode == 0, zh.stderr
    report = (tmp_path / "out_zh" / "torch2ms-report.md").read_text(encoding="utf-8")
    assert report.startswith("# torch2ms convert：train.py → out_zh")
    assert (
        "个 Python 文件" in report and "（转换率 " in report and "| 文件 | 已转换 | 需复核 | 未转换 | 错误 |" in report
    )
    assert "## 需要人工处理" in report and "| 位置 | API | 操作 | 原因 |" in report
    assert (
        "生成：torch2ms_runtime/：转换后的代码用到的 torch2ms.runtime 辅助函数（ckpt_path, data_parallel, load_checkpoint, load_param_into_net_strict）"
        in report
    )
    en = _run(["convert", "train.py", "-o", "out_en"], tmp_path, "en")
    assert en.returncode == 0, en.stderr
    english = (tmp_path / "out_en" / "torch2ms-report.md").read_text(encoding="utf-8")
    assert english.startswith("# torch2ms convert: train.py → out_en\n\n1 Python files (1 changed, 0 failed)")
    assert "## Needs a person\n\n| where | API | action | why |" in english and not _has_chinese(english)
