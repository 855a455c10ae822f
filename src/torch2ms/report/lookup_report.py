"""Lookup renderer for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def render_lookup(d: dict, console: Console | None = None) -> None:
    console = console or Console()
    if not d["found"]:
        console.print(f"[red]{escape(d['query'])}: not in the knowledge base.[/]")
        if d["suggestions"]:
            console.print("Did you mean: " + ", ".join(d["suggestions"]))
        return
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    t.add_row("torch", escape(d["torch"]) + (f"  (also {', '.join(d['aliases'])})" if d["aliases"] else ""))
    t.add_row("MindSpore", d["mindspore"] or "—")
    t.add_row("status", d["status"])
    t.add_row("backends", ", ".join(d["backends"]) or "—")
    if d["note"]:
        t.add_row("pitfall", escape(d["note"]))
    t.add_row(
        "proven by",
        d["proven_by"] if d.get("proven_by") and not d["tests"] else f"{d['tests']} differential test case(s)",
    )
    console.print(t)
    if d["argument_differences"]:
        console.print("[bold]argument differences[/]")
        for line in d["argument_differences"]:
            console.print(escape(f"  • {line}" if not line.startswith("  ") else f"    {line.strip()}"))
    if d["parameter_renames"]:
        console.print("[bold]parameter renames (weights)[/]")
        for k, v in d["parameter_renames"].items():
            console.print(escape(f"  • {k} → {v if v is not None else '(dropped)'}"))
    if d["example"]:
        # Plain text with rich's light highlighter (numbers, strings): pygments' Python lexer compiles
        # ~130 regexes on first use, half the time of a cold `torch2ms lookup` (kb_bench).
        console.print("[bold]before (PyTorch)[/]")
        console.print(d["example"]["torch"], markup=False)
        console.print("[bold]after (MindSpore)[/]")
        console.print(d["example"]["mindspore"], markup=False)
