"""Formatting shared by the terminal and HTML compare reports (numbers, row order, training lines)."""

from __future__ import annotations

from typing import Any

from ..i18n import N_, _
from .rows import LayerRow, TrainingResult

# The words shown for a row's verdict and the report's status (report.json keeps the English values).
_VERDICT_WORDS = {"ok": N_("ok"), "missing": N_("missing"), "downstream": N_("downstream"), "DIVERGES": N_("DIVERGES")}
_STATUS_WORDS = {"match": N_("MATCH"), "divergence": N_("DIVERGENCE")}
_PHASE_WORDS = {"forward": N_("forward"), "after training": N_("after training")}


# What kind of divergence a layer shows (layers.Finding.kind), in words; report.json keeps the key.
_KIND_WORDS = {
    "values": N_("values"),
    "shape": N_("shape"),
    "non-finite": N_("non-finite"),
    "input": N_("input"),
    "error": N_("error"),
}


def kind_word(kind: str) -> str:
    """A divergence's kind in the current language."""
    return _word(_KIND_WORDS, kind)


# The phases compare times (CompareReport.timings keys; report.json keeps the keys), in words.
_TIMING_WORDS = {
    "torch_side": N_("torch side in all"),
    "torch_build": N_("torch: build"),
    "torch_forward_hooked": N_("torch: hooked forward"),
    "torch_noise_f64": N_("torch: float64 noise reference"),
    "torch_train": N_("torch: training"),
    "ms_build_and_load": N_("MindSpore: build and load"),
    "ms_forward_hooked": N_("MindSpore: hooked forward"),
    "ms_replay_and_metrics": N_("MindSpore: replay and metrics"),
    "ms_graph_check": N_("MindSpore: GRAPH_MODE check"),
    "ms_train": N_("MindSpore: training"),
    "total": N_("total"),
}


def timing_word(key: str) -> str:
    """A timed phase of compare in the current language."""
    return _word(_TIMING_WORDS, key)


def verdict_word(verdict: str) -> str:
    """A row's verdict in the current language."""
    return _word(_VERDICT_WORDS, verdict)


def status_word(status: str) -> str:
    """MATCH / DIVERGENCE in the current language."""
    return _(_STATUS_WORDS[status]) if status in _STATUS_WORDS else status.upper()


def phase_word(phase: str) -> str:
    return _word(_PHASE_WORDS, phase)


def _word(words: dict[str, str], key: str) -> str:
    """``key``'s word from a table of N_() messages, in the current language (the key itself when not listed)."""
    return _(words[key]) if key in words else key


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
        text = _("losses: max relative difference {diff} {cmp} tolerance {tol}").format(
            diff=fmt(tr.max_loss_rel), cmp=cmp, tol=f"{tr.loss_tol:g}"
        )
        lines.append(("ok" if tr.losses_ok else "bad", text))
    else:
        text = _("losses: MindSpore ran {ran} of {steps} steps").format(ran=len(tr.ms_losses), steps=tr.steps)
        lines.append(("bad", text))
    if tr.worst_param is not None:
        lines.append(_parameter_line(tr))
    if tr.post_checked:
        text = _("eval forward after training: no layer beyond its noise and the floor {floor}").format(
            floor=f"{tr.post_floor:g}"
        )
        if tr.post_divergence:
            text = _("eval forward after training (floor {floor}): {divergence}").format(
                floor=f"{tr.post_floor:g}", divergence=tr.post_divergence
            )
        lines.append(("ok" if tr.post_layers_ok else "bad", text))
    return lines


def _parameter_line(tr: TrainingResult) -> tuple[str, str]:
    cmp = "≤" if tr.params_ok else ">"
    text = _("parameters after training: worst {name} {rel} of its scale {cmp} tolerance {tol}").format(
        name=tr.worst_param, rel=fmt(tr.worst_param_rel), cmp=cmp, tol=f"{tr.param_tol:g}"
    )
    if not tr.params_ok and not tr.params_matter:
        text += _(
            "; the eval forward after training agrees, so they differ only in directions the output does not "
            "depend on (e.g. an attention key bias, a bias before BatchNorm: rounding noise that Adam scales up)"
        )
    return ("ok" if tr.params_ok else "note" if not tr.params_matter else "bad", text)
