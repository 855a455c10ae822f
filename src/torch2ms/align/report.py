"""The comparison report: a dataclass, report.json, and (in report_text / report_html) the terminal
table and a self-contained HTML page with the plots."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .rows import Divergence, LayerRow, OutputCheck, TrainingResult

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
        from .report_html import layer_plot_png, loss_plot_png, render_html

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


def fmt(value: Any, digits: int = 2) -> str:
    """Numbers for tables: scientific when tiny or huge, "—" when missing."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if value != value:
            return "nan"
        small_or_big = value and (abs(value) < 1e-2 or abs(value) >= 1e4)
        return f"{value:.{digits}e}" if small_or_big else f"{value:.{digits + 2}g}"
    return str(value)


def sorted_rows(rows: list[LayerRow]) -> list[LayerRow]:
    """First divergence first, then missing layers, then the worst (largest scale-free error) first."""

    def key(row: LayerRow) -> tuple:
        rel = row.rel if row.rel is not None else 1e9
        return (row.verdict != "DIVERGES", row.verdict != "missing", -rel)

    return sorted(rows, key=key)


def training_lines(tr: TrainingResult) -> list[tuple[str, str]]:
    """Each training check with its number and the tolerance it is judged by: (state, text), where
    state is "ok", "bad" (counts against the port) or "note" (beyond tolerance, but harmless)."""
    lines = []
    if tr.error:
        lines.append(("bad", tr.error))
    if tr.ms_losses and len(tr.ms_losses) == len(tr.torch_losses):
        cmp = "≤" if tr.losses_ok else ">"
        text = f"losses: max relative difference {fmt(tr.max_loss_rel)} {cmp} tolerance {tr.loss_tol:g}"
        lines.append(("ok" if tr.losses_ok else "bad", text))
    else:
        lines.append(("bad", f"losses: MindSpore ran {len(tr.ms_losses)} of {tr.steps} steps"))
    if tr.worst_param is not None:
        cmp = "≤" if tr.params_ok else ">"
        text = (
            f"parameters after training: worst {tr.worst_param} {fmt(tr.worst_param_rel)} of its scale "
            f"{cmp} tolerance {tr.param_tol:g}"
        )
        if not tr.params_ok and not tr.params_matter:
            text += (
                "; the eval forward after training agrees, so they differ only in directions the output does not "
                "depend on (e.g. an attention key bias, a bias before BatchNorm: rounding noise that Adam scales up)"
            )
        lines.append(("ok" if tr.params_ok else "note" if not tr.params_matter else "bad", text))
    if tr.post_checked:
        text = f"eval forward after training: no layer beyond its noise and the floor {tr.post_floor:g}"
        if tr.post_divergence:
            text = f"eval forward after training (floor {tr.post_floor:g}): {tr.post_divergence}"
        lines.append(("ok" if tr.post_layers_ok else "bad", text))
    return lines


def print_report(rep: CompareReport, console: Any, max_rows: int = 25) -> None:
    from .report_text import print_report as _print

    _print(rep, console, max_rows)
