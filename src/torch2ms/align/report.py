"""The comparison report: a dataclass, report.json, a rich terminal table and a self-contained HTML page."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATUS_EXIT = {"match": 0, "divergence": 1}


@dataclass
class CompareReport:
    status: str  # "match" | "divergence"
    torch_spec: str
    ms_spec: str
    seed: int
    input_shapes: list[list[int]]
    alignment: str = "name"
    layers: list[dict[str, Any]] = field(default_factory=list)
    first_divergence: dict[str, Any] | None = None
    output: dict[str, Any] = field(default_factory=dict)  # {"pynative": {...}, "graph": {...}}
    weights: dict[str, Any] = field(default_factory=dict)
    missing_layers: list[str] = field(default_factory=list)
    extra_ms_cells: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    training: dict[str, Any] | None = None
    post_training_layers: list[dict[str, Any]] | None = None
    two_process: bool = False
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return STATUS_EXIT.get(self.status, 1)

    @property
    def ok(self) -> bool:
        return self.status == "match"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """report.json, report.html and the plots (PNG) into out_dir."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "report.json", "html": out / "report.html"}
        paths["json"].write_text(json.dumps(self.to_dict(), indent=1, default=_json_default) + "\n", encoding="utf-8")
        pngs = {"layer_errors": layer_plot_png(self)}
        if self.training and self.training.get("torch_losses"):
            pngs["loss"] = loss_plot_png(self)
        for k, data in pngs.items():
            if data:
                paths[k] = out / f"{k}.png"
                paths[k].write_bytes(data)
        paths["html"].write_text(render_html(self, pngs), encoding="utf-8")
        return paths


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.{digits}e}" if (v and (abs(v) < 1e-2 or abs(v) >= 1e4)) else f"{v:.{digits + 2}g}"
    return str(v)


def _display_name(row: dict[str, Any]) -> str:
    n = row["name"] or "(model)"
    return f"{n} #{row['call'] + 1}" if row.get("call") else n


