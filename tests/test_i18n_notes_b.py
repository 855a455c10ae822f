"""The Chinese notes of the KB entries (and argument rules) defined in the torch_ops*, devices and
init_optim data files: every note has its twin, and the twin keeps the note's code as written."""

from __future__ import annotations

import re

SOURCES = {"torch_ops.toml", "torch_ops_2.toml", "torch_ops_shape.toml", "devices.toml", "init_optim.toml"}
# What a reader copies into code: `spans`, dotted names (mindspore.ops.sum) and identifiers with _.
CODE = re.compile(r"`[^`]+`|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\b[A-Za-z]\w*_\w*\b")
NOT_CODE = {"e.g", "i.e"}


def _notes_and_twins() -> list[tuple[str, str, str]]:
    """(name or "name:argument", English note, Chinese note) of every note in SOURCES."""
    from torch2ms.kb import load_kb

    pairs = []
    for entry in load_kb():
        if entry.source not in SOURCES:
            continue
        if entry.note:
            pairs.append((entry.torch, entry.note, entry.note_zh))
        for arg, rule in entry.args.items():
            if rule.note:
                pairs.append((f"{entry.torch}:{arg}", rule.note, entry.arg_notes_zh.get(arg, "")))
    return pairs


def test_every_note_of_the_torch_ops_devices_and_init_optim_entries_has_a_chinese_twin():
    pairs = _notes_and_twins()
    assert len(pairs) > 600  # the files hold ~540 entry notes and ~150 argument notes
    assert [name for name, _, zh in pairs if not zh] == []


def test_the_chinese_notes_keep_the_code_of_the_english_ones():
    lost = {}
    for name, english, chinese in _notes_and_twins():
        missing = [t for t in CODE.findall(english) if t not in NOT_CODE and t not in chinese]
        if chinese and missing:
            lost[name] = missing
    assert lost == {}
