"""The KB's Chinese notes, part a (kb/data/notes_zh_a.toml): complete for its entry files, and faithful to the
English where it matters most: every API name, code fragment, argument, number and file name of the English
note appears unchanged in its Chinese twin."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import torch2ms.kb

DATA = Path(torch2ms.kb.__file__).parent / "data"
# Entry files whose notes (and argument-rule notes) part a translates.
PART_A_SOURCES = {
    "torchvision_models.toml",
    "distributions_2.toml",
    "torchvision_datasets.toml",
    "einops.toml",
    "rnn_packing.toml",
    "torchvision_data.toml",
    "distributed.toml",
    "distributions.toml",
    "dtypes.toml",
    "realcode_models.toml",
    "misc.toml",
    "tensor_dunders.toml",
}
# Translation files whose notes are held to the code-token check.
CHECKED_FILES = ["notes_zh_a.toml"]

# Code-like spans: `backticked`, dotted names (with a call's arguments), identifiers with _ or a call, identifiers
# with digits (float32, IMAGENET1K_V1), CamelCase and ALL-CAPS names, numbers.
_CODE_TOKEN = re.compile(
    r"`[^`]+`"
    r"|[A-Za-z_<][\w<>/*.\-]*(?:\.[\w<>*\-]+)+(?:\([^()]*\))?"
    r"|\w*_\w*(?:\([^()]*\))?"
    r"|\w+\([^()]*\)"
    r"|\b[A-Za-z]+\d\w*"
    r"|\b[A-Z][a-z]+[A-Z]\w*"
    r"|\b[A-Z]{2,}(?:[\d_]\w*)?"
    r"|\d+(?:\.\d+)?(?:e-?\d+)?"
)
_PROSE = {"e.g", "i.e"}  # abbreviations the pattern takes for dotted names


def code_tokens(note: str) -> list[str]:
    """The code-like tokens of an English note, trailing sentence dots removed."""
    tokens = (m.group(0).rstrip(".") for m in _CODE_TOKEN.finditer(note))
    return [t for t in tokens if t and t not in _PROSE]


def test_code_tokens_of_a_note():
    note = (
        "Use `x += y`; mindspore.ops.einsum(a, b) has no CPU kernel in 2.10: float32 and IMAGENET1K_V1, e.g. set_seed."
    )
    assert code_tokens(note) == [
        "`x += y`",
        "mindspore.ops.einsum(a, b)",
        "CPU",
        "2.10",
        "float32",
        "IMAGENET1K_V1",
        "set_seed",
    ]


def test_part_a_entries_with_a_note_all_have_a_chinese_note():
    from torch2ms.kb import load_kb

    mine = [e for e in load_kb() if e.source in PART_A_SOURCES]
    missing = [e.torch for e in mine if e.note and not e.note_zh]
    missing += [f"{e.torch}:{a}" for e in mine for a, r in e.args.items() if r.note and a not in e.arg_notes_zh]
    assert len(mine) > 300 and missing == []


@pytest.mark.parametrize("file_name", CHECKED_FILES)
def test_chinese_notes_keep_every_code_token_of_the_english(file_name):
    from torch2ms.kb import load_kb

    with open(DATA / file_name, "rb") as f:
        chinese = tomllib.load(f)["note_zh"]
    english = {e.torch: e.note for e in load_kb()}
    lost = {name: [t for t in code_tokens(english[name]) if t not in text] for name, text in chinese.items()}
    assert chinese
    assert {name: tokens for name, tokens in lost.items() if tokens} == {}