def _sorted_rows(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """First divergence first, then the worst (largest scale-free error) layers."""

    def key(r: dict[str, Any]) -> tuple:
        first = r.get("verdict") == "DIVERGES"
        rel = r.get("rel")
        return (not first, r.get("verdict") != "missing", -(rel if isinstance(rel, float) and rel == rel else 1e9))

    return sorted(layers, key=key)


# ---------------------------------------------------------------------------------------------
# Terminal
# ---------------------------------------------------------------------------------------------
def print_report(rep: CompareReport, console: Any, max_rows: int = 25) -> None:
    from rich.table import Table

    def table(rows: list[dict[str, Any]], title: str) -> Table:
        t = Table(title=title, show_lines=False)
        for col, j in (
            ("#", "right"),
            ("layer", "left"),
            ("torch", "left"),
            ("MindSpore", "left"),
            ("shape", "left"),
            ("max abs", "right"),
            ("max rel", "right"),
            ("err/scale", "right"),
            ("cosine", "right"),
            ("within tol", "right"),
            ("local err", "right"),
            ("noise", "right"),
            ("verdict", "left"),
        ):
            t.add_column(col, justify=j)
        shown = _sorted_rows(rows)[:max_rows]
        for r in shown:
            style = {"DIVERGES": "bold red", "missing": "yellow"}.get(r["verdict"])
            within = r.get("within")
            t.add_row(
                str(r["index"]),
                _display_name(r),
                r.get("torch_type") or "",
                r.get("ms_type") or "—",
                "×".join(map(str, r.get("shape") or [])),
                _fmt(r.get("max_abs")),
                _fmt(r.get("max_rel")),
                _fmt(r.get("rel")),
                _fmt(r.get("cosine"), 6) if r.get("cosine") is not None else "—",
                f"{100 * within:.1f}%" if isinstance(within, float) else "—",
                _fmt(r.get("local_rel")),
                _fmt(r.get("noise_rel")),
                r["verdict"],
                style=style,
            )
        if len(rows) > len(shown):
            t.caption = f"{len(rows) - len(shown)} more layers in report.json / report.html"
        return t

    console.print(table(rep.layers, f"torch2ms compare — {len(rep.layers)} layer calls, worst first"))
    if rep.post_training_layers:
        console.print(table(rep.post_training_layers, "after training (eval forward)"))
    colour = "green" if rep.ok else "red"
    console.print(
        f"[bold {colour}]{rep.status.upper()}[/]  torch {rep.torch_spec}  vs  MindSpore {rep.ms_spec}"
        f"  (layers paired by {rep.alignment}{'; torch in its own process' if rep.two_process else ''})"
    )
    fd = rep.first_divergence
    if fd:
        console.print(
            f"[bold red]first divergence[/] ({fd['phase']}): [bold]{fd['layer'] or '(model)'}[/] "
            f"({fd.get('torch_type') or '?'} → {fd.get('ms_type') or '?'}), {fd['kind']}: {fd['detail']}"
        )
        if fd.get("hint"):
            console.print(f"  [yellow]hint:[/] {fd['hint']}")
    for mode, o in rep.output.items():
        if o.get("error"):
            console.print(f"final output {mode}: [red]failed[/] {o['error']}")
        elif o:
            mark = "[green]ok[/]" if o.get("ok") else "[red]differs[/]"
            console.print(
                f"final output {mode}: {mark} max abs {_fmt(o.get('max_abs'))}, err/scale {_fmt(o.get('rel'))}"
            )
    w = rep.weights
    if w.get("unloaded"):
        console.print(
            f"[red]MindSpore parameters not loaded[/] ({len(w['unloaded'])}): {', '.join(w['unloaded'][:10])}"
        )
    if w.get("shape_mismatch"):
        console.print(f"[red]weight shape mismatch[/]: {w['shape_mismatch'][:5]}")
    if rep.missing_layers:
        console.print(f"[yellow]torch layers with no MindSpore counterpart[/]: {', '.join(rep.missing_layers[:10])}")
    tr = rep.training
    if tr:
        mark = "[green]agree[/]" if tr.get("ok") else "[red]differ[/]"
        console.print(
            f"training ({tr['optimizer']}, {tr['steps']} steps): losses {mark}, max relative loss "
            f"difference {_fmt(tr.get('max_loss_rel'))}; parameters after training: worst "
            f"{tr.get('worst_param') or '—'} ({_fmt(tr.get('worst_param_rel'))})"
        )
    for p in rep.problems:
        console.print(f"[red]problem:[/] {p}")


# ---------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def layer_plot_png(rep: CompareReport) -> bytes | None:
    rows = [r for r in rep.layers if isinstance(r.get("rel"), float)]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(11, 4.6))
    # Exact zeros (ReLU, pooling, dropout) have no place on a log axis: they are left out.
    acc = [(r["index"], r["rel"]) for r in rows if r["rel"] > 0]
    if acc:
        ax.semilogy(*zip(*acc), "-o", ms=3, lw=1, label="accumulated error (max abs / output scale)")
    loc = [(r["index"], r["local_rel"]) for r in rows if isinstance(r.get("local_rel"), float) and r["local_rel"] > 0]
    if loc:
        ax.semilogy(*zip(*loc), "s", ms=3.5, alpha=0.75, label="local error (MindSpore layer on torch's input)")
    thr = [(r["index"], r["threshold"]) for r in rows if isinstance(r.get("threshold"), float)]
    if thr:
        ax.semilogy(*zip(*thr), "_", ms=7, color="grey", label="noise threshold")
    ax.set_yscale("log")
    fd = rep.first_divergence
    if fd and fd.get("index") is not None and fd.get("phase") == "forward":
        ax.axvline(fd["index"], color="red", lw=1.2)
        ax.annotate(
            f"first divergence: {fd['layer'] or '(model)'} ({fd.get('torch_type')}, {fd['kind']})",
            (fd["index"], 1),
            xycoords=("data", "axes fraction"),
            color="red",
            ha="left",
            va="top",
            fontsize=9,
            xytext=(4, -4),
            textcoords="offset points",
        )
    if len(rep.layers) <= 48:  # small models: name every call
        ax.set_xticks([r["index"] for r in rep.layers])
        ax.set_xticklabels([_display_name(r) for r in rep.layers], rotation=60, ha="right", fontsize=7)
    ax.set_xlabel("layer call (execution order; exact zeros not drawn)")
    ax.set_ylabel("error relative to output scale")
    ax.set_title(f"per-layer error: {rep.ms_spec}")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def loss_plot_png(rep: CompareReport) -> bytes | None:
    tr = rep.training or {}
    lt, lm = tr.get("torch_losses") or [], tr.get("ms_losses") or []
    if not lt:
        return None
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.6))
    a1.plot(range(1, len(lt) + 1), lt, "-", lw=2, label="torch")
    a1.plot(range(1, len(lm) + 1), lm, "--", lw=1.5, label="MindSpore")
    a1.set_xlabel("step")
    a1.set_ylabel("loss")
    a1.set_title(f"training loss ({tr.get('optimizer')}, lr {tr.get('lr')})")
    a1.legend()
    rel = tr.get("loss_rel") or []
    if rel:
        a2.semilogy(range(1, len(rel) + 1), [max(r, 1e-12) for r in rel], "-o", ms=3)
        a2.axhline(tr.get("loss_tol", 1e-4), color="red", lw=1, ls=":", label="tolerance")
        a2.legend()
    a2.set_xlabel("step")
    a2.set_ylabel("|loss_torch − loss_ms| / |loss_torch|")
    a2.set_title("relative loss difference")
    from matplotlib.ticker import MaxNLocator

    for a in (a1, a2):
        a.grid(True, alpha=0.25)
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _png(fig)


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td.l,th.l{text-align:left}tr.div{background:#fdd;font-weight:bold}
tr.missing{background:#ffd}.ok{color:#080}.bad{color:#c00}code{background:#f4f4f4;padding:1px 3px}img{max-width:100%}"""


def _rows_html(rows: list[dict[str, Any]]) -> str:
    head = "".join(
        f"<th{' class=l' if c in ('layer', 'torch', 'MindSpore', 'verdict') else ''}>{c}</th>"
        for c in (
            "#",
            "layer",
            "torch",
            "MindSpore",
            "shape",
            "max abs",
            "max rel",
            "err/scale",
            "cosine",
            "within tol",
            "local err",
            "noise thr.",
            "verdict",
        )
    )
    body = []
    for r in _sorted_rows(rows):
        cls = {"DIVERGES": "div", "missing": "missing"}.get(r["verdict"], "")
        within = r.get("within")
        cells = [
            str(r["index"]),
            html.escape(_display_name(r)),
            html.escape(r.get("torch_type") or ""),
            html.escape(r.get("ms_type") or "—"),
            "×".join(map(str, r.get("shape") or [])),
            _fmt(r.get("max_abs")),
            _fmt(r.get("max_rel")),
            _fmt(r.get("rel")),
            _fmt(r.get("cosine"), 6) if r.get("cosine") is not None else "—",
            f"{100 * within:.1f}%" if isinstance(within, float) else "—",
            _fmt(r.get("local_rel")),
            _fmt(r.get("threshold")),
            html.escape(r["verdict"] + (f" — {r['note']}" if r.get("note") else "")),
        ]
        tds = "".join(f"<td{' class=l' if k in (1, 2, 3, 12) else ''}>{c}</td>" for k, c in enumerate(cells))
        body.append(f"<tr class='{cls}'>{tds}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_html(rep: CompareReport, pngs: dict[str, bytes | None]) -> str:
    e = html.escape
    ok = rep.ok
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>torch2ms compare</title><style>{_CSS}</style>"
        f"</head><body><h1>torch2ms compare: <span class='{'ok' if ok else 'bad'}'>{rep.status.upper()}</span></h1>",
        f"<p>torch <code>{e(rep.torch_spec)}</code> vs MindSpore <code>{e(rep.ms_spec)}</code>; seed {rep.seed}; "
        f"inputs {e(str(rep.input_shapes))}; layers paired by {e(rep.alignment)}"
        f"{'; torch ran in its own process' if rep.two_process else ''}. Layer outputs were recorded with forward "
        f"hooks in PyNative; the final output was also run in GRAPH_MODE.</p>",
    ]
    fd = rep.first_divergence
    if fd:
        parts.append(
            f"<h2 class='bad'>First divergence ({e(fd['phase'])}): {e(fd['layer'] or '(model)')}</h2>"
            f"<p>{e(fd.get('torch_type') or '?')} → {e(fd.get('ms_type') or '?')}; <b>{e(fd['kind'])}</b>: "
            f"{e(fd['detail'])}</p><p><b>Hint:</b> {e(fd.get('hint') or '—')}</p>"
        )
    else:
        parts.append("<h2 class='ok'>No layer diverges beyond float32 noise</h2>")
    parts.append("<h2>Final output</h2><ul>")
    for mode, o in rep.output.items():
        if o.get("error"):
            parts.append(f"<li>{e(mode)}: <span class='bad'>failed</span> {e(o['error'])}</li>")
        elif o:
            parts.append(
                f"<li>{e(mode)}: <span class='{'ok' if o.get('ok') else 'bad'}'>{'ok' if o.get('ok') else 'differs'}"
                f"</span>, max abs {_fmt(o.get('max_abs'))}, err/scale {_fmt(o.get('rel'))}, cosine "
                f"{_fmt(o.get('cosine'), 6)}</li>"
            )
    parts.append("</ul>")
    if pngs.get("layer_errors"):
        b64 = base64.b64encode(pngs["layer_errors"]).decode()
        parts.append(f"<h2>Per-layer error</h2><img alt='per-layer error' src='data:image/png;base64,{b64}'>")
    if rep.training:
        tr = rep.training
        parts.append(
            f"<h2>Training ({e(str(tr['optimizer']))}, lr {tr['lr']}, {tr['steps']} steps)</h2>"
            f"<p>losses {'agree' if tr.get('ok') else 'differ'}: max relative difference "
            f"{_fmt(tr.get('max_loss_rel'))} (tolerance {_fmt(tr.get('loss_tol'))}); worst parameter after "
            f"training {e(str(tr.get('worst_param')))} ({_fmt(tr.get('worst_param_rel'))}).</p>"
        )
        if pngs.get("loss"):
            b64 = base64.b64encode(pngs["loss"]).decode()
            parts.append(f"<img alt='loss curves' src='data:image/png;base64,{b64}'>")
    problems = list(rep.problems)
    w = rep.weights
    if w.get("unloaded"):
        problems.append(f"MindSpore parameters not loaded: {', '.join(w['unloaded'])}")
    if w.get("shape_mismatch"):
        problems.append(f"weight shape mismatch: {w['shape_mismatch']}")
    if rep.missing_layers:
        problems.append(f"torch layers with no MindSpore counterpart: {', '.join(rep.missing_layers)}")
    if problems:
        parts.append("<h2>Problems</h2><ul>" + "".join(f"<li>{e(p)}</li>" for p in problems) + "</ul>")
    parts.append(f"<h2>Layers (first divergence, then worst first)</h2>{_rows_html(rep.layers)}")
    if rep.post_training_layers:
        parts.append(f"<h2>Layers after training</h2>{_rows_html(rep.post_training_layers)}")
    if rep.timings:
        parts.append("<h2>Timings (s)</h2><p>" + ", ".join(f"{e(k)} {v:.2f}" for k, v in rep.timings.items()) + "</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
