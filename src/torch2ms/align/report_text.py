"""The comparison report in the terminal: the worst layers as a rich table, then the verdict lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from rich.markup import escape
from rich.table import Table

from .metrics import OUTPUT_TOL
from .report_format import fmt, sorted_rows, training_lines
from .rows import LayerRow

if TYPE_CHECKING:
    from .report import CompareReport

COLUMNS: tuple[tuple[str, Literal["left", "right"]], ...] = (
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
)


def row_cells(row: LayerRow) -> list[str]:
    """The table's cells for one row (shared with the HTML page)."""
    return [
        str(row.index),
        row.display_name,
        row.torch_type or "",
        row.ms_type or "—",
        "×".join(map(str, row.shape or [])),
        fmt(row.max_abs),
        fmt(row.max_rel),
        fmt(row.rel),
        fmt(row.cosine, 6) if row.cosine is not None else "—",
        f"{100 * row.within:.1f}%" if row.within is not None else "—",
        fmt(row.local_rel),
        fmt(row.noise_rel),
        row.verdict,
    ]


def layer_table(rows: list[LayerRow], title: str, max_rows: int) -> Table:
    table = Table(title=title, show_lines=False)
    for name, justify in COLUMNS:
        # Names are the point of the table: wrap them, never cut them with "…".
        table.add_column(name, justify=justify, overflow="fold")
    shown = sorted_rows(rows)[:max_rows]
    for row in shown:
        style = {"DIVERGES": "bold red", "missing": "yellow"}.get(row.verdict)
        table.add_row(*(escape(c) for c in row_cells(row)), style=style)
    if len(rows) > len(shown):
        table.caption = f"{len(rows) - len(shown)} more layers in report.json / report.html"
    return table


def _print_divergence(rep: CompareReport, console: Any) -> None:
    fd = rep.first_divergence
    if fd is None:
        return
    console.print(
        f"[bold red]first divergence[/] ({escape(fd.phase)}): [bold]{escape(fd.layer or '(model)')}[/] "
        f"({escape(fd.torch_type or '?')} → {escape(fd.ms_type or '?')}), {fd.kind}: {escape(fd.detail)}"
    )
    if fd.hint:
        console.print(f"  [yellow]hint:[/] {escape(fd.hint)}")


def _print_outputs(rep: CompareReport, console: Any) -> None:
    for mode, check in rep.output.items():
        if check.error:
            console.print(f"final output {mode}: [red]failed[/] {escape(check.error)}")
        else:
            mark = "[green]ok[/]" if check.ok else "[red]differs[/]"
            console.print(
                f"final output {mode}: {mark} max abs {fmt(check.max_abs)}, err/scale {fmt(check.rel)} "
                f"(tolerance {OUTPUT_TOL:g})"
            )


def _print_weights_and_layers(rep: CompareReport, console: Any) -> None:
    w = rep.weights
    if w.get("unloaded"):
        names = escape(", ".join(w["unloaded"][:10]))
        console.print(f"[red]MindSpore parameters not loaded[/] ({len(w['unloaded'])}): {names}")
    if w.get("shape_mismatch"):
        console.print(f"[red]weight shape mismatch[/]: {escape(str(w['shape_mismatch'][:5]))}")
    if rep.missing_layers:
        names = escape(", ".join(rep.missing_layers[:10]))
        console.print(f"[yellow]torch layers with no MindSpore counterpart[/]: {names}")


def _print_training(rep: CompareReport, console: Any) -> None:
    tr = rep.training
    if tr is None:
        return
    verdict = "[green]agrees[/]" if tr.ok else "[red]differs[/]"
    console.print(f"training ({tr.optimizer}, lr {tr.lr:g}, loss {tr.loss}, {tr.steps} steps): {verdict}")
    marks = {"ok": "[green]✓[/]", "note": "[yellow]![/]", "bad": "[red]✗[/]"}
    for state, text in training_lines(tr):
        console.print(f"  {marks[state]} {escape(text)}")


def print_report(rep: CompareReport, console: Any, max_rows: int = 25) -> None:
    console.print(layer_table(rep.layers, f"torch2ms compare — {len(rep.layers)} layer calls, worst first", max_rows))
    if rep.post_training_layers:
        console.print(layer_table(rep.post_training_layers, "after training (eval forward)", max_rows))
    colour = "green" if rep.ok else "red"
    process = "; torch in its own process" if rep.two_process else ""
    console.print(
        f"[bold {colour}]{rep.status.upper()}[/]  torch {escape(rep.torch_spec)}  vs  MindSpore "
        f"{escape(rep.ms_spec)}  (layers paired by {rep.alignment}{process})"
    )
    _print_divergence(rep, console)
    _print_outputs(rep, console)
    _print_weights_and_layers(rep, console)
    _print_training(rep, console)
    for problem in rep.problems:
        console.print(f"[red]problem:[/] {escape(problem)}")
