"""The comparison report as one self-contained HTML page (plots inlined as SVG, text kept as text) and
the plots as PNG files."""

from __future__ import annotations

import html
from typing import Any

from ..i18n import _, html_lang
from ..plots import figure, png_bytes, svg_markup
from .api_html import API_CSS, api_html
from .metrics import OUTPUT_TOL
from .report import CompareReport
from .report_format import fmt, kind_word, phase_word, sorted_rows, status_word, timing_word, training_lines
from .report_text import COLUMNS, row_cells
from .rows import LayerRow

_CSS = """body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td.l,th.l{text-align:left}tr.div{background:#fdd;font-weight:bold}tr.missing{background:#ffd}.ok{color:#080}
.bad{color:#c00}.warn{color:#a60}code{background:#f4f4f4;padding:1px 3px}figure{margin:1em 0}svg{max-width:100%;height:auto}"""
_LEFT = {"layer", "torch", "MindSpore", "verdict"}


def _layer_figure(rep: CompareReport) -> Any:
    rows = [r for r in rep.layers if r.rel is not None]
    if not rows:
        return None
    fig, ax = figure(11, 4.6)
    # Exact zeros (ReLU, pooling, dropout) have no place on a log axis: they are left out.
    accumulated = [(r.index, r.rel) for r in rows if r.rel and r.rel > 0]
    if accumulated:
        ax.semilogy(*zip(*accumulated), "-o", ms=3, lw=1, label=_("accumulated error (max |Δ| / max |torch|)"))
    local = [(r.index, r.local_rel) for r in rows if r.local_rel]
    if local:
        ax.semilogy(*zip(*local), "s", ms=3.5, alpha=0.75, label=_("local error (MindSpore layer on torch's input)"))
    thresholds = [(r.index, r.threshold) for r in rows if r.threshold]
    if thresholds:
        ax.semilogy(*zip(*thresholds), "_", ms=7, color="grey", label=_("noise threshold"))
    ax.set_yscale("log")
    fd = rep.first_divergence
    if fd is not None and fd.index is not None and fd.phase == "forward":
        ax.axvline(fd.index, color="red", lw=1.2)
        label = _("first divergence: {layer} ({type}, {kind})").format(
            layer=fd.layer or _("(model)"), type=fd.torch_type, kind=kind_word(fd.kind)
        )
        ax.annotate(label, (fd.index, 1), xycoords=("data", "axes fraction"), color="red", ha="left", va="top",
                    fontsize=9, xytext=(4, -4), textcoords="offset points")  # fmt: skip
    if len(rep.layers) <= 48:  # small models: name every call
        ax.set_xticks([r.index for r in rep.layers])
        ax.set_xticklabels([r.display_name for r in rep.layers], rotation=60, ha="right", fontsize=7)
    ax.set_xlabel(_("layer call (execution order; exact zeros not drawn)"))
    ax.set_ylabel(_("error / output scale (max |Δ| ÷ max |torch|, unitless)"))
    ax.set_title(_("per-layer error: {spec}").format(spec=rep.ms_spec))
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def _loss_figure(rep: CompareReport) -> Any:
    tr = rep.training
    if tr is None or not tr.torch_losses:
        return None
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = figure(11, 3.6, columns=2)
    left.plot(range(1, len(tr.torch_losses) + 1), tr.torch_losses, "-", lw=2, label="torch")
    left.plot(range(1, len(tr.ms_losses) + 1), tr.ms_losses, "--", lw=1.5, label="MindSpore")
    left.set_xlabel(_("training step"))
    left.set_ylabel(_("loss ({loss}, unitless)").format(loss=tr.loss))
    left.set_title(_("training loss ({optimizer}, lr {lr})").format(optimizer=tr.optimizer, lr=f"{tr.lr:g}"))
    left.legend()
    if tr.loss_rel:
        right.semilogy(range(1, len(tr.loss_rel) + 1), [max(r, 1e-12) for r in tr.loss_rel], "-o", ms=3)
        right.axhline(tr.loss_tol, color="red", lw=1, ls=":", label=_("tolerance {tol}").format(tol=f"{tr.loss_tol:g}"))
        right.legend()
    right.set_xlabel(_("training step"))
    right.set_ylabel(_("|loss torch − loss MindSpore| ÷ |loss torch|"))
    right.set_title(_("relative loss difference"))
    for axis in (left, right):
        axis.grid(True, alpha=0.25)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def layer_plot_png(rep: CompareReport) -> bytes | None:
    fig = _layer_figure(rep)
    return png_bytes(fig) if fig is not None else None


def loss_plot_png(rep: CompareReport) -> bytes | None:
    fig = _loss_figure(rep)
    return png_bytes(fig) if fig is not None else None


