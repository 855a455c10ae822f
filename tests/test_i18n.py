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


def test_lookup_note_in_chinese_falls_back_to_english(tmp_path):
    from torch2ms.kb import load_kb

    kb = load_kb()
    translated = next(e for e in kb if e.note_zh)
    untranslated = next(e for e in kb if e.note and not e.note_zh)
    zh = _run(["--lang", "zh", "lookup", translated.torch], tmp_path)
    assert zh.returncode == 0 and "注意" in zh.stdout
    assert translated.note_zh.split()[0][:10] in zh.stdout
    fallback = _run(["--lang", "zh", "lookup", untranslated.torch], tmp_path)
    assert untranslated.note.split()[0] in fallback.stdout
    missing = _run(["--lang", "zh", "lookup", "torch.nn.NoSuchLayer"], tmp_path)
    assert missing.returncode == 1 and "不在知识库中" in missing.stdout


def test_usage_errors_in_chinese(tmp_path):
    scan = _run(["scan", "no_such_dir"], tmp_path, LANG="zh_CN.UTF-8")
    assert scan.returncode == 2 and scan.stderr.startswith("错误：")
    parse = _run(["scan"], tmp_path, LANG="zh_CN.UTF-8")
    assert parse.returncode == 2 and "缺少以下必需参数" in parse.stderr
    weights = _run(["--lang", "zh", "weights", "missing.pth", "-o", "out.ckpt"], tmp_path)
    assert weights.returncode == 2 and weights.stderr.startswith("错误：")
    english = _run(["weights", "missing.pth", "-o", "out.ckpt"], tmp_path, LANG="en_US.UTF-8")
    assert english.returncode == 2 and english.stderr.startswith("error:") and not _has_chinese(english.stderr)


def test_help_in_chinese(tmp_path):
    out = _run(["--lang", "zh", "convert", "--help"], tmp_path)
    assert out.returncode == 0
    assert "用法：" in out.stdout and "退出码：" in out.stdout and "输出文件夹" in out.stdout


def test_version(tmp_path):
    from importlib.metadata import version

    out = _run(["--version"], tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"torch2ms {version('torch2ms')}"


PRIORITY = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "torch_api_priority.tsv"


def _most_used_with_a_note(kb, count: int) -> list:
    seen: dict[str, object] = {}
    for line in PRIORITY.read_text(encoding="utf-8").splitlines()[1:]:
        entry = kb.get(line.split("\t")[0])
        if entry is not None and entry.note:
            seen.setdefault(entry.torch, entry)
        if len(seen) == count:
            break
    return list(seen.values())


@pytest.mark.skipif(not PRIORITY.exists(), reason="the shared priority list is not here")
def test_the_150_most_used_entries_with_a_note_have_a_chinese_note():
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
