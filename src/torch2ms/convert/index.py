"""Which libcst statement is which ``ast`` statement, and on which original line it stands.

The cheap ``ast`` pass (plan.py) knows, for every statement, whether anything in it may need
converting. The libcst tree the stages edit is matched to that plan once, statement by statement in
document order (both are pre-order lists of the same text), and looked up by node identity after
that: the rewrite stage skips statements with nothing to convert without visiting them, and gives
every change the original line of the torch use it is about.

Construct stages (distributed, checkpoints, training) replace statements in the libcst tree. A
statement they write is registered with the statement it replaces (its *origin*): changes found in
it are reported on the origin's line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

import libcst as cst

from .cstutil import block, code
from .plan import Stmt

_SIMPLE = (cst.SimpleStatementLine, cst.SimpleStatementSuite)
_COMPOUND_AST: dict[type, tuple[type, ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
    cst.Match: (ast.Match,),
}
if hasattr(ast, "TryStar"):
    _COMPOUND_AST[cst.TryStar] = (ast.TryStar,)
_COMPOUND_ASTS = tuple(t for ts in _COMPOUND_AST.values() for t in ts)


class IndexMismatch(Exception):
    """The libcst tree and the plan disagree: they were not made from the same text (a bug)."""


@dataclass(slots=True)
class StatementInfo:
    """One libcst statement as the rewrite stage sees it."""

    node: ast.stmt  # the ast statement of the code being rewritten (its positions are that code's)
    interesting: bool  # something inside may need converting
    header: bool  # its own expressions (not its nested body) mention something
    shift: int = 0  # original line = a line of ``node`` + shift
    fixed_line: int | None = None  # a statement a stage wrote: every change in it is on this line

    def original_line(self, line: int) -> int:
        return self.fixed_line if self.fixed_line is not None else line + self.shift


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Nested statements in the plan's order (plan._children): body, orelse, handlers, finalbody, cases."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.With)):
        return list(block(node.body))
    if isinstance(node, (cst.For, cst.While)):
        return [*block(node.body), *_orelse(node.orelse)]
    if isinstance(node, cst.If):
        return [*block(node.body), *_orelse(node.orelse)]
    if isinstance(node, (cst.Try, cst.TryStar)):
        out = [*block(node.body), *_orelse(node.orelse)]
        for handler in node.handlers:
            out += block(handler.body)
        if node.finalbody is not None:
            out += block(node.finalbody.body)
        return out
    if isinstance(node, cst.Match):
        return [s for case in node.cases for s in block(case.body)]
    return []


def _orelse(node: cst.If | cst.Else | None) -> list[cst.CSTNode]:
    if isinstance(node, cst.If):
        return [node]  # elif: a statement of its own, as in ast
    if isinstance(node, cst.Else):
        return list(block(node.body))
    return []


class StatementIndex:
    """id(libcst statement) → StatementInfo."""

    def __init__(self) -> None:
        self.entries: dict[int, StatementInfo] = {}
        # Statements written by construct stages → (the ast statement they replace, exact): exact
        # when only their nested body changed (their own lines stand where the origin's did).
        self.origins: dict[int, tuple[ast.stmt, bool]] = {}
        self._keep: list[cst.CSTNode] = []  # registered nodes stay alive, so their ids stay unique

    def get(self, node: cst.CSTNode) -> StatementInfo | None:
        return self.entries.get(id(node))

    def __contains__(self, node: cst.CSTNode) -> bool:
        return id(node) in self.entries or id(node) in self.origins

    def ast_of(self, node: cst.CSTNode) -> ast.stmt | None:
        """The original ast statement of an unchanged libcst statement (None for written ones)."""
        if id(node) in self.origins:
            return None  # written by a stage: the original's ast no longer describes it
        info = self.entries.get(id(node))
        return info.node if info is not None and info.fixed_line is None and info.shift == 0 else None

    def line_of(self, node: cst.CSTNode) -> int:
        """Original line of a statement, written ones included (their origin's line); 0 if unknown."""
        info = self.entries.get(id(node))
        if info is not None:
            return info.original_line(info.node.lineno)
        origin = self.origins.get(id(node))
        return origin[0].lineno if origin is not None else 0

    def origin_of(self, node: cst.CSTNode) -> ast.stmt | None:
        """The original ast statement behind a statement, unchanged or written by a stage."""
        origin = self.origins.get(id(node))
        if origin is not None:
            return origin[0]
        info = self.entries.get(id(node))
        return info.node if info is not None else None

    def derive(self, new: cst.CSTNode, old: cst.CSTNode, exact: bool = False) -> None:
        """``new`` replaces ``old`` (a stage wrote it): changes in it belong to ``old``'s line."""
        if new is old:
            return
        origin = self.origin_of(old)
        if origin is None:
            return
        self.origins[id(new)] = (origin, exact)
        self._keep.append(new)
        before = self.entries.get(id(old))
        if exact and before is not None:  # only its nested body changed: its own positions still hold
            self.entries[id(new)] = replace(before, interesting=True)
        else:
            self.entries[id(new)] = StatementInfo(_parsed(new) or origin, True, True, fixed_line=origin.lineno)

    def derive_tree(self, new: cst.CSTNode, old: cst.CSTNode) -> None:
        """``new`` and every statement nested in it that the index does not know replace ``old``."""
        if new not in self:
            self.derive(new, old)
        for child in children(new):
            self.derive_tree(child, old)

    # ---- building ------------------------------------------------------------------------

    @classmethod
    def match(cls, module: cst.Module, plan: list[Stmt]) -> StatementIndex:
        """Pair the statements of ``module`` with ``plan``, which was made from the same text."""
        index = cls()
        end = index._match(list(module.body), plan, 0)
        if end != len(plan):
            raise IndexMismatch(f"{len(plan) - end} plan statements left over")
        return index

    def _match(self, stmts: list[cst.CSTNode], plan: list[Stmt], i: int) -> int:
        for stmt in stmts:
            if isinstance(stmt, _SIMPLE):
                k = len(stmt.body)
                infos = plan[i : i + k]
                if len(infos) != k or any(isinstance(x.node, _COMPOUND_ASTS) for x in infos):
                    raise IndexMismatch(f"statement {i}")
                self.entries[id(stmt)] = StatementInfo(infos[0].node, any(x.interesting for x in infos), True)
                i += k
                continue
            kinds = _COMPOUND_AST.get(type(stmt))
            if kinds is None or i >= len(plan) or not isinstance(plan[i].node, kinds):
                raise IndexMismatch(f"statement {i}")
            info = plan[i]
            self.entries[id(stmt)] = StatementInfo(info.node, info.interesting, info.header)
            # (``info.size`` is not checked: quiet.py replaces nested statements by placeholders)
            i = self._match(children(stmt), plan, i + 1)
        return i

    def rematch(self, module: cst.Module, plan: list[Stmt]) -> StatementIndex:
        """The index of ``module`` (the tree after construct stages) against ``plan`` (made from its
        code), with original lines carried over from this index: unchanged statements by identity,
        written ones through their origin."""
        new = StatementIndex.match(module, plan)
        last = 0  # entries are in document order: an unregistered statement takes its predecessor's line
        for key, info in new.entries.items():
            old = self.entries.get(key)
            origin = self.origins.get(key)
            if old is not None:
                info.shift = old.original_line(old.node.lineno) - info.node.lineno
                info.fixed_line = old.fixed_line
            elif origin is not None and origin[1]:
                info.shift = origin[0].lineno - info.node.lineno
            else:
                info.fixed_line = origin[0].lineno if origin is not None else last
            last = info.original_line(info.node.lineno)
        new._keep = self._keep
        return new


def _parsed(node: cst.CSTNode) -> ast.stmt | None:
    """The ast of a statement a stage wrote (for the rules that read its shape, e.g. assignment targets)."""
    try:
        body = ast.parse(code(node)).body
    except SyntaxError:
        return None
    return body[0] if body else None


class TrackedTransformer(cst.CSTTransformer):
    """A libcst transformer whose rebuilt statements stay known to the index: a statement rebuilt as
    one of its own kind keeps its lines (exact: its positions move with it); statements returned in
    place of one of another kind, or several, derive from it (reported on its line)."""

    def __init__(self, index: StatementIndex) -> None:
        super().__init__()
        self.index = index
        self.edits = 0  # statements replaced or removed

    def on_leave(self, original, updated):  # type: ignore[override]
        result = super().on_leave(original, updated)
        if not isinstance(original, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) or result is original:
            return result
        if isinstance(result, cst.RemovalSentinel):
            self.edits += 1
            return result
        if type(result) is type(original):
            self.index.derive(result, original, exact=True)
            self.edits += isinstance(original, cst.SimpleStatementLine)
            return result
        news = result.nodes if isinstance(result, cst.FlattenSentinel) else [result]
        for new in news:
            if new is not original:
                self.index.derive_tree(new, original)
        self.edits += 1
        return result
