"""Lookup renderer for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..i18n import _, pick


def render_lookup(d: dict, console: Console | None = None) -> None:
    console = console or Console()
    if not d["found"]:
        missing = _("{api}: not in the knowledge base.").format(api=d["query"])
        console.print(f"[red]{escape(missing)}[/]")
        if d["suggestions"]:
            console.print(_("Did you mean: ") + ", ".join(d["suggestions"]))
        return
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row(
        "torch",
        escape(d["torch"]) + (_("  (also {names})").format(names=", ".join(d["aliases"])) if d["aliases"] else ""),
    )
    t.add_row("MindSpore", d["mindspore"] or "—")
    t.add_row(_("status"), d["status"])
    t.add_row(_("backends"), ", ".join(d["backends"]) or "—")
    note = pick(d["note"], d.get("note_zh", ""))
    if note:
        t.add_row(_("pitfall"), escape(note))
    t.add_row(
        _("proven by"),
        d["proven_by"]
        if d.get("proven_by") and not d["tests"]
        else _("{n} differential test case(s)").format(n=d["tests"]),
    )
    console.print(t)
    if d["argument_differences"]:
        console.print("[bold]" + _("argument differences") + "[/]")
        _bullets(console, [(not line.startswith("  "), line.strip()) for line in d["argument_differences"]])
    if d["parameter_renames"]:
        console.print("[bold]" + _("parameter renames (weights)") + "[/]")
        dropped = _("(dropped)")
        renames = d["parameter_renames"].items()
        _bullets(console, [(True, f"{k} → {v if v is not None else dropped}") for k, v in renames])
    if d["example"]:
        # Plain text with rich's light highlighter (numbers, strings): pygments' Python lexer compiles
        # ~130 regexes on first use, half the time of a cold `torch2ms lookup` (kb_bench).
        console.print("[bold]" + _("before (PyTorch)") + "[/]")
        console.print(d["example"]["torch"], markup=False)
        console.print("[bold]" + _("after (MindSpore)") + "[/]")
        console.print(d["example"]["mindspore"], markup=False)


def _bullets(console: Console, items: list[tuple[bool, str]]) -> None:
    """A bulleted list whose long lines wrap under their own text (a hanging indent), not at column 0;
    ``(False, text)`` is a continuation line of the bullet above."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, width=3, justify="right")
    grid.add_column(overflow="fold")
    for bulleted, text in items:
        grid.add_row("•" if bulleted else "", escape(text))
    console.print(grid)
