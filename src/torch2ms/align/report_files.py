"""A comparison report on disk: report.json, report.html and the plots (PNG)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .report import CompareReport
from .report_html import layer_plot_png, loss_plot_png, render_html


def write_report(report: CompareReport, out_dir: str | Path) -> dict[str, Path]:
    """report.json, report.html and the plots (PNG) into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "html": out / "report.html"}
    text = json.dumps(report.to_dict(), indent=1, default=_json_default, ensure_ascii=False) + "\n"
    _write_atomic(paths["json"], text.encode("utf-8"))
    pngs = {"layer_errors": layer_plot_png(report)}
    if report.training is not None and report.training.torch_losses:
        pngs["loss"] = loss_plot_png(report)
    for name, data in pngs.items():
        if data:
            paths[name] = out / f"{name}.png"
            _write_atomic(paths[name], data)
    _write_atomic(paths["html"], render_html(report).encode("utf-8"))
    return paths


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # a reader never sees half a file


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
