"""compare --api in the HTML report (issue 25): the first divergent call's original torch line and its
converted MindSpore line side by side, with the KB entry and the reproducer, in English and Chinese,
opened in headless Chromium as a person opens the page (no console errors, nothing outside the page).

A small model whose forward is a run of functional calls is converted with ``convert_tree`` and one
converted line is broken (a softmax axis, a GELU approximation); real torch and real MindSpore run it.
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from requires_support import require_module
from test_reports_in_browser import SHOTS, _assert_self_contained, browser, open_page  # noqa: F401

from torch2ms.convert import convert_tree

pytestmark = pytest.mark.differential

MODEL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        h = F.gelu(h)
        a = torch.matmul(h, h.transpose(1, 2))
        a = F.softmax(a, dim=-1)
        return torch.matmul(a, h) + x
"""

# bug → (converted text, broken text, original text)
BUGS = {
    "softmax_axis": ("ops.softmax(a, axis=-1)", "ops.softmax(a, axis=-2)", "a = F.softmax(a, dim=-1)"),
    "gelu_approximate": ("ops.gelu(h)", 'ops.gelu(h, approximate="tanh")', "h = F.gelu(h)"),
}
WORDS = {  # language → (heading, the original column, the converted column, the page's lang)
    "en": ("API-level divergence (--api)", "original (torch)", "converted (MindSpore)", "en"),
    "zh": ("API 级差异（--api）", "原始（torch）", "转换后（MindSpore）", "zh-CN"),
}


def _report(tmp_path: Path, bug: str) -> tuple[Path, str, str]:
    require_module("torch")
    require_module("mindspore")
    from torch2ms.align.api import CompareOptions, compare_models

    old, new, original = BUGS[bug]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(MODEL, encoding="utf-8")
    convert_tree(tmp_path / "src", tmp_path / "out")
    target = tmp_path / "out" / "model.py"
    text = target.read_text(encoding="utf-8")
    assert text.count(old) == 1, text
    target.write_text(text.replace(old, new), encoding="utf-8")
    opts = CompareOptions(input_shapes=[(2, 4, 8)], graph=False, api=True, out_dir=tmp_path / "r")
    rep = compare_models(f"{tmp_path}/src/model.py:Net", f"{target}:Net", opts)
    assert rep.api is not None and rep.api["first"]["original"]["text"] == original, rep.api
    converted_line = next(line.strip() for line in target.read_text().splitlines() if new in line)
    return tmp_path / "r" / "report.html", original, converted_line


@pytest.mark.parametrize("lang", sorted(WORDS))
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_api_finding_shows_both_lines_side_by_side(browser, tmp_path, monkeypatch, lang, bug):  # noqa: F811
    monkeypatch.setenv("TORCH2MS_LANG", lang)
    page, original, converted = _report(tmp_path, bug)
    dom, console = open_page(browser, page, tmp_path, SHOTS / f"compare_api_{bug}_{lang}.png")
    assert console == [], console
    _assert_self_contained(dom)
    heading, left, right, html_lang = WORDS[lang]
    assert f'<html lang="{html_lang}">' in dom and heading in dom
    table = dom[dom.index('<table class="sbs">') :]
    table = table[: table.index("</table>")]
    rows = table.split("<tr>")
    assert left in rows[1] and right in rows[1] and rows[1].index(left) < rows[1].index(right)
    line_row = next(r for r in rows if html.escape(original, quote=False) in r)
    assert html.escape(converted, quote=False) in line_row  # one row: torch's line left, MindSpore's right
    assert line_row.index(html.escape(original, quote=False)) < line_row.index(html.escape(converted, quote=False))
    assert "model.py:" in table and "torch.nn.functional" in dom  # where, and the KB entry used there
