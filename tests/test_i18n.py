"""Chinese and English (issue 13, "Language"): every message has a Chinese translation, the language
comes from --lang or the locale, and what the static commands write is in that language."""

from __future__ import annotations

import gettext
import os
import subprocess
import sys
from pathlib import Path

import pytest
from i18n_support import SRC, source_messages
from requires_support import REFERENCE, require_module, require_reference
from rich.console import Console

PO = SRC / "locale" / "zh_CN" / "LC_MESSAGES" / "torch2ms.po"
MO = PO.with_suffix(".mo")
LOCALE_VARS = ("TORCH2MS_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")

MODEL = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        y = torch.frobnicate(x)
        return self.fc(torch.relu(x)).view(-1)
"""


def _catalog() -> dict[str, str]:
    from babel.messages.pofile import read_po

    with PO.open("rb") as fh:
        return {m.id: m.string for m in read_po(fh) if m.id and isinstance(m.id, str)}


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS}
    return subprocess.run(
        [sys.executable, "-m", "torch2ms", *args],
        cwd=cwd,
        env=clean | env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def _has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_every_message_in_the_source_has_a_chinese_translation():
    found, wrong = source_messages()
    assert wrong == [], "a message inside an f-string or made by one cannot be extracted or looked up"
    catalog = _catalog()
    untranslated = {msg: where for msg, where in found.items() if not catalog.get(msg, "").strip()}
    assert untranslated == {}, "run `make i18n` and translate these in " + str(PO.relative_to(SRC.parent))


def test_compiled_catalog_matches_the_po_file():
    with MO.open("rb") as fh:
        compiled = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
    wanted = {k: v for k, v in _catalog().items() if v}
    assert {k: v for k, v in compiled.items() if k} == wanted, "the .mo is stale: run `make i18n`"


def test_translations_keep_the_placeholders():
    import re

    def fields(text: str) -> list[str]:
        return sorted(re.findall(r"\{\w*\}|%\(\w+\)[sdr]|%[sdr]", text))

    wrong = [msg for msg, zh in _catalog().items() if zh and fields(msg) != fields(zh)]
    assert wrong == []


@pytest.mark.parametrize(
    ("env", "chinese"),
    [
        ({"LANG": "zh_CN.UTF-8"}, True),
        ({"LC_ALL": "zh_TW.UTF-8"}, True),
        ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, True),
        ({"LANG": "en_US.UTF-8"}, False),
        ({"LANG": "C.UTF-8"}, False),
        ({}, False),
        ({"LANG": "zh_CN.UTF-8", "TORCH2MS_LANG": "en"}, False),
    ],
)
def test_language_from_the_locale(monkeypatch, env, chinese):
    from torch2ms import i18n

    for var in LOCALE_VARS:
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert i18n.language() == ("zh" if chinese else "en")
    assert _has_chinese(i18n._("total")) is chinese


def test_scan_speaks_chinese_with_lang_zh_and_english_with_lang_en(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    zh = _run(["--lang", "zh", "scan", "m.py"], tmp_path, LANG="en_US.UTF-8")
    assert zh.returncode == 0, zh.stderr
    assert "工作量估计" in zh.stdout and "effort estimate" not in zh.stdout
    en = _run(["--lang", "en", "scan", "m.py"], tmp_path, LANG="zh_CN.UTF-8")
    assert "effort estimate" in en.stdout and not _has_chinese(en.stdout)


def test_convert_marks_and_summary_in_chinese_from_lang_env_and_idempotent(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    first = _run(["convert", "m.py", "-o", "out1"], tmp_path, LANG="zh_CN.UTF-8")
    assert first.returncode == 0, first.stderr
    assert "转换率" in first.stdout
    code = (tmp_path / "out1" / "m.py").read_text(encoding="utf-8")
    mark = next(line for line in code.splitlines() if "frobnicate" in line and "#" in line)
    assert mark.strip().startswith("# torch2ms: 未转换") and _has_chinese(mark)
    second = _run(["convert", "out1/m.py", "-o", "out2"], tmp_path, LANG="zh_CN.UTF-8")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "out2" / "m.py").read_bytes() == (tmp_path / "out1" / "m.py").read_bytes()
    en = _run(["--lang", "en", "convert", "m.py", "-o", "out3"], tmp_path, LANG="zh_CN.UTF-8")
    assert "# torch2ms: not converted — torch.frobnicate" in (tmp_path / "out3" / "m.py").read_text()
    assert "conversion rate" in en.stdout


def test_lookup_note_in_chinese_falls_back_to_english(tmp_path, monkeypatch):
    from torch2ms.kb import load_kb
    from torch2ms.kb.__init__ import DATA_DIR
    from torch2ms.kb.lookup import lookup, lookup_dict
    from torch2ms.report.lookup_report import render_lookup

    translated = next(e for e in load_kb() if e.note_zh)
    zh = _run(["--lang", "zh", "lookup", translated.torch], tmp_path)
    assert zh.returncode == 0 and "注意" in zh.stdout
    assert translated.note_zh.split()[0][:10] in zh.stdout
    missing = _run(["--lang", "zh", "lookup", "torch.nn.NoSuchLayer"], tmp_path)
    assert missing.returncode == 1 and "不在知识库中" in missing.stdout
    # Every bundled note has its Chinese twin (test_i18n_kb_notes.py); one without it shows the English note.
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.toml").write_text((DATA_DIR / "nn_layers.toml").read_text(encoding="utf-8"), encoding="utf-8")
    kb = load_kb(data)
    untranslated = next(e for e in kb if e.note and not e.note_zh)
    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    console = Console(record=True, width=100)
    render_lookup(lookup_dict(lookup(untranslated.torch, kb), kb), console)
    shown = console.export_text()
    assert "注意" in shown and untranslated.note.split()[0] in shown


def test_usage_errors_in_chinese(tmp_path):
    scan = _run(["scan", "no_such_dir"], tmp_path, LANG="zh_CN.UTF-8")
    assert scan.returncode == 2 and scan.stderr.startswith("错误：")
    parse = _run(["scan"], tmp_path, LANG="zh_CN.UTF-8")
    assert parse.returncode == 2 and "缺少以下必需参数" in parse.stderr
    weights = _run(["--lang", "zh", "weights", "missing.pth", "-o", "out.ckpt"], tmp_path)
    assert weights.returncode == 2 and weights.stderr.startswith("错误：")
    english = _run(["weights", "missing.pth", "-o", "out.ckpt"], tmp_path, LANG="en_US.UTF-8")
    assert english.returncode == 2 and english.stderr.startswith("error:") and not _has_chinese(english.stderr)


def test_lang_after_the_subcommand_works_like_before_it(tmp_path):
    (tmp_path / "m.py").write_text(MODEL)
    after = _run(["scan", "m.py", "--lang", "zh"], tmp_path, LANG="en_US.UTF-8")
    before = _run(["--lang", "zh", "scan", "m.py"], tmp_path, LANG="en_US.UTF-8")
    assert after.returncode == before.returncode == 0, after.stderr
    assert after.stdout == before.stdout and "工作量估计" in after.stdout
    english = _run(["lookup", "nn.Conv2d", "--lang=en"], tmp_path, LANG="zh_CN.UTF-8")
    assert english.returncode == 0 and not _has_chinese(english.stdout.split("torch.nn.Conv2d")[0])
    wrong = _run(["scan", "m.py", "--lang", "fr"], tmp_path, LANG="en_US.UTF-8")
    assert wrong.returncode == 2 and "--lang" in wrong.stderr


def test_scan_markdown_and_vendored_runtime_header_in_chinese(tmp_path):
    src = "import torch\n\n\ndef f(x, n):\n    return x.view(n).sum(), torch.device('cpu')\n"
    (tmp_path / "m.py").write_text(src)
    md = _run(["--lang", "zh", "scan", "m.py", "--format", "md"], tmp_path)
    assert md.returncode == 0, md.stderr
    assert "| 状态 | API 数 | 次数 |" in md.stdout and "个不同 API。" in md.stdout and "APIs" not in md.stdout
    table = _run(["--lang", "zh", "scan", "m.py"], tmp_path, COLUMNS="200")
    assert "很可能" in table.stdout and "likely" not in table.stdout
    out = _run(["--lang", "zh", "convert", "m.py", "-o", "out"], tmp_path)
    assert out.returncode == 0, out.stderr
    header = (tmp_path / "out" / "torch2ms_runtime" / "__init__.py").read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("# torch2ms_runtime：") and _has_chinese(header)


def test_help_in_chinese(tmp_path):
    out = _run(["--lang", "zh", "convert", "--help"], tmp_path)
    assert out.returncode == 0
    assert "用法：" in out.stdout and "退出码：" in out.stdout and "输出文件夹" in out.stdout


def test_version(tmp_path):
    from importlib.metadata import version

    out = _run(["--version"], tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"torch2ms {version('torch2ms')}"


PRIORITY = REFERENCE / "torch_api_priority.tsv"


def _most_used_with_a_note(kb, count: int) -> list:
    seen: dict[str, object] = {}
    for line in PRIORITY.read_text(encoding="utf-8").splitlines()[1:]:
        entry = kb.get(line.split("\t")[0])
        if entry is not None and entry.note:
            seen.setdefault(entry.torch, entry)
        if len(seen) == count:
            break
    return list(seen.values())


def test_the_150_most_used_entries_with_a_note_have_a_chinese_note():
    require_reference(PRIORITY)
    from torch2ms.kb import load_kb

    missing = [e.torch for e in _most_used_with_a_note(load_kb(), 150) if not e.note_zh]
    assert missing == []


def test_notes_and_messages_point_to_no_document_the_user_lacks():
    import re

    from torch2ms.kb import load_kb

    pointer = re.compile(r"facts §|§\d|\(R\d+[:)]|the articles|shared reference|requirements\.md")
    notes = [e.torch for e in load_kb() if pointer.search(e.note) or pointer.search(e.note_zh)]
    messages = [m for m in [*source_messages()[0], *_catalog().values()] if pointer.search(m)]
    assert notes == [] and messages == []


def test_a_chinese_note_for_an_unknown_name_is_refused(tmp_path):
    from torch2ms.kb import KBError, load_kb
    from torch2ms.kb.__init__ import DATA_DIR

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.toml").write_text((DATA_DIR / "nn_layers.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (data / "zh.toml").write_text('[note_zh]\n"torch.nn.NoSuchLayer" = "没有这个层"\n', encoding="utf-8")
    with pytest.raises(KBError, match="NoSuchLayer"):
        load_kb(data)


def test_a_chinese_note_given_in_two_files_is_refused(tmp_path):
    from torch2ms.kb import KBError, load_kb
    from torch2ms.kb.__init__ import DATA_DIR

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.toml").write_text((DATA_DIR / "nn_layers.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (data / "zh1.toml").write_text('[note_zh]\n"torch.nn.Linear" = "旧译文"\n', encoding="utf-8")
    (data / "zh2.toml").write_text('[note_zh]\n"torch.nn.Linear" = "新译文"\n', encoding="utf-8")
    with pytest.raises(KBError, match=r"zh2.toml: \[note_zh\] torch.nn.Linear is already translated in zh1.toml"):
        load_kb(data)


PAIR_TORCH = """import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))
"""


@pytest.mark.slow
def test_compare_speaks_chinese_in_the_terminal_and_the_report(tmp_path):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.convert import convert_source

    (tmp_path / "t.py").write_text(PAIR_TORCH, encoding="utf-8")
    (tmp_path / "m.py").write_text(convert_source(PAIR_TORCH).code, encoding="utf-8")
    args = ["compare", "--torch", "t.py:Net", "--ms", "m.py:Net", "--input-shape", "2,4", "--no-graph", "--out", "r"]
    zh = _run(["--lang", "zh", *args], tmp_path, GLOG_v="3")
    assert zh.returncode == 0, zh.stderr
    assert "一致" in zh.stdout and "最终输出 pynative：" in zh.stdout and "报告：" in zh.stdout
    assert "final output" not in zh.stdout and "MATCH" not in zh.stdout
    page = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "<html lang='zh-CN'>" in page and "逐层误差" in page and "Per-layer error" not in page
    assert '"status": "match"' in (tmp_path / "r" / "report.json").read_text(encoding="utf-8")
    en = _run(["--lang", "en", *args], tmp_path, GLOG_v="3", LANG="zh_CN.UTF-8")
    assert en.returncode == 0 and "MATCH" in en.stdout and not _has_chinese(en.stdout)


def _rendered(render, width: int = 200) -> str:
    from rich.console import Console

    console = Console(record=True, width=width, color_system=None)
    render(console)
    return console.export_text()


def test_check_data_report_in_chinese(monkeypatch):
    import numpy as np

    from torch2ms.data import Side, compare_sides

    images = np.random.default_rng(0).random((2, 3, 4, 4)).astype(np.float32)
    torch_side = Side("torch", batches=[(images, np.array([0, 1]))], batches_per_epoch=1)
    ms_side = Side("MindSpore", batches=[(images * 2, np.array([0, 1]))], batches_per_epoch=1)
    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    report = compare_sides(torch_side, ms_side)
    text = _rendered(report.render)
    assert "数据管道不同" in text and "每个 epoch 的批次数：torch 1，MindSpore 1" in text and "通道均值" in text
    assert "错误" in text and "pipelines differ" not in text
    markdown = report.to_markdown()
    assert "## 发现" in markdown and "| 列 | 形状 torch / MS |" in markdown and "修复：" in markdown
    assert report.to_dict()["verdict"] == "pipelines differ"  # JSON keeps English keys and values
    monkeypatch.setenv("TORCH2MS_LANG", "en")
    assert "pipelines differ" in _rendered(report.render) and "## Findings" in report.to_markdown()


def _train_report(status: str):
    from torch2ms.trainrun.report import TrainReport

    rows = [
        {"index": i, "step": i + 1, "opt": 0, "torch_loss": 1.0, "ms_loss": 1.0 + 0.1 * (i > 0), "rel": 0.1 * (i > 0),
         "torch_inputs": None, "ms_inputs": None}
        for i in range(3)
    ]  # fmt: skip
    first = {
        "index": 1,
        "step": 2,
        "torch_loss": 1.0,
        "ms_loss": 1.1,
        "rel_text": "1.0e-01",
        "cause": "lr",
        "facts": [],
    }
    return TrainReport(status, "a.py", "b.py", 3, 1e-4, "pynative", "replay", 0, rows, first)


def test_compare_train_verdict_lines_in_chinese(monkeypatch):
    from torch2ms.trainrun.report import print_report

    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    text = _rendered(lambda c: print_report(_train_report("different"), c))
    assert "不同 从第 2 步起" in text and "最可能的原因：" in text and "torch 损失" in text and "回放数据" in text
    assert "DIFFERENT" not in text and "likeliest cause" not in text
    monkeypatch.setenv("TORCH2MS_LANG", "en")
    english = _rendered(lambda c: print_report(_train_report("different"), c))
    assert "DIFFERENT from step 2: torch 1.000000, MindSpore 1.100000 (1.0e-01)" in english and not _has_chinese(
        english
    )


def test_export_and_doctor_in_chinese(tmp_path, monkeypatch):
    bad_shape = _run(["--lang", "zh", "export", "--net", "m.py:Net", "--ckpt", "w.ckpt", "--input-shape", "1,a",
                      "-o", "m.mindir"], tmp_path)  # fmt: skip
    assert bad_shape.returncode == 2 and "错误：" in bad_shape.stderr and "应为逗号分隔的整数" in bad_shape.stderr
    no_ckpt = _run(["--lang", "zh", "export", "--net", "m.py:Net", "--ckpt", "w.ckpt", "--input-shape", "1,2",
                    "-o", "m.mindir"], tmp_path)  # fmt: skip
    assert no_ckpt.returncode == 2 and "没有这个检查点文件" in no_ckpt.stderr
    assert "export" in _run(["--lang", "zh", "export", "--help"], tmp_path).stdout
    assert "构建转换后 MindSpore 网络" in _run(["--lang", "zh", "export", "--help"], tmp_path).stdout
    from torch2ms.doctor import DoctorReport, Finding, level_word, main_text

    monkeypatch.setenv("TORCH2MS_LANG", "zh")
    lines = main_text(DoctorReport(versions={"python": "3.11", "torch": None}))
    assert any("未安装" in line for line in lines) and level_word(Finding("warn", "").level) == "警告"


TRAIN_LOOP = """import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        try:
            y = self.fc(x)
        except RuntimeError:
            y = x
        return y


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
for x, y in [(torch.randn(3, 4), torch.tensor([0, 1, 0]))]:
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    z = torch.frobnicate(x)
"""


def test_training_loop_and_graph_mode_marks_in_chinese_are_stable_when_converted_again(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN_LOOP, encoding="utf-8")
    first = _run(["--lang", "zh", "convert", "train.py", "-o", "out1"], tmp_path)
    assert first.returncode == 0, first.stderr
    code = (tmp_path / "out1" / "train.py").read_text(encoding="utf-8")
    marks = [line.strip() for line in code.splitlines() if "# torch2ms:" in line]
    assert any("torch 模块默认处于训练模式" in m for m in marks), marks
    assert any("前向、loss.backward()、opt.step()" in m for m in marks), marks
    assert any("construct 中的 try/except 不会被编译" in m for m in marks), marks
    assert any("保留了 torch 导入" in m for m in marks), marks
    assert not any(word in m for m in marks for word in ("training mode", "is not compiled", "import kept"))
    second = _run(["--lang", "zh", "convert", "out1/train.py", "-o", "out2"], tmp_path)
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "out2" / "train.py").read_bytes() == (tmp_path / "out1" / "train.py").read_bytes()
    english = _run(["--lang", "en", "convert", "train.py", "-o", "out3"], tmp_path)
    assert english.returncode == 0, english.stderr
    en_code = (tmp_path / "out3" / "train.py").read_text(encoding="utf-8")
    assert "a torch module starts in training mode" in en_code and not _has_chinese(en_code)
    assert _run(["--lang", "en", "convert", "out3/train.py", "-o", "out4"], tmp_path).returncode == 0
    assert (tmp_path / "out4" / "train.py").read_bytes() == (tmp_path / "out3" / "train.py").read_bytes()
