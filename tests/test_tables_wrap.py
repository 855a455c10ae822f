"""R30 (issue 13): terminal tables wrap the names they show (parameter names, API names, file paths) instead of
cutting them with "…": on a narrow terminal every piece of the name is still there, in order."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

LONG_PARAM = "encoder.layers.11.attention.output.dense_projection_with_a_long_name.weight"


def _column(text: str, index: int) -> str:
    """The cells of one column of a boxed table, joined over the lines it wraps onto."""
    return "".join(line.split("│")[index].strip() for line in text.splitlines() if line.count("│") > 3)


def test_r30_weights_table_wraps_parameter_names():
    from torch2ms.weights.cli import _table

    report = SimpleNamespace(missing=[(LONG_PARAM, (4, 4), "")], unexpected=[], mismatched=[])
    screen = Console(width=70, record=True, file=io.StringIO())
    _table(report, screen)
    text = screen.export_text()
    assert "…" not in text
    assert LONG_PARAM in _column(text, 2), text


def test_r30_scan_tables_wrap_api_names_and_paths(tmp_path):
    from torch2ms.analysis.scan import scan_path
    from torch2ms.report.scan_report import render_terminal

    folder = tmp_path / "a_rather_long_folder_name_for_the_models_of_this_project"
    folder.mkdir()
    (folder / "attention_with_a_long_file_name.py").write_text(
        "import torch.nn.functional as F\n\n\ndef f(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)\n",
        encoding="utf-8",
    )
    screen = Console(width=50, record=True, file=io.StringIO())
    render_terminal(scan_path(str(folder)), screen)
    text = screen.export_text()
    assert "…" not in text, text
    assert "torch.nn.functional.scaled_dot_product_attention" in _column(text, 1), text
