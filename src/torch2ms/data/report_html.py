"""The check-data report as one self-contained HTML page: verdict, pipelines, per-column table, findings,
and plots (per-channel mean/std and value distributions of both pipelines) inlined as SVG."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np

from ..i18n import N_, _, html_lang
from ..plots import figure, svg_markup
from .report import COLUMN_HEADS, DataReport, _num, _pct, _vec, level_word

_CSS = """body{font-family:system-ui,"Noto Sans CJK SC",sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.ok{color:#080}.bad{color:#c00}.warn{color:#a60}.info{color:#068}code{background:#f4f4f4;padding:1px 3px}
figure{margin:1em 0}svg{max-width:100%;height:auto}"""
MAX_HISTOGRAM_VALUES = 200_000


def _stats_figure(report: DataReport) -> Any:
    columns = [c for c in report.columns if c.torch_mean and c.ms_mean]
    if not columns:
        return None
    column = columns[0]
    fig, (left, right) = figure(11, 3.6, columns=2)
    channels = np.arange(len(column.torch_mean or []))
    for axis, (torch_values, ms_values, what) in zip(
        (left, right), ((column.torch_mean, column.ms_mean, N_("mean")), (column.torch_std, column.ms_std, N_("std")))
    ):
        what = _(what)
        axis.bar(channels - 0.2, torch_values or [], width=0.4, label="torch")
        axis.bar(channels + 0.2, ms_values or [], width=0.4, label="MindSpore")
        axis.set_xlabel(_("channel (axis 1 of the batch)"))
        axis.set_ylabel(_("per-channel {what} (pipeline output units)").format(what=what))
        axis.set_title(_("{column}: per-channel {what}").format(column=column.name, what=what))
        axis.set_xticks(channels)
        axis.grid(True, axis="y", alpha=0.25)
        axis.legend(fontsize=8, loc="best")
    return fig


def _value_figure(report: DataReport) -> Any:
    index = next((i for i, c in enumerate(report.columns) if c.kind != "label"), None)
    if index is None or not report.torch.batches or not report.ms.batches:
        return None
    torch_values = np.concatenate([b[index].reshape(-1) for b in report.torch.batches]).astype(np.float64)
    ms_values = np.concatenate([b[index].reshape(-1) for b in report.ms.batches]).astype(np.float64)
    torch_values, ms_values = torch_values[:MAX_HISTOGRAM_VALUES], ms_values[:MAX_HISTOGRAM_VALUES]
    finite = np.concatenate([torch_values, ms_values])
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return None
    bins = np.linspace(finite.min(), finite.max() if finite.max() > finite.min() else finite.min() + 1, 60)
    fig, axis = figure(11, 3.4)
    axis.hist(torch_values, bins=bins, alpha=0.55, density=True, label="torch")
    axis.hist(ms_values, bins=bins, alpha=0.55, density=True, label="MindSpore", histtype="step", lw=1.5)
    name = report.columns[index].name
    axis.set_xlabel(_("{column} value (pipeline output units)").format(column=name))
    axis.set_ylabel(_("density (share of elements per unit of value)"))
    axis.set_title(_("{column}: distribution of values in the compared batches").format(column=name))
    axis.grid(True, alpha=0.25)
    axis.legend(fontsize=8)
    return fig


def _figure(fig: Any, caption: str) -> str:
    if fig is None:
        return ""
    return f"<figure role='img' aria-label='{html.escape(caption)}'>{svg_markup(fig)}</figure>"


def _columns_table(report: DataReport) -> str:
    e = html.escape
    head = "".join("<th>" + e(_(h)) + "</th>" for h in COLUMN_HEADS)
    rows = []
    for c in report.columns:
        cells = (
            e(c.name),
            f"torch {tuple(c.torch_shape)}<br>MindSpore {tuple(c.ms_shape)}",
            f"{e(c.torch_dtype)}<br>{e(c.ms_dtype)}",
            f"{_vec(c.torch_mean)}<br>{_vec(c.ms_mean)}",
            f"{_vec(c.torch_std)}<br>{_vec(c.ms_std)}",
            _num(c.d_mean),
            _num(c.d_std),
            _num(c.max_abs),
            _pct(c.label_agreement),
        )
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _findings(report: DataReport) -> str:
    e = html.escape
    if not report.findings:
        return "<p class='ok'>" + e(_("None: shapes, dtypes, statistics, values and batch counts agree.")) + "</p>"
    items = []
    for f in report.findings:
        column = f" ({e(f.column)})" if f.column else ""
        evidence = "".join(f"<li>{e(x)}</li>" for x in f.evidence)
        items.append(
            f"<li><b class='{f.level if f.level != 'error' else 'bad'}'>{e(level_word(f.level))}: {e(f.title)}</b>"
            f"{column}: {e(f.message)}<br>" + e(_("fix:")) + f" {e(f.fix)}<ul>{evidence}</ul></li>"
        )
    return "<ul>" + "".join(items) + "</ul>"


def _sides(report: DataReport) -> str:
    e = html.escape
    parts = []
    for side in (report.torch, report.ms):
        stages = " ⟶ ".join(f"<code>{e(s)}</code>" for s in side.pipeline) or "—"
        note = f" ({e(side.count_note)})" if side.count_note else ""
        error = "<br><span class='bad'>" + e(_("raised:")) + f" {e(side.error)}</span>" if side.error else ""
        per_epoch = _("{n} batches per epoch").format(n=side.batches_per_epoch)
        parts.append(f"<li><b>{e(side.name)}</b>: {e(per_epoch)}{note}; {stages}{error}</li>")
    return "<ul>" + "".join(parts) + "</ul>"


def render_html(report: DataReport) -> str:
    e = html.escape
    ok = report.ok
    verdict = e(report.verdict_shown)
    return "\n".join(
        [
            f"<!doctype html><html lang='{html_lang()}'><head><meta charset='utf-8'><title>torch2ms check-data: "
            f"{verdict}</title><style>{_CSS}</style></head><body>",
            f"<h1>torch2ms check-data: <span class='{'ok' if ok else 'bad'}'>{verdict}</span></h1>",
            f"<p>{e(report.compared_line())}</p>",
            "<h2>" + e(_("Pipelines")) + "</h2>" + _sides(report),
            "<h2>" + e(_("Findings")) + "</h2>" + _findings(report),
            "<h2>" + e(_("Columns (upper line torch, lower line MindSpore)")) + "</h2>" + _columns_table(report),
            "<h2>"
            + e(_("Per-channel statistics"))
            + "</h2>"
            + _figure(_stats_figure(report), _("per-channel mean and std")),
            "<h2>" + e(_("Values")) + "</h2>" + _figure(_value_figure(report), _("distribution of values")),
            "</body></html>",
        ]
    )


def write_reports(report: DataReport, out_dir: str | Path) -> list[Path]:
    """report.json, report.md and report.html (with its plots inline) into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in (
        ("report.json", report.to_json()),
        ("report.md", report.to_markdown()),
        ("report.html", render_html(report)),
    ):
        p = out / name
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(p)  # atomic: a reader never sees half a report
        paths.append(p)
    return paths
