"""torch.einsum for CPU: mindspore.ops.einsum has no CPU kernel in 2.10 ('einsum only supports Ascend').

The literal equation is planned here, at conversion time, into ops that run on CPU in both modes:
a diagonal per repeated label, a sum for labels no one else needs, one ``ops.bmm`` per pair of
operands (left to right, batch × free × summed), then a permute to the output order. The plan is
straight-line code over ``x.shape[i]``, so GRAPH_MODE compiles it like any expression.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...i18n import _
from ..schema import Entry
from ..source import literal, paren
from ..transforms import Unsupported, handler

_ELLIPSIS = "@"  # one label for a leading '...': its axes are merged into one while planning


@dataclass
class _Term:
    src: str
    labels: str


@handler
def einsum(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``torch.einsum('bij,bjk->bik', a, b)`` → permutes, reshapes and ``ops.bmm`` (a literal equation only)."""
    equation = literal(bound.get("equation"))
    if not isinstance(equation, str):
        raise Unsupported(_("torch.einsum: the equation must be a string literal to convert"))
    operands = _operand_sources(bound.get("operands", ""))
    names = [f"_e{i}" for i in range(len(operands))]
    inputs, output = _parse(equation.replace(" ", ""), len(operands))
    body = _plan(names, inputs, output)
    return f"(lambda {', '.join(names)}: {body})({', '.join(operands)})"


def _operand_sources(src: str) -> list[str]:
    """The operands of ``*operands`` (or of one list/tuple literal: einsum(eq, [a, b]))."""
    text = f"f({src})"
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    args = node.args
    if len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
        args = list(args[0].elts)
    if not args or any(isinstance(a, ast.Starred) for a in args):
        raise Unsupported(_("torch.einsum(eq, *operands): write the operands out to convert"))
    return [ast.get_source_segment(text, a) or "" for a in args]


def _parse(equation: str, count: int) -> tuple[list[str], str]:
    lhs, arrow, rhs = equation.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != count:
        raise Unsupported(
            _("torch.einsum: the equation names {operands} operands, the call passes {count}").format(
                operands=len(inputs), count=count
            )
        )
    if "..." in equation:
        if not all(p.startswith("...") and p.count("...") == 1 for p in inputs + ([rhs] if arrow else [])):
            raise Unsupported(_("torch.einsum: '...' converts only at the start of every operand and of the output"))
        inputs = [_ELLIPSIS + p[3:] for p in inputs]
        rhs = _ELLIPSIS + rhs[3:] if arrow else rhs
    if not arrow:
        joined = "".join(inputs)
        once = sorted(c for c in set(joined) if joined.count(c) == 1 and c != _ELLIPSIS)
        rhs = (_ELLIPSIS if _ELLIPSIS in joined else "") + "".join(once)
    if not all(c.isalpha() or c == _ELLIPSIS for c in "".join(inputs) + rhs):
        raise Unsupported(_("torch.einsum: cannot read the equation {equation!r}").format(equation=equation))
    return inputs, rhs


def _plan(names: list[str], inputs: list[str], output: str) -> str:
    """The expression over the operand names that computes the einsum."""
    terms = [_Term(_merge_ellipsis(n, lab), lab) for n, lab in zip(names, inputs)]
    for i, term in enumerate(terms):
        needed = set(output).union(*[set(t.labels) for k, t in enumerate(terms) if k != i])
        _diagonals(term)
        _sum_out(term, needed)
    result = terms[0]
    for k in range(1, len(terms)):
        needed = set(output).union(*[set(t.labels) for t in terms[k + 1 :]])
        _sum_out(result, needed | set(terms[k].labels))
        _sum_out(terms[k], needed | set(result.labels))
        result = _contract(result, terms[k], needed, k)
    _sum_out(result, set(output))
    src = _permute(result.src, result.labels, output)
    if _ELLIPSIS in output:  # the merged axis back to the ellipsis shape of the first operand
        k = len(inputs[0]) - 1
        src = f"(lambda _r: _r.reshape({names[0]}.shape[:len({names[0]}.shape) - {k}] + _r.shape[1:]))({src})"
    return src


def _merge_ellipsis(name: str, labels: str) -> str:
    if _ELLIPSIS not in labels:
        return name
    k = len(labels) - 1
    return f"{name}.reshape((-1,) + {name}.shape[len({name}.shape) - {k}:])"


def _diagonals(term: _Term) -> None:
    """A label repeated in one operand: its diagonal (ops.diagonal puts it last)."""
    while len(set(term.labels)) < len(term.labels):
        lab = next(c for c in term.labels if term.labels.count(c) > 1)
        i = term.labels.index(lab)
        j = term.labels.index(lab, i + 1)
        term.src = f"mindspore.ops.diagonal({term.src}, 0, {i}, {j})"
        term.labels = "".join(c for n, c in enumerate(term.labels) if n not in (i, j)) + lab


def _sum_out(term: _Term, needed: set[str]) -> None:
    axes = tuple(i for i, c in enumerate(term.labels) if c not in needed)
    if axes:
        term.src = f"{paren(term.src)}.sum(axis={axes!r})"
        term.labels = "".join(c for c in term.labels if c in needed)


def _contract(a: _Term, b: _Term, needed: set[str], step: int) -> _Term:
    """a as (batch, free_a, summed) @ b as (batch, summed, free_b), one ops.bmm."""
    batch = [c for c in a.labels if c in b.labels and c in needed]
    summed = [c for c in a.labels if c in b.labels and c not in needed]
    free_a = [c for c in a.labels if c not in b.labels]
    free_b = [c for c in b.labels if c not in a.labels]
    p, q = f"_p{step}", f"_q{step}"
    pa = _permute(a.src, a.labels, "".join(batch + free_a + summed))
    qb = _permute(b.src, b.labels, "".join(batch + summed + free_b))
    nb, na = len(batch), len(free_a)
    dims_b = _product(p, range(nb))
    lhs = f"{p}.reshape({dims_b}, {_product(p, range(nb, nb + na))}, {_product(p, range(nb + na, len(a.labels)))})"
    rhs = f"{q}.reshape({dims_b}, {_product(q, range(nb, nb + len(summed)))}, {_product(q, range(nb + len(summed), len(b.labels)))})"
    shape = [f"{p}.shape[{i}]" for i in range(nb + na)] + [
        f"{q}.shape[{nb + len(summed) + i}]" for i in range(len(free_b))
    ]
    out = f"mindspore.ops.bmm({lhs}, {rhs}).reshape(({', '.join(shape)}{',' if len(shape) == 1 else ''}))"
    return _Term(f"(lambda {p}, {q}: {out})({pa}, {qb})", "".join(batch + free_a + free_b))


def _product(name: str, axes: range) -> str:
    return " * ".join(f"{name}.shape[{i}]" for i in axes) or "1"


def _permute(src: str, labels: str, order: str) -> str:
    if labels == order:
        return src
    return f"mindspore.ops.permute({src}, {tuple(labels.index(c) for c in order)!r})"
