"""``compare --api`` / ``compare-train --api`` in the HTML reports: the first divergent call with the
original line and the converted line side by side, its KB entry, the cause, the error and the reproducer."""

from __future__ import annotations

import html
import json
from typing import Any

from ..i18n import N_, _

API_CSS = """table.sbs{width:100%;table-layout:fixed}table.sbs td,table.sbs th{text-align:left;vertical-align:top}
table.sbs pre{white-space:pre-wrap;word-break:break-word;margin:0;font-size:13px}table.sbs th.k{width:9em}"""

CAUSES = {
    "this_call": N_("this call: its inputs agree, its output differs"),
    "upstream": N_("its inputs already differ: the cause is upstream (state, weights or data)"),
    "float_noise": N_("float noise growing through many calls, not one wrong call"),
    "error": N_("the converted line raised an error"),
}


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return f"<pre>{html.escape(text)}</pre>"


def _row(key: str, torch_value: Any, ms_value: Any) -> str:
    return f"<tr><th class=k>{html.escape(key)}</th><td>{_cell(torch_value)}</td><td>{_cell(ms_value)}</td></tr>"


def _side_by_side(first: dict[str, Any]) -> str:
    o, c = first["original"], first["converted"]
    rows = [
        "<table class=sbs><tr><th class=k></th><th>"
        + html.escape(_("original (torch)"))
        + "</th><th>"
        + html.escape(_("converted (MindSpore)"))
        + "</th></tr>",
        _row(_("where"), f"{o['file']}:{o['line']}", f"{c['file']}:{c['line']}"),
        _row(_("line"), o["text"], c["text"]),
    ]
    if first.get("torch_calls") or first.get("ms_calls"):
        rows.append(_row(_("calls"), ", ".join(first["torch_calls"]), ", ".join(first["ms_calls"])))
        rows.append(_row(_("arguments"), first.get("torch_args", []), first.get("ms_args", [])))
        rows.append(_row(_("output"), first.get("torch_output"), first.get("ms_output")))
    return "".join(rows) + "</table>"


def api_html(api: dict[str, Any] | None, heading: str | None = None) -> str:
    """The section, or "" without an --api verdict."""
    if api is None:
        return ""
    e = html.escape
    parts = ["<h2>" + e(heading or _("API-level divergence (--api)")) + "</h2>"]
    if api.get("switched_to_pynative"):
        parts.append("<p>" + e(_("api: GRAPH_MODE was set; the calls were recorded in PyNative")) + "</p>")
    if api.get("status") == "not_recorded":
        text = _("api: no recording from {sides} (the step's forward was not found)")
        return "".join(parts) + "<p class=warn>" + e(text.format(sides=", ".join(api.get("missing", [])))) + "</p>"
    summary = _("api: {torch} torch and {ms} MindSpore call groups, {paired} paired by original line").format(
        torch=api.get("torch_groups", 0), ms=api.get("ms_groups", 0), paired=api.get("paired", 0)
    )
    parts.append(f"<p>{e(summary)}</p>")
    first = api.get("first")
    if first is None:
        return "".join(parts) + "<p class=ok>" + e(_("api: every paired call agrees")) + "</p>"
    cause = first.get("cause", "this_call")
    parts.append("<p class=bad><b>" + e(_("api: first divergent call")) + "</b>: " + e(_(CAUSES.get(cause, cause))))
    if first.get("max_abs") is not None:
        parts.append(" — " + e(_("max abs difference: {diff:.3g}").format(diff=first["max_abs"])))
    parts.append("</p>")
    if "original" in first:
        parts.append(_side_by_side(first))
    items = [
        e(_("KB entry:")) + f" <code>{e(k['api'])}</code>" + (f" — {e(k['note'])}" if k.get("note") else "")
        for k in first.get("kb", [])
    ]
    if first.get("error"):
        items.append(e(_("error:")) + f" <code>{e(first['error'])}</code>")
    if first.get("reproducer"):
        text = _("reproducer (this call alone, torch and MindSpore): {path}")
        items.append(text.format(path=f"<code>{e(first['reproducer'])}</code>"))
    if first.get("reproducer_lacks"):
        text = _("no reproducer: the statement also needs {names}, which a run of it alone would not have")
        items.append(e(text.format(names=", ".join(first["reproducer_lacks"]))))
    if items:
        parts.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    return "".join(parts)
