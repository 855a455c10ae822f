"""Gradients read for logging or checks (R11): every ``.grad`` read of a general training step.

torch keeps a parameter's gradient in ``p.grad``; MindSpore's is an entry of the tuple that
``value_and_grad`` returns (general.py keeps one tuple per holder, as torch keeps ``.grad``). So:

- ``for p in model.parameters(): ... p.grad`` and ``for name, p in model.named_parameters(): ...``
  iterate the parameters beside their gradients (``zip(weights, grads)``; flow.py, general.py);
- any other read (``model.fc.weight.grad.norm()``, ``value.grad`` of a loop over something else) becomes
  ``torch2ms.runtime.grad_of(param, (weights, grads), ...)``, which finds the parameter in the
  gradient tuples by identity (None where torch's ``.grad`` is None: cleared, or not trained).

Writing a gradient (``p.grad = ...``, ``p.grad.zero_()``, ``p.grad.data.mul_(...)``) has no form: the
tuple is the gradient, a person edits it.
"""

from __future__ import annotations

import ast

import libcst as cst

from ....i18n import _
from ... import generated as gen
from ...cstutil import Statement
from .errors import NotConvertible

GRAD_OF = "torch2ms.runtime.grad_of({param}, {pairs})"
NAMED_READ_LOOP = "zip([(_w.name, _w) for _w in {weights}], {grads})"


def named_loop_parameter(a: ast.stmt) -> tuple[str, str] | None:
    """``for name, p in model.named_parameters():`` → (``model``, ``p``); None for any other loop."""
    if not isinstance(a, ast.For) or not isinstance(a.target, ast.Tuple) or len(a.target.elts) != 2:
        return None
    name, param = a.target.elts
    call = a.iter
    if not (
        isinstance(name, ast.Name)
        and isinstance(param, ast.Name)
        and isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "named_parameters"
        and not call.args
        and not call.keywords
    ):
        return None
    return ast.unparse(call.func.value), param.id


def _clears(a: ast.AST, param: str | None) -> set[int]:
    """ids of the ``<param>.grad`` nodes that a clear of the loop parameter's gradient writes
    (``p.grad = None``, ``p.grad.zero_()``, ``p.grad.data.zero_()``): the writer turns those into a clear
    of the gradient tuple after the loop (general.py)."""
    out: set[int] = set()
    if param is None:
        return out
    for n in ast.walk(a):
        target = None
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Constant):
            target = n.targets[0] if n.value.value is None else None
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "zero_" and not n.args:
            target = n.func.value
            while isinstance(target, ast.Attribute) and target.attr == "data":
                target = target.value
        if isinstance(target, ast.Attribute) and target.attr == "grad" and ast.unparse(target.value) == param:
            out.add(id(target))
    return out


def grad_attributes(a: ast.AST, param: str | None = None) -> list[ast.Attribute]:
    """The ``x.grad`` nodes of a statement; a write to a gradient raises NotConvertible, except a clear
    of ``param``'s gradient (the loop variable of a parameter loop)."""
    found = []
    cleared = _clears(a, param)
    for n in ast.walk(a):
        if not (isinstance(n, ast.Attribute) and n.attr == "grad") or id(n) in cleared:
            continue
        if not isinstance(n.ctx, ast.Load):
            raise NotConvertible(_("the loop assigns to .grad: edit the gradient tuple by hand"))
        found.append(n)
    for n in ast.walk(a):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr.endswith("_"):
            if id(n.func.value) in cleared or _is_cleared_data(n.func.value, cleared):
                continue
            inner = n.func.value
            while isinstance(inner, ast.Attribute) and inner.attr in ("data", "grad"):
                if inner.attr == "grad":
                    raise NotConvertible(
                        _("the loop changes .grad in place ({call}): edit the gradient tuple by hand").format(
                            call=ast.unparse(n.func)
                        )
                    )
                inner = inner.value
    return found


def _is_cleared_data(node: ast.expr, cleared: set[int]) -> bool:
    while isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return id(node) in cleared


def is_direct_read(stmt: Statement, a: ast.stmt | None) -> bool:
    """A simple statement that reads a gradient (not inside a parameter loop: the caller skips those)."""
    if a is None or not isinstance(stmt, cst.SimpleStatementLine):
        return False
    return bool(grad_attributes(a))


def check_header(a: ast.stmt) -> None:
    """A compound statement whose own header reads a gradient (``if p.grad is not None:``)."""
    header: list[ast.AST] = []
    if isinstance(a, (ast.If, ast.While)):
        header = [a.test]
    elif isinstance(a, (ast.For, ast.AsyncFor)):
        header = [a.iter]
    elif isinstance(a, (ast.With, ast.AsyncWith)):
        header = [i.context_expr for i in a.items]
    if any(grad_attributes(h) for h in header):
        raise NotConvertible(_("a gradient read in the header of a compound statement: port by hand"))


class GradOf(cst.CSTTransformer):
    """``x.grad`` → ``torch2ms.runtime.grad_of(x, (weights, grads), ...)``."""

    def __init__(self, refs: gen.GeneratedRefs, pairs: list[tuple[str, str]], expr) -> None:
        super().__init__()
        self.refs, self.expr = refs, expr
        self.pairs = [cst.Tuple([cst.Element(expr(w)), cst.Element(cst.Name(g))]) for w, g in pairs]

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if updated.attr.value != "grad":
            return updated
        call = gen.expression(GRAD_OF, self.refs, param=updated.value, pairs=self.pairs[0])
        assert isinstance(call, cst.Call)
        return call.with_changes(args=[*call.args[:1], *(cst.Arg(p) for p in self.pairs)])
