"""report.html for ``compare-train``: self-contained (plots embedded as PNG), the two loss curves and the
per-step relative difference, the findings and the step table."""

from __future__ import annotations

import base64
import html
import io
import warnings
from typing import Any

from ..align.api_html import API_CSS, api_html
from ..i18n import N_, _, html_lang
from .report import TrainReport
from .words import STATUS_WORDS, severity_word


def loss_plot_png(rep: TrainReport) -> bytes | None:
    """Loss per step on both sides (left) and |ΔL|/|L| per step on a log scale with the tolerance (right)."""
    rows = [r for r in rep.rows if r["torch_loss"] is not None]
    if not rows:
        return None
    from ..plots import pyplot

    plt = pyplot()
    warnings.filterwarnings("ignore", message="Attempting to set identical", category=UserWarning)

    fig, (ax, dx) = plt.subplots(1, 2, figsize=(11, 3.8))
    for opt in sorted({r["opt"] for r in rows}):
        mine = [r for r in rows if r["opt"] == opt]
        tag = " " + _("(optimizer {opt})").format(opt=opt) if len({r["opt"] for r in rows}) > 1 else ""
        ax.plot([r["index"] + 1 for r in mine], [r["torch_loss"] for r in mine], "-", lw=2, label=f"torch{tag}")
        got = [r for r in mine if r["ms_loss"] is not None]
        ax.plot([r["index"] + 1 for r in got], [r["ms_loss"] for r in got], "--", lw=1.5, label=f"MindSpore{tag}")
        pos = [r for r in got if r["rel"] is not None]
        dx.semilogy([r["index"] + 1 for r in pos], [max(r["rel"], 1e-12) for r in pos], ".-", label=_("rel diff") + tag)
    dx.axhline(rep.tol, color="red", lw=1, ls=":", label=_("tolerance {tol}").format(tol=f"{rep.tol:g}"))
    if rep.first_divergence:
        for a in (ax, dx):
            a.axvline(rep.first_divergence["index"] + 1, color="red", lw=0.8, alpha=0.6)
    ax.set(xlabel=_("optimizer step"), ylabel=_("loss"), title=_("loss"))
    dx.set(xlabel=_("optimizer step"), ylabel="|MindSpore − torch| / |torch|", title=_("relative difference"))
    ax.legend(fontsize=8)
    dx.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _cell(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):  # "same batch" column: a word of the report's language, not Python's True/False
        return _("yes") if v else _("no")
    if isinstance(v, float):
        return f"{v:.3e}" if v and (abs(v) < 1e-3 or abs(v) >= 1e5) else f"{v:.6f}"
    if isinstance(v, list):
        return "/".join(_cell(x) for x in v)
    return html.escape(str(v))


COLUMNS = [N_("step"), N_("optimizer"), N_("torch loss"), N_("MindSpore loss"), N_("rel diff"), N_("lr torch")]
COLUMNS += [N_("lr MindSpore"), N_("grad norm torch"), N_("grad norm MindSpore"), N_("same batch")]
STYLE = (
    "body{font-family:sans-serif;margin:2em} table{border-collapse:collapse;font-size:13px} "
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right} .bad{color:#b00}"
)


def _tr(cells: list[Any], tag: str = "td", cls: str = "") -> str:
    inner = "".join(f"<{tag}>{c if tag == 'th' else _cell(c)}</{tag}>" for c in cells)
    return f"<tr class='{cls}'>{inner}</tr>"


def _table(rep: TrainReport) -> str:
    body = [_tr([_(c) for c in COLUMNS], "th")]
    for r in rep.rows:
        bad = r["rel"] is None or r["rel"] > r.get("limit", rep.tol)
        cells = [r["step"], r["opt"], r["torch_loss"], r["ms_loss"], r["rel"], r["torch_lr"], r["ms_lr"]]
        cells += [r["torch_grad_norm"], r["ms_grad_norm"], r["same_inputs"]]
        body.append(_tr(cells, cls="bad" if bad else ""))
    return f"<table>{''.join(body)}</table>"


def _summary(rep: TrainReport) -> list[str]:
    verdict = html.escape(_(STATUS_WORDS[rep.status]))
    scripts = _("{torch} (torch) vs {ms} (MindSpore, {mode}); {n} steps; tolerance {tol}").format(
        torch=f"<code>{html.escape(rep.torch_script)}</code>",
        ms=f"<code>{html.escape(rep.ms_script)}</code>",
        mode=rep.mode,
        n=len(rep.rows),
        tol=f"{rep.tol:g}",
    )
    lines = [f"<h1>compare-train: {verdict}</h1>", f"<p>{scripts}</p>"]
    if d := rep.first_divergence:
        cause = html.escape(d["cause"])
        text = _("first step beyond tolerance: {step} — likeliest cause: {cause}").format(
            step=d["step"], cause=f"<b>{cause}</b>"
        )
        lines.append(f"<p class='bad'>{text}</p>")
        lines.append("<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in d["facts"]) + "</ul>")
    if rep.error:
        lines.append(f"<p class='bad'>{html.escape(rep.error)}</p>")
    items = [f"<li>{html.escape(c)}</li>" for c in rep.conditions]
    for f in rep.findings:
        cls = "bad" if f["severity"] == "difference" else ""
        items.append(f"<li class='{cls}'>{html.escape(severity_word(f['severity']))}: {html.escape(f['message'])}</li>")
    lines.append("<ul>" + "".join(items) + "</ul>")
    return lines


def render_html(rep: TrainReport) -> str:
    png = loss_plot_png(rep)
    lines = _summary(rep)
    if png:
        alt = html.escape(_("loss curves"), quote=True)
        lines.append(f"<img src='data:image/png;base64,{base64.b64encode(png).decode()}' alt='{alt}'>")
    if rep.parameters:
        lines.append("<h2>" + html.escape(_("parameters after training (worst first)")) + "</h2><table>")
        lines.append(_tr([html.escape(_(c)) for c in (N_("parameter"), N_("max abs diff"), N_("relative"))], "th"))
        lines += [_tr([p["name"], p["max_abs"], p["rel"]]) for p in rep.parameters[:20]]
        lines.append("</table>")
    if rep.api is not None:
        heading = _("API calls of step {step} (forward and loss):").format(step=rep.api["step"]).rstrip(":：")
        lines.append(api_html(rep.api, heading))
    lines.append("<h2>" + html.escape(_("steps")) + "</h2>" + _table(rep))
    head = f"<meta charset='utf-8'><title>torch2ms compare-train</title><style>{STYLE}\n{API_CSS}</style>"
    return f"<!doctype html><html lang='{html_lang()}'><head>{head}</head><body>{''.join(lines)}</body></html>\n"
