"""docs/output-vs-handwritten.md is generated (bench/output_vs_handwritten.py) and shows WHOLE files: the
side-by-side view loses no line of either file, on generated pairs of files (equal, disjoint, edited,
long lines that wrap, one side empty); the doc in the repository holds both views and the quick start it
is regenerated from."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

from output_vs_handwritten import CONTINUED, DOC, QUOTE_END, QUOTE_START, WIDTH, quickstart_code, side_by_side  # noqa: E402


def _columns(view: str) -> tuple[list[str], list[str]]:
    """The left and right files back from the view (wrapped parts joined again)."""
    left: list[str] = []
    right: list[str] = []
    for row in view.splitlines():
        lt, mark, rt = row[:WIDTH], row[WIDTH + 1 : WIDTH + 2], row[WIDTH + 3 :]
        if mark == CONTINUED:
            if left and left[-1].endswith("…"):
                left[-1] = left[-1][:-1] + lt.rstrip()
            if right and right[-1].endswith("…"):
                right[-1] = right[-1][:-1] + rt
            continue
        if mark != ">":
            left.append(lt.rstrip())
        if mark != "<":
            right.append(rt)
    return left, right


def _pairs() -> list[tuple[str, str, str]]:
    rng = random.Random(21)
    words = ["x = conv(x)", "    return x", "", "def f(a, b):", "y = " + "z" * 150, "class A(nn.Cell):"]
    base = [rng.choice(words) + ("" if i % 3 else f"  # {i}") for i in range(40)]
    edited = [line if rng.random() < 0.6 else rng.choice(words) for line in base]
    return [
        ("equal", "\n".join(base), "\n".join(base)),
        ("edited", "\n".join(base), "\n".join(edited)),
        ("disjoint", "\n".join(base[:10]), "\n".join(f"other {i}" for i in range(15))),
        ("left_empty", "", "\n".join(base[:5])),
        ("right_empty", "\n".join(base[:5]), ""),
    ]


@pytest.mark.parametrize(("name", "left", "right"), _pairs(), ids=[p[0] for p in _pairs()])
def test_the_view_keeps_every_line_of_both_files(name, left, right):
    view, stats = side_by_side(left, right)
    got_left, got_right = _columns(view)
    assert [x.rstrip() for x in got_left] == [x.rstrip() for x in left.splitlines()]
    assert [y.rstrip() for y in got_right] == [y.rstrip() for y in right.splitlines()]
    assert stats["same"] + stats["changed"] + stats["left_only"] == len(left.splitlines())
    assert stats["same"] + stats["changed"] + stats["right_only"] == len(right.splitlines())


def test_the_doc_holds_both_views_and_the_quick_start_it_regenerates_from():
    text = DOC.read_text(encoding="utf-8")
    assert text.count("```text") == 2 and QUOTE_START in text and QUOTE_END in text
    code = quickstart_code(None)
    assert "value_and_grad(forward_fn" in code and "def train_step(data, label):" in code
    assert "converted torchvision models/resnet.py" in text and "converted pytorch/examples mnist/main.py" in text
