"""Small libcst helpers shared by the converter's passes."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from ..analysis.imports import ImportMap


# A statement as libcst's containers hold it (both kinds carry leading_lines).
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def block(suite: cst.BaseSuite) -> list[Statement]:
    """The statements of an indented block; a one-line suite (``if x: a; b``) is one statement."""
    if isinstance(suite, cst.IndentedBlock):
        return list(suite.body)  # type: ignore[arg-type]  # an indented block holds statements
    return [suite]  # type: ignore[list-item]  # a SimpleStatementSuite stands for its statements


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def resolve(imap: ImportMap, node: cst.BaseExpression) -> str | None:
    """The full torch name of a Name/Attribute chain rooted at a torch import, else None."""
    name = dotted(node)
    if not name:
        return None
    root, _, rest = name.partition(".")
    base = imap.names.get(root)
    if base is None or not imap.is_framework(base):
        return None
    return f"{base}.{rest}" if rest else base


_EMPTY = cst.Module([])


def code(node: cst.CSTNode) -> str:
    """Source text of a node (libcst codegen outside any module)."""
    return _EMPTY.code_for_node(node)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def any_node(node: cst.CSTNode, test: Callable[[cst.CSTNode], bool]) -> bool:
    """Does ``test`` hold for ``node`` or any node under it? The same nodes a ``CSTVisitor`` visits, read
    from the dataclass fields (no node is rebuilt, as ``node.visit`` rebuilds each one)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if test(n):
            return True
        kind = type(n)
        names = _CHILD_FIELDS.get(kind)
        if names is None:
            names = _CHILD_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(n))
        for name in names:
            value = getattr(n, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, cst.CSTNode))
    return False


def _defined_hook(cls: type, name: str):
    """``cls.<name>`` unless it is missing or one of libcst's generated no-op defaults."""
    func = getattr(cls, name, None)
    return None if func is None or func.__module__ == "libcst._typed_visitor" else func


class FastDispatch:
    """Hook dispatch for a CSTTransformer, looked up once per node type instead of once per node.

    libcst finds ``visit_<Node>``/``leave_<Node>`` and ``visit_<Node>_<field>`` by building the name and
    calling getattr for every node and every child field, and its typed base class answers with a
    no-op for every node type: on a large module that costs more than the hooks themselves. Behaviour
    is libcst's: a visit hook returning False skips the children; leave hooks may replace the node.
    Put it before ``cst.CSTTransformer`` in the bases. The tables belong to the instance (one per
    converted file), so a hook replaced on the class between files is seen.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._visit_hooks: dict = {}
        self._leave_hooks: dict = {}
        self._field_hooks: dict = {}
        # Field names that have a visit_<Node>_<field>/leave_<Node>_<field> hook: the others (nearly
        # all of the ~300k field visits of a large module) return at once.
        self._hooked_fields = frozenset(
            name.split("_", 2)[2]
            for klass in type(self).__mro__
            if not klass.__module__.startswith("libcst")
            for name in vars(klass)
            if name.startswith(("visit_", "leave_")) and name.count("_") >= 2 and name.split("_", 2)[1][:1].isupper()
        )

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        try:
            hook = self._visit_hooks[kind]
        except KeyError:
            hook = self._visit_hooks[kind] = _defined_hook(type(self), f"visit_{kind.__name__}")
        return hook is None or hook(self, node) is not False

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        kind = type(original)
        try:
            hook = self._leave_hooks[kind]
        except KeyError:
            hook = self._leave_hooks[kind] = _defined_hook(type(self), f"leave_{kind.__name__}")
        return updated if hook is None else hook(self, original, updated)

    def _field_hook(self, node: cst.CSTNode, attribute: str, prefix: str):
        key = (type(node), attribute, prefix)
        try:
            return self._field_hooks[key]
        except KeyError:
            hook = self._field_hooks[key] = _defined_hook(type(self), f"{prefix}_{type(node).__name__}_{attribute}")
            return hook

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if attribute in self._hooked_fields:
            hook = self._field_hook(node, attribute, "visit")
            if hook is not None:
                hook(self, node)

    def on_leave_attribute(self, original: cst.CSTNode, attribute: str) -> None:
        if attribute in self._hooked_fields:
            hook = self._field_hook(original, attribute, "leave")
            if hook is not None:
                hook(self, original)


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node.value)


def comments_in(node: cst.CSTNode) -> list[str]:
    """Every comment inside ``node``, in order."""
    if not has_comment(node):
        return []  # the common case, found without a visitor's dispatch per node
    seen = _Comments()
    node.visit(seen)
    return seen.found


_FIELDS: dict[type, tuple[str, ...]] = {}


def has_comment(node: cst.CSTNode) -> bool:
    """Is there a comment anywhere inside ``node``? (A plain walk over the node's fields, in no
    particular order: several times cheaper than a libcst visitor.)"""
    return bool(comment_counts(node, stop_at_first=True))


def comment_counts(node: cst.CSTNode, stop_at_first: bool = False) -> Counter[str]:
    """How often each comment occurs inside ``node`` (``comments_in`` gives them in document order)."""
    found: Counter[str] = Counter()
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is cst.Comment:
            found[item.value] += 1  # type: ignore[attr-defined]
            if stop_at_first:
                return found
            continue
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(item))  # type: ignore[arg-type]
        for name in names:
            value = getattr(item, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif type(value) in (list, tuple):
                stack.extend(value)
    return found
