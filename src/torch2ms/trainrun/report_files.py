"""A ``compare-train`` report on disk: report.json and report.html (loss curves, per-step difference)."""

from __future__ import annotations

import json
from pathlib import Path

from .html_report import render_html
from .report import TrainReport


def write_report(rep: TrainReport, out_dir: str | Path) -> dict[str, Path]:
    """report.json and report.html (loss curves and the per-step difference) into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "html": out / "report.html"}
    paths["json"].write_text(json.dumps(rep.to_dict(), indent=1, default=str) + "\n", encoding="utf-8")
    paths["html"].write_text(render_html(rep), encoding="utf-8")
    return paths
