"""Code the construct stages write into the libcst tree, and the libcst templates they write it with.

A stage writes MindSpore with full names (``mindspore.value_and_grad``, ``torch2ms.runtime.ckpt_path``)
and places the user's own (still torch) code inside it. Every full name it wrote is registered here by
node identity, so the rewrite stage shortens exactly those (``nn.Cell`` plus the import it needs) and
never mistakes them for torch code (``nn`` may still be ``torch.nn`` in the file), while the user's
code inside is converted like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import libcst as cst

from .cstutil import Statement, dotted

_ROOTS = ("mindspore", "torch2ms")


class GeneratedRefs:
    """``mindspore.*`` / ``torch2ms.*`` name chains written by construct stages, by node identity."""

    def __init__(self) -> None:
        self.refs: dict[int, str] = {}
        self._keep: list[cst.CSTNode] = []  # registered nodes stay alive, so their ids stay unique

    def __contains__(self, node: object) -> bool:
        return id(node) in self.refs

    def __bool__(self) -> bool:
        return bool(self.refs)

    def full_name(self, node: cst.CSTNode) -> str | None:
        return self.refs.get(id(node))

    def register(self, node: cst.CSTNode, user_code: Iterable[cst.CSTNode] = ()) -> None:
        """Register the full names in ``node`` (a stage's own text), not looking inside ``user_code``."""
        node.visit(_Collector(self, {id(n) for n in user_code}))


class _Collector(cst.CSTVisitor):
    def __init__(self, refs: GeneratedRefs, skip: set[int]) -> None:
        super().__init__()
        self.refs, self.skip = refs, skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        if id(node) in self.skip:
            return False
        if isinstance(node, (cst.Attribute, cst.Name)):
            name = dotted(node)
            if name is not None:
                # The outermost chain is visited first: ``mindspore.nn.Cell`` is one reference.
                if name.split(".", 1)[0] in _ROOTS and "." in name:
                    self.refs.refs[id(node)] = name
                    self.refs._keep.append(node)
                return False
        return True


_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
_MANGLED = re.compile(r"__t2m_([A-Za-z_]\w*)__")
Filling = cst.BaseExpression | cst.Parameters | Sequence[Statement]


def statements(template: str, refs: GeneratedRefs, **user_code: Filling) -> list[Statement]:
    """The statements of a template: Python text whose ``{name}`` placeholders stand for the user's
    nodes (an expression, or a list of statements when the placeholder is a statement of its own).

    libcst's ``parse_template_*`` deep-copy what they insert; here the user's nodes keep their
    identity (the statement index knows them by it, and so does the rewrite stage), and so do the
    template's own full names, which are registered as generated before anything is inserted.
    """
    module = cst.parse_module(_PLACEHOLDER.sub(r"__t2m_\1__", template))
    refs.register(module)
    filled = module.visit(_Fill(module, user_code))
    body: list[Statement] = list(filled.body)
    if body and filled.header:
        body[0] = body[0].with_changes(leading_lines=[*filled.header, *body[0].leading_lines])
    return body


def statement(template: str, refs: GeneratedRefs, **user_code: Filling) -> Statement:
    """The one statement of a template (see ``statements``)."""
    (stmt,) = statements(template, refs, **user_code)
    return stmt


def expression(template: str, refs: GeneratedRefs, **user_code: Filling) -> cst.BaseExpression:
    """An expression from a template (see ``statements``)."""
    stmt = statement(template + "\n", refs, **user_code)
    assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr)
    return stmt.body[0].value


def with_comment(stmt: Statement, text: str) -> Statement:
    """``stmt  # text`` (a compound statement: after its colon): a comment whose words name the
    user's code, which a placeholder cannot do."""
    comment = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(text))
    if isinstance(stmt, cst.SimpleStatementLine):
        return stmt.with_changes(trailing_whitespace=comment)
    body = stmt.body  # type: ignore[attr-defined]
    return stmt.with_changes(body=body.with_changes(header=comment))


def parameters(names: Sequence[str]) -> cst.Parameters:
    """``a, b, c`` as a def's parameters."""
    params = [cst.Param(cst.Name(n)) for n in names]
    return cst.Parameters([p.with_changes(comma=_COMMA) for p in params[:-1]] + params[-1:])


