"""The line map's own matcher (convert/linemap.py) gives difflib's answers: the line-level opcodes of
``SequenceMatcher(None, a, b, autojunk=False)`` and the character ratio of ``SequenceMatcher(None, x, y)``,
on random texts over small alphabets (many ties between equally long blocks) and on real converted code."""

from __future__ import annotations

import difflib
import random
from pathlib import Path

import pytest

from torch2ms.convert.linemap import _AUTOJUNK, _LineMatcher, _matched, _ratio

GOLDEN = Path(__file__).parent / "golden"


def _random_text(rng: random.Random, alphabet: str, longest: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))


@pytest.mark.parametrize("alphabet", ["ab", "abcd", "abcdefgh ()._=,"])
def test_matched_characters_are_difflibs(alphabet):
    rng = random.Random(alphabet)
    for _ in range(3000):
        x, y = _random_text(rng, alphabet, 40), _random_text(rng, alphabet, 40)
        want = sum(m.size for m in difflib.SequenceMatcher(None, x, y).get_matching_blocks())
        assert _matched(x, y) == want, (x, y)


@pytest.mark.parametrize("alphabet", ["ab", "abc", "abcdef"])
def test_line_opcodes_are_difflibs(alphabet):
    rng = random.Random(alphabet)
    for _ in range(1500):
        a = [rng.choice(alphabet) * rng.randint(1, 2) for _ in range(rng.randint(0, 30))]
        b = [rng.choice(alphabet) * rng.randint(1, 2) for _ in range(rng.randint(0, 30))]
        want = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
        assert _LineMatcher(a, b).get_opcodes() == want, (a, b)


def _golden_lines() -> list[str]:
    lines = [ln.strip() for p in sorted(GOLDEN.rglob("*.py")) for ln in p.read_text("utf-8").splitlines()]
    return [ln for ln in lines if ln]


def test_ratios_and_opcodes_on_real_code_are_difflibs():
    lines = _golden_lines()
    assert len(lines) > 200
    pairs = list(zip(lines, lines[1:])) + list(zip(lines, lines[7:]))
    for x, y in pairs:
        exact = difflib.SequenceMatcher(None, x, y).ratio()
        for floor in (0.4, 0.75):
            got = _ratio(x, y, floor)
            assert got == exact if exact >= floor else got < floor, (x, y, floor)
    half = len(lines) // 2
    a, b = lines[:half], [ln.replace("torch", "ops") for ln in lines[half // 2 : half + half // 2]]
    assert _LineMatcher(a, b).get_opcodes() == difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def test_a_long_line_keeps_difflibs_autojunk():
    x = "self.layer = nn.Sequential(" + ", ".join(f"nn.Conv2d({i}, {i + 1}, 3)" for i in range(12)) + ")"
    y = x.replace("nn.Conv2d", "nn.Conv2d ").replace(", 3)", ", 3, pad_mode='pad')")
    assert len(y) >= _AUTOJUNK
    assert _ratio(x, y, 0.4) == difflib.SequenceMatcher(None, x, y).ratio()
