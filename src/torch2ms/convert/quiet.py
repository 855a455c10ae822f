"""Statements with nothing to convert never reach libcst.

Most lines of a model zoo need no change: module-level weight enums with their metadata dicts,
constants, ``__all__``, plain helpers, and inside classes the many multi-line statements that
mention no torch name. The plan (plan.py) already knows them; here each one (but the shortest) is
swapped for a one-line placeholder (at its own indentation) before the libcst parse and its original text
is put back after codegen, so neither parse nor codegen pays for it, and the text comes back byte
for byte.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .plan import Stmt

PREFIX = "__torch2ms_kept_"
_PLACEHOLDER = re.compile(rf"{PREFIX}(\d+)__")


@dataclass
class Quiet:
    source: str  # the text libcst parses: quiet statements replaced by placeholders
    plan: list[Stmt]  # the plan of that text (placeholders are single quiet statements)
    segments: list[str]  # placeholder i → original text (from its first non-blank character)

    def restore(self, code: str) -> str:
        return _PLACEHOLDER.sub(lambda m: self.segments[int(m.group(1))], code)


def hide_quiet_statements(source: str, tree: ast.Module, plan: list[Stmt]) -> Quiet | None:
    """None when there is nothing worth hiding (or the file is unusual enough not to try)."""
    if PREFIX in source:
        return None
    lines = source.splitlines(keepends=True)
    nested_too = "autograd" not in source  # autograd_function.py reads whole Function bodies
    hide: dict[int, tuple[int, int]] = {}  # plan index → (first line, last line), 1-based
    saved = 0
    open_: list[tuple[int, bool]] = []  # enclosing statements: (last nested plan index, unsafe)
    pi = 0
    while pi < len(plan):
        while open_ and open_[-1][0] < pi:
            open_.pop()
        info = plan[pi]
        node = info.node
        if not info.interesting:
            span = None if (open_ and (not nested_too or open_[-1][1])) else _own_lines(node, lines)
            if (
                span is not None
                and (span[1] > span[0] or _long_line(lines[span[0] - 1]))
                and not _is_docstring(node, tree)
            ):
                hide[pi] = span
                saved += span[1] - span[0]
                pi += 1 + info.size  # its nested statements go with it
                continue
        if info.size:
            # A with-block the converter may unwrap (no_grad) re-indents its body: keep it whole.
            unsafe = isinstance(node, (ast.With, ast.AsyncWith)) and info.header
            open_.append((pi + info.size, unsafe or bool(open_ and open_[-1][1])))
        pi += 1
    if saved < 8:
        return None  # a few lines: not worth the bookkeeping
    out: list[str] = []
    new_plan: list[Stmt] = []
    segments: list[str] = []
    at = 1  # next source line to copy
    pi = 0
    while pi < len(plan):
        info = plan[pi]
        if pi not in hide:
            new_plan.append(info)
            pi += 1
            continue
        first, last = hide[pi]
        out += lines[at - 1 : first - 1]
        text = "".join(lines[first - 1 : last])
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        body = text[len(indent) :].rstrip("\r\n")
        name = f"{PREFIX}{len(segments)}__"
        segments.append(body)
        out.append(indent + name + text[len(indent) + len(body) :])
        at = last + 1
        placeholder = ast.Expr(
            ast.Name(name, ast.Load()),
            lineno=first,
            col_offset=len(indent.encode()),
            end_lineno=first,
            end_col_offset=len(indent.encode()) + len(name),
        )
        new_plan.append(Stmt(placeholder, False, 0))
        pi += 1 + info.size
    out += lines[at - 1 :]
    return Quiet("".join(out), new_plan, segments)


def is_placeholder(stmt: ast.stmt) -> bool:
    """A statement ``hide_quiet_statements`` wrote in place of a quiet one (no source holds the prefix)."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Name) and stmt.value.id.startswith(PREFIX)


def _own_lines(node: ast.stmt, lines: list[str]) -> tuple[int, int] | None:
    """(first line, last line) when the statement alone fills them (decorators included)."""
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    last = node.end_lineno or node.lineno
    if last > len(lines) or node.end_col_offset is None:
        return None
    head = lines[first - 1].encode()
    if decorators:
        if not head.lstrip().startswith(b"@") or head[: node.col_offset].strip():
            return None
    elif head[: node.col_offset].strip():
        return None  # something before it on its line (``a = 1; b = ...``, ``if x: y``)
    tail = lines[last - 1].encode()[node.end_col_offset :].strip()
    if tail and not tail.startswith(b"#"):
        return None  # something after it on its last line
    if any(ln.rstrip("\r\n").endswith("\\") for ln in lines[first - 1 : last]):
        return None  # a backslash continuation: keep libcst's view of the logical lines
    return first, last


def _is_docstring(node: ast.stmt, tree: ast.Module) -> bool:
    """The module docstring: imports are inserted after it, so it must stay a real statement."""
    return (
        bool(tree.body)
        and node is tree.body[0]
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _long_line(line: str) -> bool:
    """A one-line statement worth a placeholder: parse cost goes by tokens, and a dozen characters of
    code hold several where the placeholder is one name."""
    return len(line.strip()) > 12
