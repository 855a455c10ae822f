"""Formatting shared by the terminal and HTML compare reports (numbers, row order, training lines)."""

from __future__ import annotations

from typing import Any

from .rows import LayerRow, TrainingResult


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
