"""R30 (issue 13): the HTML reports of compare and check-data, opened in headless Chromium as a person
opens them: the page loads without console errors, needs nothing outside itself, and its plots are there
with axis labels and units (inline SVG keeps them as text, so the DOM shows them).

Debian's ``chromium`` package (with ``fonts-noto-cjk``) is installed by ``.ci/run``; outside CI a
machine without it skips these tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Where the screenshots go for a person to look at (kept after the run).
SHOTS = Path(os.environ.get("T2M_SCREENSHOTS", "/tmp/torch2ms-report-screenshots"))


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs it (apt-get install -y chromium fonts-noto-cjk)")
        pytest.skip("chromium is not installed here (apt-get install -y chromium fonts-noto-cjk); CI runs this test")
    return CHROMIUM


def _chromium(browser: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [browser, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def open_page(browser: str, page: Path, tmp: Path, shot: Path) -> tuple[str, list[str]]:
    """(the DOM after load, the page's console messages); a screenshot is saved to ``shot``.

    Each run has its own profile: a browser's helper processes may outlive it on a loaded machine and
    still hold the profile lock, and a second run on that profile would hand its work to them."""
    dom = _chromium(browser, page, tmp / "profile-dom", "--enable-logging=stderr", "--v=0", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    shot.parent.mkdir(parents=True, exist_ok=True)
    screenshot = _chromium(browser, page, tmp / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2600")
    assert screenshot.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", screenshot.stderr[-2000:]
    return dom.stdout, console


def _assert_self_contained(dom: str) -> None:
    external = re.findall(r"""(?:src|href)\s*=\s*["']?(?!data:|#)([^"'\s>]+)""", dom)
    assert not external, f"the page loads files from outside itself: {external[:5]}"


def _svg_texts(dom: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", dom))


def test_r30_console_check_catches_a_broken_page(browser, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><body><script>notDefined();</script></body>", encoding="utf-8")
    _, console = open_page(browser, page, tmp_path, tmp_path / "broken.png")
    assert any("notDefined" in line for line in console)  # the check below would see a real error


TORCH = textwrap.dedent("""
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.act = nn.GELU()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(self.pool(self.act(self.bn(self.conv(x)))).flatten(1))
""")


@pytest.mark.differential
def test_r30_compare_report_renders_with_plots(browser, tmp_path):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.align import CompareOptions, TrainOptions, compare_models
    from torch2ms.convert import convert_source

    (tmp_path / "t.py").write_text(TORCH, encoding="utf-8")
    port = convert_source(TORCH).code.replace("approximate=False", "approximate=True")  # a bug to point at
    (tmp_path / "m.py").write_text(port, encoding="utf-8")
    opts = CompareOptions(input_shapes=[(2, 3, 8, 8)], train=TrainOptions(steps=4), graph=False, out_dir=tmp_path / "r")
    rep = compare_models(f"{tmp_path}/t.py:Net", f"{tmp_path}/m.py:Net", opts)
    assert rep.status == "divergence" and rep.first_divergence.layer == "act"
    dom, console = open_page(browser, tmp_path / "r" / "report.html", tmp_path, SHOTS / "compare.png")
    assert console == [], console
    _assert_self_contained(dom)
    assert dom.count("<svg") == 2  # per-layer error and the loss curves
    labels = _svg_texts(dom)
    for text in (
        "layer call (execution order",
        "error / output scale (max |Δ| ÷ max |torch|, unitless)",
        "training step",
        "loss (ce, unitless)",
        "|loss torch − loss MindSpore| ÷ |loss torch|",
        "first divergence: act",
    ):
        assert text in labels, text
    assert "First divergence (forward): act" in dom and "GELU approximation differs" in dom
    assert "(GRAPH_MODE not run)" in dom and "also run in GRAPH_MODE" not in dom  # graph=False: not claimed


def test_r30_check_data_report_renders_with_plots(browser, tmp_path):
    from torch2ms.data import Side, compare_sides
    from torch2ms.data.report_html import write_reports

    rng = np.random.default_rng(0)
    images = rng.random((6, 3, 8, 8)).astype(np.float32)
    labels = np.array([0, 0, 1, 1, 2, 2])
    torch_side = Side("torch", batches=[(images[:3], labels[:3]), (images[3:], labels[3:])], batches_per_epoch=2)
    mean = np.array([0.4, 0.5, 0.6], np.float32)[None, :, None, None]
    ms_batches = [((images[:3] - mean) / 0.25, labels[:3].astype(np.int32)), ((images[3:] - mean) / 0.25, labels[3:])]
    ms_side = Side("MindSpore", batches=ms_batches, columns=["image", "label"], batches_per_epoch=2)
    report = compare_sides(torch_side, ms_side)
    assert not report.ok
    write_reports(report, tmp_path / "r")
    dom, console = open_page(browser, tmp_path / "r" / "report.html", tmp_path, SHOTS / "check_data.png")
    assert console == [], console
    _assert_self_contained(dom)
    assert dom.count("<svg") == 2  # per-channel statistics and the value distribution
    labels_text = _svg_texts(dom)
    for text in (
        "channel (axis 1 of the batch)",
        "per-channel mean (pipeline output units)",
        "per-channel std (pipeline output units)",
        "image value (pipeline output units)",
        "density (share of elements per unit of value)",
    ):
        assert text in labels_text, text
    assert "pipelines differ" in dom and report.findings[0].title in dom


def _cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@pytest.mark.differential
def test_r30_compare_report_in_chinese_declares_lang_and_renders_cjk(browser, tmp_path, monkeypatch):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.align import CompareOptions, TrainOptions, compare_models
    from torch2ms.convert import convert_source

    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    (tmp_path / "t.py").write_text(TORCH, encoding="utf-8")
    port = convert_source(TORCH).code.replace("approximate=False", "approximate=True")
    (tmp_path / "m.py").write_text(port, encoding="utf-8")
    opts = CompareOptions(input_shapes=[(2, 3, 8, 8)], train=TrainOptions(steps=4), graph=False, out_dir=tmp_path / "r")
    rep = compare_models(f"{tmp_path}/t.py:Net", f"{tmp_path}/m.py:Net", opts)
    assert rep.status == "divergence"  # report.json keeps the English status
    dom, console = open_page(browser, tmp_path / "r" / "report.html", tmp_path, SHOTS / "compare_zh.png")
    assert console == [], console
    assert '<html lang="zh-CN">' in dom
    labels = _svg_texts(dom)
    for text in ("层调用（执行顺序", "误差 / 输出尺度", "训练步骤", "损失（ce，无单位）", "首个偏离：act"):
        assert text in labels, text
    assert 'torch2ms compare: <span class="bad">不一致</span>' in dom and "首个偏离（前向）：act" in dom
    assert "layer call" not in labels and "Per-layer error" not in dom


def test_r30_check_data_report_in_chinese(browser, tmp_path, monkeypatch):
    from torch2ms.data import Side, compare_sides
    from torch2ms.data.report_html import write_reports

    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    rng = np.random.default_rng(0)
    images = rng.random((4, 3, 8, 8)).astype(np.float32)
    labels = np.array([0, 1, 1, 2])
    torch_side = Side("torch", batches=[(images[:2], labels[:2]), (images[2:], labels[2:])], batches_per_epoch=2)
    ms_side = Side(
        "MindSpore", batches=[(images[:2] * 2, labels[:2]), (images[2:] * 2, labels[2:])], batches_per_epoch=2
    )
    report = compare_sides(torch_side, ms_side)
    write_reports(report, tmp_path / "r")
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert markdown.startswith("# torch2ms check-data: 数据管道不同") and "## 发现" in markdown
    assert '"verdict": "pipelines differ"' in (tmp_path / "r" / "report.json").read_text(encoding="utf-8")
    dom, console = open_page(browser, tmp_path / "r" / "report.html", tmp_path, SHOTS / "check_data_zh.png")
    assert console == [], console
    assert '<html lang="zh-CN">' in dom and "<h2>逐通道统计</h2>" in dom
    labels_text = _svg_texts(dom)
    for text in ("通道（批次的第 1 轴）", "逐通道均值（管道输出的单位）", "密度（每单位数值的元素占比）"):
        assert text in labels_text, text
    assert not any(word in labels_text for word in ("channel (axis", "density (share"))


def test_r30_compare_train_report_in_chinese(browser, tmp_path, monkeypatch):
    from torch2ms import i18n
    from torch2ms.trainrun.report import TrainReport
    from torch2ms.trainrun.report_files import write_report

    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    rows = [
        {"index": i, "step": i + 1, "opt": 0, "torch_loss": 2.0 - 0.1 * i, "ms_loss": 2.0 - 0.1 * i + (0.05 if i > 2 else 0),
         "rel": 0.05 / (2.0 - 0.1 * i) if i > 2 else 0.0, "torch_lr": 0.1, "ms_lr": 0.1 if i < 3 else 0.2, "torch_grad_norm": 1.0,
         "ms_grad_norm": 1.0, "same_inputs": True}
        for i in range(6)
    ]  # fmt: skip
    divergence = {
        "index": 3,
        "step": 4,
        "torch_loss": 1.7,
        "ms_loss": 1.75,
        "rel_text": "2.9e-02",
        "cause": i18n._("learning-rate schedule differs"),
        "facts": [
            i18n._("learning rate differs from step {step} (optimizer {opt}): torch {torch}, MindSpore {ms}").format(
                step=4, opt=0, torch="0.1", ms="0.2"
            )
        ],
    }
    rep = TrainReport("different", "train.py", "train_ms.py", 6, 1e-4, "pynative", "replay", 0, rows, divergence)
    paths = write_report(rep, tmp_path / "r")
    dom, console = open_page(browser, paths["html"], tmp_path, SHOTS / "compare_train_zh.png")
    assert console == [], console
    assert '<html lang="zh-CN">' in dom and "compare-train: 不同" in dom and "<th>torch 损失</th>" in dom
    assert "第一个超出容差的步骤：4" in dom
    assert "学习率" in dom.split("第一个超出容差的步骤")[1]  # the cause in words, in Chinese
    assert ">True<" not in dom and ">是<" in dom  # the "same batch" column in words of the report's language
