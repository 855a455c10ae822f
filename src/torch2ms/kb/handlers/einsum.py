"""torch.einsum for CPU: mindspore.ops.einsum has no CPU kernel in 2.10 ('einsum only supports Ascend';
mint.einsum compiles in GRAPH_MODE only).

The literal equation is planned here, at conversion time, into the ops a person would write, which run on
CPU in both modes: ``ops.diagonal`` per repeated label, ``.sum(axis=...)`` for labels no one else needs,
one ``ops.matmul`` per pair of operands (left to right; the batch labels first, further free labels as
broadcast axes ``x[..., None, :, :]``, several summed labels merged by ``ops.flatten``) or a broadcast
``*`` where a pair shares no summed label or one side keeps no free label, then ``swapaxes`` /
``ops.permute`` to the output order. Each operand is written once, and no shape is read, so the result is
one plain expression (no helper, no binding of the operands).
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
    labels: str  # the named labels in axis order (after the ellipsis axes when ``ell``)
    ell: bool = False

    def axis(self, i: int) -> int:
        """Axis ``i`` of the labels, counted from the end when leading '...' axes come first."""
        return i - len(self.labels) if self.ell else i


@handler
def einsum(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.einsum('bij,bjk->bik', a, b) → ops.matmul(a, b); swapaxes, diagonal, sums (a literal equation only)."""
    equation = literal(bound.get("equation"))
    if not isinstance(equation, str):
        raise Unsupported(_("torch.einsum: the equation must be a string literal to convert"))
    operands = _operand_sources(bound.get("operands", ""))
    inputs, output = _parse(equation.replace(" ", ""), len(operands))
    return _plan(operands, inputs, output)


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


def _plan(operands: list[str], inputs: list[str], output: str) -> str:
    """The expression over the operand sources (each written once) that computes the einsum."""
    ell = output.startswith(_ELLIPSIS) or any(p.startswith(_ELLIPSIS) for p in inputs)
    terms = [_Term(src, lab.lstrip(_ELLIPSIS), ell) for src, lab in zip(operands, inputs)]
    output = output.lstrip(_ELLIPSIS)
    for i, term in enumerate(terms):
        needed = set(output).union(*[set(t.labels) for k, t in enumerate(terms) if k != i])
        _diagonals(term)
        _sum_out(term, needed)
    result = terms[0]
    for k in range(1, len(terms)):
        needed = set(output).union(*[set(t.labels) for t in terms[k + 1 :]])
        _sum_out(result, needed | set(terms[k].labels))
        _sum_out(terms[k], needed | set(result.labels))
        result = _contract(result, terms[k], needed)
    _sum_out(result, set(output))
    return _arrange(result, output)


def _diagonals(term: _Term) -> None:
    """A label repeated in one operand: its diagonal (ops.diagonal puts it last)."""
    while len(set(term.labels)) < len(term.labels):
        lab = next(c for c in term.labels if term.labels.count(c) > 1)
        i = term.labels.index(lab)
        j = term.labels.index(lab, i + 1)
        term.src = f"mindspore.ops.diagonal({term.src}, 0, {term.axis(i)}, {term.axis(j)})"
        term.labels = "".join(c for n, c in enumerate(term.labels) if n not in (i, j)) + lab


def _sum_out(term: _Term, needed: set[str]) -> None:
    axes = tuple(term.axis(i) for i, c in enumerate(term.labels) if c not in needed)
    if axes:
        term.src = f"{paren(term.src)}.sum(axis={axes[0] if len(axes) == 1 else axes!r})"
        term.labels = "".join(c for c in term.labels if c in needed)


def _contract(a: _Term, b: _Term, needed: set[str]) -> _Term:
    """One product of two operands: ``ops.matmul`` when both keep a free label and share a summed one
    (further free labels become broadcast batch axes), else a broadcast ``*`` and a sum."""
    batch = "".join(c for c in a.labels if c in b.labels and c in needed)
    summed = "".join(c for c in a.labels if c in b.labels and c not in needed)
    free_a = "".join(c for c in a.labels if c not in b.labels)
    free_b = "".join(c for c in b.labels if c not in a.labels)
    ns = len(summed)
    if summed and free_a and free_b:
        x = _flatten_last(_arrange(a, batch + free_a + summed), ns, 0)
        y = _flatten_last(_arrange(b, batch + free_b[:-1] + summed + free_b[-1]), ns, 1)
        src = f"mindspore.ops.matmul({_insert_axes(x, len(free_b) - 1, 2)}, {_insert_axes(y, len(free_a) - 1, len(free_b) + 1)})"
        return _Term(src, batch + free_a[:-1] + free_b[:-1] + free_a[-1] + free_b[-1], a.ell)
    x = _insert_axes(_arrange(a, batch + free_a + summed), len(free_b), ns)
    y = _insert_axes(_arrange(b, batch + free_b + summed), len(free_a), len(free_b) + ns)
    src = f"{paren(x)} * {paren(y)}"
    if summed:
        axes = tuple(range(-ns, 0))
        src = f"({src}).sum(axis={axes[0] if ns == 1 else axes!r})"
    return _Term(src, batch + free_a + free_b, a.ell)


def _flatten_last(src: str, count: int, after: int) -> str:
    """The ``count`` axes that end ``after`` axes before the last merged into one."""
    if count < 2:
        return src
    end = f", end_dim={-1 - after}" if after else ""
    return f"mindspore.ops.flatten({src}, start_dim={-count - after}{end})"


def _insert_axes(src: str, count: int, before_last: int) -> str:
    """``count`` new axes of size 1 in front of the last ``before_last`` axes (``x[..., None, :]``)."""
    if count <= 0:
        return src
    return f"{paren(src)}[{', '.join(['...'] + ['None'] * count + [':'] * before_last)}]"


def _arrange(term: _Term, order: str) -> str:
    """The term's axes in ``order``: ``swapaxes`` for one swap, else ``ops.permute`` (``ops.movedim`` after '...')."""
    if term.labels == order:
        return term.src
    perm = [term.labels.index(c) for c in order]
    moved = [i for i, p in enumerate(perm) if p != i]
    if len(moved) == 2:
        return f"{paren(term.src)}.swapaxes({term.axis(moved[0])}, {term.axis(moved[1])})"
    if not term.ell:
        return f"mindspore.ops.permute({term.src}, {tuple(perm)!r})"
    source = tuple(term.axis(perm[i]) for i in moved)
    return f"mindspore.ops.movedim({term.src}, {source!r}, {tuple(term.axis(i) for i in moved)!r})"