def arguments(call: cst.BaseExpression, args: Sequence[cst.BaseExpression]) -> cst.Call:
    """``call(a, b)``."""
    items = [cst.Arg(a) for a in args]
    return cst.Call(call, [a.with_changes(comma=_COMMA) for a in items[:-1]] + items[-1:])


def names_tuple(names: Sequence[str], parens: bool = False) -> cst.Name | cst.Tuple:
    """``a`` for one name, ``a, b`` (or ``(a, b)``) for several (an assignment target, too)."""
    value = tuple_of([cst.Name(n) for n in names], parens)
    assert isinstance(value, (cst.Name, cst.Tuple))
    return value


def tuple_of(values: Sequence[cst.BaseExpression], parens: bool = False) -> cst.BaseExpression:
    """``a`` for one value, ``a, b`` (or ``(a, b)``) for several."""
    if len(values) == 1 and not parens:
        return values[0]
    elements = [cst.Element(v, comma=_COMMA) for v in values[:-1]] + [cst.Element(values[-1])]
    if parens:
        return cst.Tuple(elements)
    return cst.Tuple(elements, lpar=[], rpar=[])


def blank_lines(stmt: Statement, n: int) -> Statement:
    """``n`` blank lines before ``stmt`` (and its comments)."""
    lines = [cst.EmptyLine(indent=False) for _ in range(n)]
    return stmt.with_changes(leading_lines=[*lines, *stmt.leading_lines])


_COMMA = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


class _Fill(cst.CSTTransformer):
    """Put the user's nodes where the placeholders are; subtrees without a placeholder are not
    visited, so they (and the full names registered in them) keep their identity."""

    def __init__(self, module: cst.Module, values: dict[str, Filling]) -> None:
        super().__init__()
        self.values = values
        finder = _Ancestors()
        module.visit(finder)
        self.on_path = finder.on_path

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self.on_path

    def leave_SimpleStatementLine(self, original, updated):
        name = _placeholder_statement(updated)
        if name is None:
            return updated
        value = self.values[name]
        assert not isinstance(value, cst.BaseExpression), f"{name}: a statement placeholder takes statements"
        stmts = list(value)
        if stmts and updated.leading_lines:
            stmts[0] = stmts[0].with_changes(leading_lines=[*updated.leading_lines, *stmts[0].leading_lines])
        return cst.FlattenSentinel(stmts) if stmts else cst.RemovalSentinel.REMOVE

    def leave_Name(self, original, updated):
        m = _MANGLED.fullmatch(updated.value)
        if m is None:
            return updated
        value = self.values[m.group(1)]
        if not isinstance(value, cst.BaseExpression):
            return updated  # a parameter list or statements: leave_Parameters / leave_SimpleStatementLine
        assert isinstance(value, cst.BaseExpression), f"{m.group(1)}: an expression placeholder takes an expression"
        if updated.lpar:  # ``-({v})``: the template's parentheses stay
            value = value.with_changes(lpar=[*updated.lpar, *value.lpar], rpar=[*value.rpar, *updated.rpar])
        return value

    def leave_Parameters(self, original, updated):
        """``def f({params}):`` takes a whole Parameters node."""
        params = updated.params
        if len(params) == 1 and isinstance(params[0].name, cst.Name):
            m = _MANGLED.fullmatch(params[0].name.value)
            if m is not None:
                value = self.values[m.group(1)]
                assert isinstance(value, cst.Parameters), f"{m.group(1)}: a parameter placeholder takes Parameters"
                return value
        return updated


def _placeholder_statement(stmt: cst.SimpleStatementLine) -> str | None:
    if len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Name):
        m = _MANGLED.fullmatch(stmt.body[0].value.value)
        return m.group(1) if m else None
    return None


class _Ancestors(cst.CSTVisitor):
    """Ids of the placeholder names and every node above them."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.on_path: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if isinstance(node, cst.Name) and _MANGLED.fullmatch(node.value):
            self.on_path.update(id(n) for n in self.stack)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()
