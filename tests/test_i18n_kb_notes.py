"""Chinese and English (issue 13, "Language"): every note the KB shows users (`lookup`, convert's
`# torch2ms:` marks, the reports) has a Chinese twin, the twin keeps the code of the English note as it is,
and convert's "not converted" mark carries it under zh. The translations live in kb/data/notes_zh*.toml
and arg_notes_zh.toml (docs/kb.md, "Notes in Chinese")."""

from __future__ import annotations

import re

import pytest

from torch2ms.kb import load_kb

# What a translation must leave untouched: `spans`, quoted one-word strings, dotted names, names with _ or a
# call's "(", keyword arguments ("dim="), numbers.
CODE = re.compile(
    r"`[^`]+`|(?<!\w)'[^'\s]*'(?!\w)|\"[^\"\s]*\"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|\b\w*_\w*\b"
    r"|\b[A-Za-z]\w*\(|\b[A-Za-z_]\w*=(?!=)|(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?"
)
PROSE = {"e.g", "i.e"}  # abbreviations the pattern takes for dotted names
# API names: what a stale translation (its English rewritten since) loses first.
API = re.compile(r"\b(?:mindspore|ms|ops|nn|torch2ms|torch|mint|F|vision|transforms)\.[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _pairs():
    """(name, English, Chinese) of every entry note and argument-rule note."""
    for e in load_kb():
        if e.note:
            yield e.torch, e.note, e.note_zh
        for arg, rule in e.args.items():
            if rule.note:
                yield f"{e.torch}:{arg}", rule.note, e.arg_notes_zh.get(arg, "")


def test_r20_every_kb_note_and_argument_note_has_a_chinese_twin():
    missing = [name for name, _, chinese in _pairs() if not chinese]
    assert missing == [], "add them to a [note_zh] / [arg_note_zh] table in kb/data: " + ", ".join(missing[:50])


@pytest.mark.parametrize("pattern", ["api", "code"])
def test_r20_chinese_notes_keep_the_code_of_the_english_note(pattern):
    lost = {}
    for name, english, chinese in _pairs():
        if not chinese:  # missing altogether: the test above
            continue
        tokens = API.findall(english) if pattern == "api" else CODE.findall(english)
        if missing := [t for t in tokens if t not in chinese and t not in PROSE]:
            lost[name] = missing
    assert lost == {}


def test_r20_not_converted_mark_carries_the_chinese_note(monkeypatch):
    from torch2ms.convert import convert_source

    source = "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.as_strided((2, 2), (1, 2))\n"
    marks = {}
    for lang in ("zh", "en"):
        monkeypatch.setenv("TORCH2MS_LANG", lang)
        marks[lang] = [line.strip() for line in convert_source(source).code.splitlines() if "# torch2ms: " in line]
    assert (
        "# torch2ms: 未转换 —— torch.Tensor.as_strided：MindSpore 没有 as_strided（没有带步长的视图）；"
        "请用 reshape/narrow/index_select 或 unfold 表达该视图。" in marks["zh"]
    ), marks
    assert (
        "# torch2ms: not converted — torch.Tensor.as_strided: No as_strided in MindSpore (no strided views); "
        "express the view with reshape/narrow/index_select or unfold." in marks["en"]
    ), marks