def _rows_html(rows: list[LayerRow]) -> str:
    shown = [(name, html.escape(_(name))) for name, _side in COLUMNS]
    head = "".join(f"<th{' class=l' if name in _LEFT else ''}>{word}</th>" for name, word in shown)
    body = []
    for row in sorted_rows(rows):
        cls = {"DIVERGES": "div", "missing": "missing"}.get(row.verdict, "")
        cells = row_cells(row)
        if row.note:
            cells[-1] = f"{cells[-1]} — {row.note}"
        tds = "".join(
            f"<td{' class=l' if COLUMNS[k][0] in _LEFT else ''}>{html.escape(c)}</td>" for k, c in enumerate(cells)
        )
        body.append(f"<tr class='{cls}'>{tds}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _divergence_html(rep: CompareReport) -> str:
    e = html.escape
    fd = rep.first_divergence
    if fd is None:
        return "<h2 class='ok'>" + e(_("No layer diverges beyond float32 noise")) + "</h2>"
    heading = _("First divergence ({phase}): {layer}").format(
        phase=phase_word(fd.phase), layer=fd.layer or _("(model)")
    )
    return (
        f"<h2 class='bad'>{e(heading)}</h2>"
        f"<p>{e(fd.torch_type or '?')} → {e(fd.ms_type or '?')}; <b>{e(kind_word(fd.kind))}</b>: {e(fd.detail)}</p>"
        "<p><b>" + e(_("Hint:")) + f"</b> {e(fd.hint or '—')}</p>"
    )


def _outputs_html(rep: CompareReport) -> str:
    e = html.escape
    items = []
    for mode, check in rep.output.items():
        if check.error:
            items.append(f"<li>{e(mode)}: <span class='bad'>" + e(_("failed")) + f"</span> {e(check.error)}</li>")
        else:
            mark = e(_("ok") if check.ok else _("differs"))
            numbers = _("max abs {max_abs}, err/scale {rel} (tolerance {tol}), cosine {cosine}").format(
                max_abs=fmt(check.max_abs), rel=fmt(check.rel), tol=f"{OUTPUT_TOL:g}", cosine=fmt(check.cosine, 6)
            )
            items.append(f"<li>{e(mode)}: <span class='{'ok' if check.ok else 'bad'}'>{mark}</span>, {e(numbers)}</li>")
    return "<h2>" + e(_("Final output")) + "</h2><ul>" + "".join(items) + "</ul>"


def _training_html(rep: CompareReport) -> str:
    tr = rep.training
    if tr is None:
        return ""
    e = html.escape
    verdict = (
        "<span class='ok'>" + e(_("agrees")) + "</span>"
        if tr.ok
        else "<span class='bad'>" + e(_("differs")) + "</span>"
    )
    marks = {"ok": ("ok", "✓"), "note": ("warn", "!"), "bad": ("bad", "✗")}
    items = "".join(
        f"<li class='{marks[state][0]}'>{marks[state][1]} {e(text)}</li>" for state, text in training_lines(tr)
    )
    heading = _("Training ({optimizer}, lr {lr}, loss {loss}, {steps} steps): {verdict}").format(
        optimizer=e(tr.optimizer), lr=f"{tr.lr:g}", loss=e(tr.loss), steps=tr.steps, verdict=verdict
    )
    figure_html = _figure_html(_loss_figure(rep), _("loss curves of both sides and their relative difference"))
    head = f"<h2>{heading}</h2>"
    return head + f"<ul>{items}</ul>" + figure_html


def _problems_html(rep: CompareReport) -> str:
    problems = list(rep.problems)
    w = rep.weights
    if w.get("unloaded"):
        problems.append(_("MindSpore parameters not loaded") + f": {', '.join(w['unloaded'])}")
    if w.get("shape_mismatch"):
        problems.append(_("weight shape mismatch") + f": {w['shape_mismatch']}")
    if rep.missing_layers:
        problems.append(_("torch layers with no MindSpore counterpart") + f": {', '.join(rep.missing_layers)}")
    if not problems:
        return ""
    return (
        "<h2>"
        + html.escape(_("Problems"))
        + "</h2><ul>"
        + "".join(f"<li>{html.escape(p)}</li>" for p in problems)
        + "</ul>"
    )


def _figure_html(fig: Any, caption: str) -> str:
    if fig is None:
        return ""
    return f"<figure role='img' aria-label='{html.escape(caption)}'>{svg_markup(fig)}</figure>"


def render_html(rep: CompareReport) -> str:
    """The whole page; the plots are inline SVG (the PNG files are written beside it for other uses)."""
    e = html.escape
    title = f"torch2ms compare: {status_word(rep.status)}"
    process = _("; torch ran in its own process") if rep.two_process else ""
    template = (
        _(
            "torch {torch} vs MindSpore {ms}; seed {seed}; inputs {inputs}; layers paired by {alignment}{process}. "
            "Layer outputs were recorded with forward hooks in PyNative; the final output was also run in GRAPH_MODE."
        )
        if "graph" in rep.output
        else _(
            "torch {torch} vs MindSpore {ms}; seed {seed}; inputs {inputs}; layers paired by {alignment}{process}. "
            "Layer outputs were recorded with forward hooks in PyNative (GRAPH_MODE not run)."
        )
    )
    intro = template.format(
        torch=f"<code>{e(rep.torch_spec)}</code>",
        ms=f"<code>{e(rep.ms_spec)}</code>",
        seed=rep.seed,
        inputs=e(str(rep.input_shapes)),
        alignment=e(rep.alignment),
        process=process,
    )
    parts = [
        f"<!doctype html><html lang='{html_lang()}'><head><meta charset='utf-8'><title>{e(title)}</title>"
        f"<style>{_CSS}\n{API_CSS}</style></head><body>",
        f"<h1>torch2ms compare: <span class='{'ok' if rep.ok else 'bad'}'>{e(status_word(rep.status))}</span></h1>",
        f"<p>{intro}</p>",
        _divergence_html(rep),
        api_html(rep.api),
        _outputs_html(rep),
        "<h2>" + e(_("Per-layer error")) + "</h2>" + _figure_html(_layer_figure(rep), _("per-layer error")),
        _training_html(rep),
        _problems_html(rep),
        "<h2>" + e(_("Layers (first divergence, then worst first)")) + f"</h2>{_rows_html(rep.layers)}",
    ]
    if rep.post_training_layers:
        parts.append("<h2>" + e(_("Layers after training")) + f"</h2>{_rows_html(rep.post_training_layers)}")
    if rep.timings:
        times = "; ".join(f"{e(timing_word(k))} {v:.2f}" for k, v in rep.timings.items())
        parts.append("<h2>" + e(_("Timings (s)")) + f"</h2><p>{times}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
