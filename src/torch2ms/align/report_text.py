"""The comparison report in the terminal: the worst layers as a rich table, then the verdict lines."""

from __future__ import annotations

from typing import Any, Literal

from rich.markup import escape
from rich.table import Table

from ..i18n import N_, _
from .metrics import OUTPUT_TOL
from .report import CompareReport
from .report_format import fmt, kind_word, phase_word, sorted_rows, status_word, training_lines, verdict_word
from .rows import LayerRow

COLUMNS: tuple[tuple[str, Literal["left", "right"]], ...] = (
    ("#", "right"),
    (N_("layer"), "left"),
    ("torch", "left"),
    ("MindSpore", "left"),
    (N_("shape"), "left"),
    (N_("max abs"), "right"),
    (N_("max rel"), "right"),
    (N_("err/scale"), "right"),
    (N_("cosine"), "right"),
    (N_("within tol"), "right"),
    (N_("local err"), "right"),
    (N_("noise"), "right"),
    (N_("verdict"), "left"),
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
        verdict_word(row.verdict),
    ]


# On a narrow terminal the table keeps the columns that say where and how much, in this order of need
# (the rest stay in report.json / report.html): each set is used below the width it names.
NARROW_COLUMNS: tuple[tuple[int, frozenset[str]], ...] = (
    (80, frozenset({"#", "layer", "err/scale", "verdict"})),
    (130, frozenset({"#", "layer", "torch", "MindSpore", "err/scale", "cosine", "verdict"})),
)


def _kept_columns(width: int | None) -> list[int]:
    """Indexes of COLUMNS shown at this terminal width (None: all)."""
    for below, names in NARROW_COLUMNS:
        if width is not None and width < below:
            return [i for i, (name, _j) in enumerate(COLUMNS) if name in names]
    return list(range(len(COLUMNS)))


def layer_table(rows: list[LayerRow], title: str, max_rows: int, width: int | None = None) -> Table:
    table = Table(title=title, show_lines=False)
    kept = _kept_columns(width)
    for i in kept:
        name, justify = COLUMNS[i]
        # Names are the point of the table: wrap them, never cut them with "…".
        table.add_column(_(name), justify=justify, overflow="fold")
    shown = sorted_rows(rows)[:max_rows]
    for row in shown:
        style = {"DIVERGES": "bold red", "missing": "yellow"}.get(row.verdict)
        cells = row_cells(row)
        table.add_row(*(escape(cells[i]) for i in kept), style=style)
    if len(rows) > len(shown):
        more = len(rows) - len(shown)
        table.caption = _("{n} more layers in report.json / report.html").format(n=more)
    return table


def _print_divergence(rep: CompareReport, console: Any) -> None:
    fd = rep.first_divergence
    if fd is None:
        return
    model = _("(model)")
    console.print(
        "[bold red]" + _("first divergence") + f"[/] ({escape(phase_word(fd.phase))}): "
        f"[bold]{escape(fd.layer or model)}[/] "
        f"({escape(fd.torch_type or '?')} → {escape(fd.ms_type or '?')}), {kind_word(fd.kind)}: {escape(fd.detail)}"
    )
    if fd.hint:
        console.print("  [yellow]" + _("hint:") + f"[/] {escape(fd.hint)}")


def _print_outputs(rep: CompareReport, console: Any) -> None:
    for mode, check in rep.output.items():
        if check.error:
            head = _("final output {mode}:").format(mode=mode)
            console.print(f"{head} [red]" + _("failed") + f"[/] {escape(check.error)}")
        else:
            mark = "[green]" + _("ok") + "[/]" if check.ok else "[red]" + _("differs") + "[/]"
            console.print(
                _("final output {mode}: {mark} max abs {max_abs}, err/scale {rel} (tolerance {tol})").format(
                    mode=mode, mark=mark, max_abs=fmt(check.max_abs), rel=fmt(check.rel), tol=f"{OUTPUT_TOL:g}"
                )
            )


def _print_weights_and_layers(rep: CompareReport, console: Any) -> None:
    w = rep.weights
    if w.get("unloaded"):
        names = escape(", ".join(w["unloaded"][:10]))
        console.print("[red]" + _("MindSpore parameters not loaded") + f"[/] ({len(w['unloaded'])}): {names}")
    if w.get("shape_mismatch"):
        console.print("[red]" + _("weight shape mismatch") + f"[/]: {escape(str(w['shape_mismatch'][:5]))}")
    if rep.missing_layers:
        names = escape(", ".join(rep.missing_layers[:10]))
        console.print("[yellow]" + _("torch layers with no MindSpore counterpart") + f"[/]: {names}")


def _print_training(rep: CompareReport, console: Any) -> None:
    tr = rep.training
    if tr is None:
        return
    verdict = "[green]" + _("agrees") + "[/]" if tr.ok else "[red]" + _("differs") + "[/]"
    console.print(
        _("training ({optimizer}, lr {lr}, loss {loss}, {steps} steps): {verdict}").format(
            optimizer=tr.optimizer, lr=f"{tr.lr:g}", loss=tr.loss, steps=tr.steps, verdict=verdict
        )
    )
    marks = {"ok": "[green]✓[/]", "note": "[yellow]![/]", "bad": "[red]✗[/]"}
    for state, text in training_lines(tr):
        console.print(f"  {marks[state]} {escape(text)}")


def print_report(rep: CompareReport, console: Any, max_rows: int = 25) -> None:
    title = _("torch2ms compare — {n} layer calls, worst first").format(n=len(rep.layers))
    width = getattr(console, "width", None)
    console.print(layer_table(rep.layers, title, max_rows, width))
    if rep.post_training_layers:
        console.print(layer_table(rep.post_training_layers, _("after training (eval forward)"), max_rows, width))
    colour = "green" if rep.ok else "red"
    process = _("; torch in its own process") if rep.two_process else ""
    pairing = _("layers paired by {alignment}").format(alignment=rep.alignment)
    console.print(
        f"[bold {colour}]{status_word(rep.status)}[/]  torch {escape(rep.torch_spec)}  vs  MindSpore "
        f"{escape(rep.ms_spec)}  ({pairing}{process})"
    )
    _print_divergence(rep, console)
    _print_outputs(rep, console)
    _print_weights_and_layers(rep, console)
    _print_training(rep, console)
    for problem in rep.problems:
        console.print("[red]" + _("problem:") + f"[/] {escape(problem)}")
    if rep.api is not None:
        from .api_align import print_api

        print_api(rep.api, console)
