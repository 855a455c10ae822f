"""report.html for ``compare-train``: self-contained (plots embedded as PNG), the two loss curves and the
per-step relative difference, the findings and the step table."""

from __future__ import annotations

import base64
import html
import io
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # report.py writes this page: a run-time import would be a cycle
    from .report import TrainReport


def loss_plot_png(rep: TrainReport) -> bytes | None:
    """Loss per step on both sides (left) and |ΔL|/|L| per step on a log scale with the tolerance (right)."""
    rows = [r for r in rep.rows if r["torch_loss"] is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    warnings.filterwarnings("ignore", message="Attempting to set identical", category=UserWarning)

    fig, (ax, dx) = plt.subplots(1, 2, figsize=(11, 3.8))
    for opt in sorted({r["opt"] for r in rows}):
        mine = [r for r in rows if r["opt"] == opt]
        tag = f" (optimizer {opt})" if len({r["opt"] for r in rows}) > 1 else ""
        ax.plot([r["index"] + 1 for r in mine], [r["torch_loss"] for r in mine], "-", lw=2, label=f"torch{tag}")
        got = [r for r in mine if r["ms_loss"] is not None]
        ax.plot([r["index"] + 1 for r in got], [r["ms_loss"] for r in got], "--", lw=1.5, label=f"MindSpore{tag}")
        pos = [r for r in got if r["rel"] is not None]
        dx.semilogy([r["index"] + 1 for r in pos], [max(r["rel"], 1e-12) for r in pos], ".-", label=f"rel diff{tag}")
    dx.axhline(rep.tol, color="red", lw=1, ls=":", label=f"tolerance {rep.tol:g}")
    if rep.first_divergence:
        for a in (ax, dx):
            a.axvline(rep.first_divergence["index"] + 1, color="red", lw=0.8, alpha=0.6)
    ax.set(xlabel="optimizer step", ylabel="loss", title="loss")
    dx.set(xlabel="optimizer step", ylabel="|MindSpore − torch| / |torch|", title="relative difference")
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
    if isinstance(v, float):
        return f"{v:.3e}" if v and (abs(v) < 1e-3 or abs(v) >= 1e5) else f"{v:.6f}"
    if isinstance(v, list):
        return "/".join(_cell(x) for x in v)
    return html.escape(str(v))


COLUMNS = ["step", "optimizer", "torch loss", "MindSpore loss", "rel diff", "lr torch", "lr MindSpore"]
COLUMNS += ["grad norm torch", "grad norm MindSpore", "same batch"]
STYLE = (
    "body{font-family:sans-serif;margin:2em} table{border-collapse:collapse;font-size:13px} "
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right} .bad{color:#b00}"
)


def _tr(cells: list[Any], tag: str = "td", cls: str = "") -> str:
    inner = "".join(f"<{tag}>{c if tag == 'th' else _cell(c)}</{tag}>" for c in cells)
    return f"<tr class='{cls}'>{inner}</tr>"


def _table(rep: TrainReport) -> str:
    body = [_tr(COLUMNS, "th")]
    for r in rep.rows:
        bad = r["rel"] is None or r["rel"] > rep.tol
        cells = [r["step"], r["opt"], r["torch_loss"], r["ms_loss"], r["rel"], r["torch_lr"], r["ms_lr"]]
        cells += [r["torch_grad_norm"], r["ms_grad_norm"], r["same_inputs"]]
        body.append(_tr(cells, cls="bad" if bad else ""))
    return f"<table>{''.join(body)}</table>"


def _summary(rep: TrainReport) -> list[str]:
    verdict = {"same": "SAME", "different": "DIFFERENT", "error": "ERROR"}[rep.status]
    scripts = f"<code>{html.escape(rep.torch_script)}</code> (torch) vs <code>{html.escape(rep.ms_script)}</code>"
    lines = [
        f"<h1>compare-train: {verdict}</h1>",
        f"<p>{scripts} (MindSpore, {rep.mode}); {len(rep.rows)} steps; tolerance {rep.tol:g}</p>",
    ]
    if d := rep.first_divergence:
        cause = html.escape(d["cause"])
        lines.append(f"<p class='bad'>first step beyond tolerance: {d['step']} — likeliest cause: <b>{cause}</b></p>")
        lines.append("<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in d["facts"]) + "</ul>")
    if rep.error:
        lines.append(f"<p class='bad'>{html.escape(rep.error)}</p>")
    items = [f"<li>{html.escape(c)}</li>" for c in rep.conditions]
    for f in rep.findings:
        cls = "bad" if f["severity"] == "difference" else ""
        items.append(f"<li class='{cls}'>{f['severity']}: {html.escape(f['message'])}</li>")
    lines.append("<ul>" + "".join(items) + "</ul>")
    return lines


def render_html(rep: TrainReport) -> str:
    png = loss_plot_png(rep)
    lines = _summary(rep)
    if png:
        lines.append(f"<img src='data:image/png;base64,{base64.b64encode(png).decode()}' alt='loss curves'>")
    if rep.parameters:
        lines.append("<h2>parameters after training (worst first)</h2><table>")
        lines.append(_tr(["parameter", "max abs diff", "relative"], "th"))
        lines += [_tr([p["name"], p["max_abs"], p["rel"]]) for p in rep.parameters[:20]]
        lines.append("</table>")
    lines.append("<h2>steps</h2>" + _table(rep))
    head = f"<meta charset='utf-8'><title>torch2ms compare-train</title><style>{STYLE}</style>"
    return f"<!doctype html><html><head>{head}</head><body>{''.join(lines)}</body></html>\n"
