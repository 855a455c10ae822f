"""The ``compare-train`` report: a dataclass and the terminal table (report_files.py writes report.json
and report.html)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..i18n import N_, _
from .words import DATA_WORDS, severity_word

STATUS_EXIT = {"same": 0, "different": 1, "error": 2}


@dataclass
class TrainReport:
    status: str  # "same" | "different" | "error"
    torch_script: str
    ms_script: str
    steps: int
    tol: float
    mode: str
    data: str
    seed: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    first_divergence: dict[str, Any] | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    parameters: list[dict[str, Any]] = field(default_factory=list)
    parameter_tol: float = 0.0
    conditions: list[str] = field(default_factory=list)  # data, randomness, fake data: what was made equal
    sides: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    work_dir: str = ""
    noise: dict[str, Any] | None = None  # torch against itself (noise.py): the band and what it absorbed
    api: dict[str, Any] | None = None  # --api: the first divergent call of the first divergent step (api_step.py)

    @property
    def exit_code(self) -> int:
        return STATUS_EXIT[self.status]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(v: float | None, digits: int = 6) -> str:
    if v is None:
        return "—"
    return f"{v:.{digits}f}" if 1e-3 <= abs(v) < 1e5 else f"{v:.{digits - 2}e}"


def _rows_to_show(rows: list[dict[str, Any]], first: int | None, limit: int = 40) -> list[dict[str, Any]]:
    if len(rows) <= limit:
        return rows
    keep = set(range(8)) | set(range(len(rows) - 4, len(rows)))
    if first is not None:
        keep |= set(range(max(0, first - 3), min(len(rows), first + 4)))
    keep |= set(range(0, len(rows), max(1, len(rows) // 10)))
    return [rows[i] for i in sorted(keep)]


def _batch(stats: dict[str, Any] | None) -> str:
    return "—" if not stats else f"{stats['mean']:.4g} / {stats['std']:.4g}"


def print_report(rep: TrainReport, console: Any) -> None:
    from rich.table import Table

    if rep.status == "error" and not rep.rows:
        console.print("[red]" + _("error:") + f"[/] {rep.error}", highlight=False)
        return
    multi = len({r["opt"] for r in rep.rows}) > 1
    first = rep.first_divergence["index"] if rep.first_divergence else None
    data = _(DATA_WORDS[rep.data]) if rep.data in DATA_WORDS else f"{rep.data} data"
    t = Table(title=f"compare-train: {rep.torch_script}  vs  {rep.ms_script}  ({rep.mode}, {data})")
    own = rep.data == "own"
    for col in (N_("step"), N_("torch loss"), N_("MindSpore loss"), N_("rel diff")):
        t.add_column(_(col), justify="right")
    t.add_column("")
    if own:  # the two pipelines' batches side by side (what check-data measures)
        for col in (N_("torch batch mean/std"), N_("MindSpore batch mean/std")):
            t.add_column(_(col), justify="right")
    shown = _rows_to_show(rep.rows, first)
    for prev, r in zip([None, *shown], shown):
        if prev is not None and r["index"] != prev["index"] + 1:
            t.add_row("…", *[""] * (6 if own else 4))
        mark = "[red]✗[/]" if r["rel"] is None or r["rel"] > r.get("limit", rep.tol) else "[green]✓[/]"
        step = f"{r['step']}·opt{r['opt']}" if multi else str(r["step"])
        rel = "—" if r["rel"] is None else f"{r['rel']:.1e}"
        batches = [_batch(r["torch_inputs"]), _batch(r["ms_inputs"])] if own else []
        t.add_row(step, _num(r["torch_loss"]), _num(r["ms_loss"]), rel, mark, *batches)
    console.print(t)
    for c in rep.conditions:
        console.print(f"  • {c}", highlight=False)
    _print_verdict(rep, console)


def _print_verdict(rep: TrainReport, console: Any) -> None:
    for f in rep.findings:
        style = "yellow" if f["severity"] == "warning" else "red"
        console.print(f"[{style}]{severity_word(f['severity'])}:[/] {f['message']}", highlight=False)
    if rep.parameters:
        w = rep.parameters[0]
        text = _("parameters after training: {n} compared, worst {name} ({rel} relative)").format(
            n=len(rep.parameters), name=w["name"], rel=f"{w['rel']:.1e}"
        )
        console.print(text, highlight=False)
    if rep.error:
        console.print("[red]" + _("ERROR") + f"[/]: {rep.error}", highlight=False)
        return
    d = rep.first_divergence
    worst = max((r["rel"] for r in rep.rows if r["rel"] is not None), default=0.0)
    if rep.status == "same":
        text = _("{n} steps, losses agree to {worst} relative (≤ {tol})").format(
            n=len(rep.rows), worst=f"{worst:.1e}", tol=f"{rep.tol:g}"
        )
        if rep.noise and rep.noise.get("absorbed"):
            text += " — " + _("the rest within torch's own run-to-run noise")
        console.print("[green]" + _("SAME") + f"[/]: {text}", highlight=False)
    elif d:
        text = _("from step {step}: torch {torch}, MindSpore {ms} ({rel})").format(
            step=d["step"], torch=_num(d["torch_loss"]), ms=_num(d["ms_loss"]), rel=d["rel_text"]
        )
        console.print("[red]" + _("DIFFERENT") + f"[/] {text}", highlight=False)
        console.print(_("likeliest cause:") + f" [bold]{d['cause']}[/]", highlight=False)
        for fact in d["facts"]:
            console.print(f"  {fact}", highlight=False)
        if rep.api is not None:
            _print_api(rep.api, console)
    elif rep.status == "different":
        text = _("the losses agree to {worst}, but the runs differ (above)").format(worst=f"{worst:.1e}")
        console.print("[red]" + _("DIFFERENT") + f"[/]: {text}", highlight=False)


def _print_api(api: dict[str, Any], console: Any) -> None:
    """--api: the calls of the first divergent step, as compare --api reports one forward."""
    from ..align.api_align import print_api

    console.print(_("API calls of step {step} (forward and loss):").format(step=api["step"]), highlight=False)
    if api.get("status") == "not_recorded":
        text = _("api: no recording from {sides} (the step's forward was not found)")
        console.print("  " + text.format(sides=", ".join(api.get("missing", []))), highlight=False)
        return
    print_api(api, console)
