"""The comparison report: a dataclass, report.json, and (in report_text / report_html) the terminal
table and a self-contained HTML page with the plots."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .report_html import layer_plot_png, loss_plot_png, render_html
from .rows import Divergence, LayerRow, OutputCheck, TrainingResult

# Formatting helpers the terminal and HTML reports share live in report_format.py.
STATUS_EXIT = {"match": 0, "divergence": 1}


@dataclass
class CompareReport:
    status: str  # "match" | "divergence"
    torch_spec: str
    ms_spec: str
    seed: int
    input_shapes: list[list[int]]
    alignment: str = "name"
    layers: list[LayerRow] = field(default_factory=list)
    first_divergence: Divergence | None = None
    output: dict[str, OutputCheck] = field(default_factory=dict)  # "pynative", "graph"
    weights: dict[str, Any] = field(default_factory=dict)
    missing_layers: list[str] = field(default_factory=list)
    extra_ms_cells: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    training: TrainingResult | None = None
    post_training_layers: list[LayerRow] | None = None
    two_process: bool = False
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return STATUS_EXIT.get(self.status, 1)

    @property
    def ok(self) -> bool:
        return self.status == "match"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["training"] = self.training.to_dict() if self.training is not None else None
        return data

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """report.json, report.html and the plots (PNG) into out_dir."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "report.json", "html": out / "report.html"}
        text = json.dumps(self.to_dict(), indent=1, default=_json_default, ensure_ascii=False) + "\n"
        _write_atomic(paths["json"], text.encode("utf-8"))
        pngs = {"layer_errors": layer_plot_png(self)}
        if self.training is not None and self.training.torch_losses:
            pngs["loss"] = loss_plot_png(self)
        for name, data in pngs.items():
            if data:
                paths[name] = out / f"{name}.png"
                _write_atomic(paths[name], data)
        _write_atomic(paths["html"], render_html(self).encode("utf-8"))
        return paths


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)  # a reader never sees half a file


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
