"""Top-level statements with nothing to convert never reach libcst.

A third of a model zoo's lines are module-level statements that mention no torch name (weight
enums with their metadata dicts, constants, ``__all__``, plain helpers). The plan (plan.py) already
knows them; here each one is swapped for a one-line placeholder before the libcst parse and its
original text is put back after codegen, so neither parse nor codegen pays for it, and the text
comes back byte for byte.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .plan import Stmt

PREFIX = "__torch2ms_kept_"


@dataclass
class Quiet:
    source: str  # the text libcst parses: quiet statements replaced by placeholders
    plan: list[Stmt]  # the plan of that text (placeholders are single quiet statements)
    segments: dict[str, str]  # placeholder → original text (without its last newline)

    def restore(self, code: str) -> str:
        for name, text in self.segments.items():
            code = code.replace(name, text, 1)
        return code


def hide_quiet_statements(source: str, tree: ast.Module, plan: list[Stmt]) -> Quiet | None:
    """None when there is nothing worth hiding (or the file is unusual enough not to try)."""
    if PREFIX in source:
        return None
    body = tree.body
    top = {id(n): i for i, n in enumerate(body)}
    lines = source.splitlines(keepends=True)
    hide: dict[int, tuple[int, int]] = {}  # plan index → (first line, last line), 1-based
    for pi, info in enumerate(plan):
        bi = top.get(id(info.node))
        if bi is None or info.interesting:
            continue
        node = info.node
        if bi == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the module docstring: imports are inserted after it
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        # The statement must own its lines (no ``a = 1; b = 2`` sharing them with a neighbour).
        if bi > 0 and (body[bi - 1].end_lineno or 0) >= first:
            continue
        if bi + 1 < len(body) and min([body[bi + 1].lineno, *(d.lineno for d in getattr(body[bi + 1], "decorator_list", []))]) <= last:
            continue
        if last > len(lines) or node.col_offset != 0:
            continue
        hide[pi] = (first, last)
    if sum(last - first + 1 for first, last in hide.values()) < 8:
        return None  # a few lines: not worth the bookkeeping
    out: list[str] = []
    new_plan: list[Stmt] = []
    segments: dict[str, str] = {}
    at = 1  # next source line to copy
    pi = 0
    while pi < len(plan):
        info = plan[pi]
        if pi not in hide:
            new_plan.append(info)
            pi += 1
            continue
        first, last = hide[pi]
        out += lines[at - 1:first - 1]
        name = f"{PREFIX}{len(segments)}__"
        text = "".join(lines[first - 1:last])
        body_text = text.rstrip("\r\n")
        segments[name] = body_text
        out.append(name + text[len(body_text):])
        at = last + 1
        placeholder = ast.Expr(ast.Name(name, ast.Load()), lineno=first, col_offset=0, end_lineno=first, end_col_offset=len(name))
        new_plan.append(Stmt(placeholder, False, 0))
        pi += 1 + info.size  # its nested statements go with it
    out += lines[at - 1:]
    return Quiet("".join(out), new_plan, segments)
