"""``torch2ms replay`` in the terminal: the table of APIs and the failing configurations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from ..i18n import N_, _
from .run import ReplayReport

STATUS = {
    "ok": N_("within tolerance"),
    "beyond": N_("beyond tolerance"),
    "raised": N_("MindSpore raised"),
    "no_rule": N_("not replayed (no KB rule)"),
    "random": N_("random: not compared"),
}


def print_replay(rep: ReplayReport, console: Any, exported: Path | None = None) -> None:
    from rich.table import Table

    inputs = _("regenerated inputs") if rep.regenerated else _("recorded inputs")
    t = Table(title=_("replay: {n} call configurations on {inputs} (tolerance {tol:g})").format(
        n=len(rep.results), inputs=inputs, tol=rep.tol))  # fmt: skip
    for col in (N_("API"), N_("configurations"), N_("calls"), N_("worst error"), N_("beyond")):
        t.add_column(_(col), justify="left" if col == "API" else "right")
    t.add_column(_("status"))
    for row in rep.table():
        worst = "—" if row["worst"] is None else f"{row['worst']:.1e}"
        mark = "[red]✗[/]" if row["failing"] else "[green]✓[/]"
        words = ", ".join(_(STATUS[s]) for s in row["statuses"])
        t.add_row(
            escape(row["api"]), str(row["configs"]), str(row["calls"]), worst, str(row["failing"]), f"{mark} {words}"
        )
    console.print(t)
    for r in rep.failing():
        console.print(f"[red]✗[/] {escape(r.config.where)}: {escape(r.config.call)}", highlight=False)
        console.print("    " + _("MindSpore:") + f" {escape(r.ms_call)}", highlight=False)
        detail = r.detail or (_("error {error:.3g}").format(error=r.error) if r.error is not None else "")
        console.print(f"    {escape(detail)}", highlight=False)
    if rep.skipped:
        text = _("not replayable (an argument that cannot be written back): {calls}")
        console.print(
            text.format(calls=", ".join(f"{k} ×{v}" for k, v in sorted(rep.skipped.items()))), highlight=False
        )
    if exported is not None:
        console.print(_("failing configurations written as KB cases: {path}").format(path=exported), highlight=False)
    elif not rep.failing():
        console.print("[green]" + _("every configuration within tolerance") + "[/]")
