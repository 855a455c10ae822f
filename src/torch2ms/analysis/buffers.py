"""Buffers a Module class registers on itself (static, ``ast`` only).

torch: assigning a tensor to a registered buffer's name (``self.freqs_cis = precompute(...)`` after
``self.register_buffer("freqs_cis", ...)``) replaces the buffer. MindSpore's Cell refuses it ("Buffer
already exists in network"), so the converter writes ``register_buffer`` again (convert/constructs/
module_attributes.py); this finds the names and each one's ``persistent`` argument.
"""

from __future__ import annotations

import ast

from .forward_state import self_attr

_BODIES = ("body", "orelse", "finalbody")


def registered_buffers(cls: ast.ClassDef) -> dict[str, ast.expr | None]:
    """Buffer name → its ``persistent`` argument as registered (None: not given), for the statements
    ``self.register_buffer("name", ...)`` with a literal name in the class's methods (statements
    only, not every expression: this runs on every class of every file)."""
    out: dict[str, ast.expr | None] = {}
    stack: list[ast.stmt] = list(cls.body)
    while stack:
        stmt = stack.pop()
        for field in _BODIES:
            stack.extend(getattr(stmt, field, None) or ())
        n = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "register_buffer"
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)
        ):
            continue
        persistent = n.args[2] if len(n.args) > 2 else None
        persistent = next((k.value for k in n.keywords if k.arg == "persistent"), persistent)
        out.setdefault(n.args[0].value, persistent)
    return out


def buffer_assignment(stmt: ast.stmt, buffers: dict[str, ast.expr | None]) -> str | None:
    """``self.<buffer> = <value other than None>`` → the buffer's name."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    if isinstance(stmt.value, ast.Constant) and stmt.value.value is None:
        return None  # MindSpore accepts None for a buffer, as torch
    name = self_attr(stmt.targets[0])
    return name if name is not None and name in buffers else None
