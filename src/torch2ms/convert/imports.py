"""The imports stage: torch imports that converted code no longer reads go, MindSpore's come in.

A torch import stays only while unconverted code still reads one of its names (or another module
re-imports it from this one); its statement is then marked. The MindSpore imports the rewritten
code needs (names.py) go where the first torch import was, else after the docstring and
``__future__`` imports. Imports inside functions and blocks are settled per block.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re

import libcst as cst

from ..analysis.astwalk import nodes
from ..analysis.imports import ImportMap
from ..i18n import N_, _, every_language
from .changes import MARK
from .context import RewriteContext
from .cstutil import Statement, block
from .names import ALIASES

# The short MindSpore aliases the rewrite stage writes (nn, ops, ms, ...): a torch name still in use
# must not be shadowed by one of them.
ALIAS_ROOTS = frozenset(short.rstrip(".").split(".")[0] for _, short, _ in ALIASES)

BUILTIN_NAMES = frozenset(dir(builtins))

TORCH_KEPT = N_("torch import kept: unconverted code still uses it")


def torch_kept_marks() -> set[str]:
    """The "torch import kept" mark in every language an earlier conversion may have written it in."""
    return {f"{MARK} {text}" for text in every_language(TORCH_KEPT)}


def settle_imports(module: cst.Module, ctx: RewriteContext) -> str:
    """The converted module's code with its imports settled."""
    facts = ctx.facts
    torch_locals = {n for n, full in facts.imap.names.items() if facts.imap.is_framework(full)}
    reexports = facts.reexports
    keep = set(ctx.still_needed) | reexports
    interop = _numpy_interop(ctx) + _format_interop(ctx) + _mapped_reexports(facts.reexport_ms)
    aliases = aliases_in_use(ctx)
    # ``from torch import *`` binds ``int``, ``range``, ``max``...: the converted code's own builtins
    # (``int(...)`` in torch.range's rewrite) are no reads of torch's (unconverted ones are marked).
    shadowed = facts.star_names & BUILTIN_NAMES
    for _attempt in range(3):
        settled = _settle_imports(module, ctx, keep, interop)
        if facts.nested_torch_imports:
            settled = settled.visit(_NestedImports(facts.imap, aliases, reexports))
        code = settled.code
        # A torch name the output still reads (not one of the MindSpore aliases) keeps its import; one
        # only a dropped argument read (``layout=torch.strided``) goes, or a second pass would drop it.
        used = _torch_names_used(code, torch_locals - aliases - keep - shadowed)
        unread = _torch_names_unread(code, keep & torch_locals - reexports)
        if not used and not unread:
            return code
        keep = (keep | used) - unread
    return code


def _drop_reexported_torch_names(stmt: Statement, imap: ImportMap, keep: set[str]) -> Statement | None:
    """``from .util import F`` where ``util`` re-exports torch's ``F`` (analysis/project_names.py):
    the converted code reads MindSpore's names instead, so the torch names go from the statement
    (unless unconverted code still reads them); the statement goes when nothing is left."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return stmt
    imp = stmt.body[0]
    if (
        not isinstance(imp, cst.ImportFrom)
        or isinstance(imp.names, cst.ImportStar)
        or not imp.relative
        and (imp.module is None or imap.is_framework(_name(imp.module)))
    ):
        return stmt
    kept = [a for a in imp.names if not imap.is_framework(imap.names.get(_local(a))) or _local(a) in keep]
    if len(kept) == len(imp.names):
        return stmt
    if not kept:
        return None
    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return stmt.with_changes(body=[imp.with_changes(names=kept)])


def _framework_aliases(stmt: cst.CSTNode, imap) -> bool:
    """Does this import statement bind a torch-family name?"""
    if isinstance(stmt, cst.Import):
        return any(imap.is_framework(_name(a.name)) for a in stmt.names)
    if isinstance(stmt, cst.ImportFrom) and stmt.module is not None and not stmt.relative:
        return imap.is_framework(_name(stmt.module))
    return False


def _name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_name(node.value)}.{node.attr.value}"
    return ""


def _local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return _name(alias.asname.name)
    return _name(alias.name).split(".", 1)[0]


def _mentioned(code: str, name: str) -> bool:
    """``name`` appears as a word outside ``# ...`` comments (the converter's own notes name torch APIs).
    A line with a quote before the ``#`` counts: the ``#`` may sit in a string. Right after a quote it is
    string text (``TorchCompat("torch.nn.ReLU")``)."""
    for m in re.finditer(rf"(?<![\w.'\"]){re.escape(name)}\b", code):
        before = code[code.rfind("\n", 0, m.start()) + 1 : m.start()]
        if "#" not in before or "'" in before or '"' in before:
            return True
    return False


def _torch_names_unread(code: str, kept: set[str]) -> set[str]:
    """Which of the ``kept`` names the code never reads (none when it does not parse: keep them all)."""
    if not kept:
        return set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return kept - {n.id for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _torch_names_used(code: str, candidates: set[str]) -> set[str]:
    """Which of ``candidates`` the code reads as names (a regex rules most out before parsing)."""
    present = {n for n in candidates if _mentioned(code, n)}
    if not present:
        return set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return present
    return {n.id for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} & present


_NUMPY_NOTE = N_("numpy scalars defer to MindSpore tensors (np.float64 * Tensor is a Tensor), as to torch's")
_NUMPY_HELPER = "numpy_defers_to_tensors"


def _mapped_reexports(mapped: dict[str, str]) -> list[cst.SimpleStatementLine]:
    """Torch names other project modules import from this one, which the KB maps: MindSpore's
    names are imported in their place (``from mindspore.dataset.dataloader import TensorDataset``),
    so an importer gets the MindSpore object and the module needs no torch."""
    lines = []
    for local, ms_name in sorted(mapped.items()):
        module, _dot, name = ms_name.rpartition(".")
        alias = "" if name == local else f" as {local}"
        lines.append(_parse_import(f"from {module} import {name}{alias}  # noqa: F401 - re-exported"))
    return lines


def _numpy_interop(ctx: RewriteContext) -> list[cst.SimpleStatementLine]:
    """A file that mixes numpy and torch: ``np.log(10) * torch.arange(n)`` is a torch tensor
    (torch tensors carry ``__array_priority__``), but numpy turns a MindSpore Tensor operand into
    an ndarray. Importing the runtime's ``numpy_defers_to_tensors`` gives MindSpore's Tensor the
    same priority: an import runs wherever the module is imported, even when only one of its
    classes is taken (a top-level assignment would be skipped by a loader that keeps only imports
    and definitions)."""
    if not ctx.changes or not any(full.split(".", 1)[0] == "numpy" for full in ctx.imap.names.values()):
        return []
    if ctx.facts.tree is not None and any(
        (isinstance(n, ast.Attribute) and n.attr == "__array_priority__" and isinstance(n.ctx, ast.Store))
        or (isinstance(n, ast.alias) and n.name == _NUMPY_HELPER)
        for n in nodes(ctx.facts.tree)
    ):
        return []  # converted before (or set by hand): once is enough
    stmt = cst.parse_statement(f"from torch2ms.runtime import {_NUMPY_HELPER}  # noqa: F401 - sets it on import\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return [stmt.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(_NUMPY_NOTE)))])]


_FORMAT_NOTE = N_("a 0-dim MindSpore tensor formats with a spec as torch's does (a format string built at run time)")
_FORMAT_HELPER = "tensors_format_like_torch"


def _format_interop(ctx: RewriteContext) -> list[cst.SimpleStatementLine]:
    """A file that formats with a format string built at run time (``fmtstr.format(**self.__dict__)``): the
    converter cannot see whether a 0-dim tensor meets a spec there. Importing the runtime's
    ``tensors_format_like_torch`` makes MindSpore's Tensor format it as torch's does."""
    tree = ctx.facts.tree
    if not ctx.changes or tree is None:
        return []
    dynamic = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "format"
        and not isinstance(n.func.value, (ast.Constant, ast.JoinedStr))
        and (n.args or n.keywords)
        for n in nodes(tree)
    )
    if not dynamic or any(isinstance(n, ast.alias) and n.name == _FORMAT_HELPER for n in nodes(tree)):
        return []
    stmt = cst.parse_statement(f"from torch2ms.runtime import {_FORMAT_HELPER}  # noqa: F401 - sets it on import\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return [stmt.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(f"{MARK} " + _(_FORMAT_NOTE)))])]


def _is_import_line(stmt: Statement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom))


@functools.lru_cache(maxsize=256)
def _parse_import(line: str) -> cst.SimpleStatementLine:
    """An import line as a statement, parsed once (libcst nodes are immutable: it may sit in many modules)."""
    stmt = cst.parse_statement(line + "\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt


def _settle_imports(
    module: cst.Module, ctx: RewriteContext, keep_locals: set[str], interop: list[cst.SimpleStatementLine]
) -> cst.Module:
    imap = ctx.imap
    body = list(module.body)
    insert_at: int | None = None
    carried_lines: list[cst.EmptyLine] = []
    new_body: list[Statement] = []
    for original in body:
        stmt = _drop_reexported_torch_names(original, imap, keep_locals)
        if stmt is None:
            continue
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and _framework_aliases(stmt.body[0], imap):
            imp = stmt.body[0]
            assert isinstance(imp, (cst.Import, cst.ImportFrom))
            # Kept only while a name it provides is still used unconverted (a star import: while a
            # name it bound is).
            names: cst.ImportStar | list[cst.ImportAlias] | None
            if isinstance(imp.names, cst.ImportStar):
                names = imp.names if ctx.facts.star_names & keep_locals else None
            else:
                # ``import torch, cv2``: cv2 stays whatever happens to torch
                aliases = [
                    a
                    for a in imp.names
                    if _local(a) in keep_locals
                    or (isinstance(imp, cst.Import) and not imap.is_framework(_name(a.name)))
                ]
                names = [*aliases[:-1], aliases[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)] if aliases else None
            if insert_at is None:
                insert_at = len(new_body)
            if names is None:  # its comments stay, but an earlier conversion's "kept" mark is stale now
                stale = torch_kept_marks()
                lines = [ln for ln in stmt.leading_lines if not (ln.comment and ln.comment.value in stale)]
                carried_lines += [*lines, *_trailing_comment(stmt)]
                continue
            note = f"{MARK} " + _(TORCH_KEPT)
            lines = list(stmt.leading_lines)
            # The first statement's comments live in the module header.
            seen = [*lines, *(module.header if not new_body else [])]
            torch_kept = isinstance(names, cst.ImportStar) or any(_local(a) in keep_locals for a in names)
            if torch_kept and not any(line.comment and line.comment.value in torch_kept_marks() for line in seen):
                lines.append(cst.EmptyLine(comment=cst.Comment(note)))
            new_body.append(stmt.with_changes(body=[imp.with_changes(names=names)], leading_lines=lines))
            continue
        new_body.append(stmt)
    # (only an import statement can read as an import line: the others are not generated)
    existing = {module.code_for_node(s).strip() for s in new_body if _is_import_line(s)}
    imports = [_parse_import(line) for line in ctx.names.import_lines() if line not in existing]
    if insert_at is None:
        insert_at = _after_header(new_body)
    if imports:
        imports[0] = imports[0].with_changes(leading_lines=carried_lines)
    elif carried_lines and insert_at < len(new_body):
        first = new_body[insert_at]
        new_body[insert_at] = first.with_changes(leading_lines=[*carried_lines, *first.leading_lines])
    new_body[insert_at:insert_at] = imports
    if interop:  # after the import block that holds MindSpore's imports
        at = insert_at + len(imports)
        while at < len(new_body) and _is_import(new_body[at]):
            at += 1
        new_body[at:at] = interop
    return module.with_changes(body=new_body)


def _trailing_comment(stmt: cst.SimpleStatementLine) -> list[cst.EmptyLine]:
    """``import torch  # why``: the comment of a dropped statement, as a line of its own."""
    comment = stmt.trailing_whitespace.comment
    return [cst.EmptyLine(comment=comment)] if comment is not None else []


def _is_import(stmt: Statement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(b, (cst.Import, cst.ImportFrom)) for b in stmt.body
    )


def _after_header(body: list) -> int:
    """Index after the module docstring and __future__ imports."""
    i = 0
    if (
        body
        and isinstance(body[0], cst.SimpleStatementLine)
        and isinstance(body[0].body[0], cst.Expr)
        and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        i = 1
    while (
        i < len(body)
        and isinstance(body[i], cst.SimpleStatementLine)
        and isinstance(body[i].body[0], cst.ImportFrom)
        and _name(body[i].body[0].module) == "__future__"
    ):
        i += 1
    return i


class _NestedImports(cst.CSTTransformer):
    """Torch imports inside functions and blocks: drop the names the block's converted code no
    longer reads (a read of a MindSpore alias such as ``nn`` is MindSpore's, never torch's)."""

    def __init__(
        self, imap: ImportMap, ms_aliases: set[str], reexports: set[str] | frozenset[str] = frozenset()
    ) -> None:
        super().__init__()
        self.imap, self.ms_aliases, self.reexports = imap, ms_aliases, reexports

    def visit_SimpleStatementLine(self, node) -> bool:
        return False

    def _torch_import(self, stmt: cst.CSTNode) -> cst.Import | cst.ImportFrom | None:
        """The statement's torch import (not a star import), if that is what it is."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return None
        imp = stmt.body[0]
        if not isinstance(imp, (cst.Import, cst.ImportFrom)) or isinstance(imp.names, cst.ImportStar):
            return None
        return imp if _framework_aliases(imp, self.imap) else None

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        stmts = block(updated)
        if not any(self._torch_import(s) for s in stmts):
            return updated
        code = cst.Module(body=[s for s in stmts if not self._torch_import(s)]).code
        try:
            tree = ast.parse(code)
            read = {n.id for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        except SyntaxError:
            return updated
        read = (read - self.ms_aliases) | self.reexports
        body: list[Statement] = []
        carried: list[cst.EmptyLine] = []  # comments of dropped imports go above the next statement
        for stmt in stmts:
            imp = self._torch_import(stmt)
            if imp is None:
                body.append(stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines]) if carried else stmt)
                carried = []
                continue
            assert isinstance(stmt, cst.SimpleStatementLine) and not isinstance(imp.names, cst.ImportStar)
            kept = [a for a in imp.names if _local(a) in read]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                body.append(stmt.with_changes(body=[imp.with_changes(names=kept)]))
            else:
                carried += [line for line in stmt.leading_lines if line.comment] + _trailing_comment(stmt)
        if carried or not body:
            body.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=carried))
        return updated.with_changes(body=body)


def aliases_in_use(ctx: RewriteContext) -> set[str]:
    """The short MindSpore aliases the rewritten code imports, and the torch2ms.runtime helpers it
    imports by name (``Normal`` from torch.distributions becomes ``from torch2ms.runtime import
    Normal``: the torch import of that name must go, or it would shadow the helper; ``rearrange``
    from torch2ms.runtime replaces einops' ``rearrange`` under the same name)."""
    out = set()
    for _full, short, imp in ALIASES:
        if imp in ctx.names.needed:
            out.add(short.rstrip("."))
    out |= {imp.rsplit(" ", 1)[1] for imp in ctx.names.needed if imp.startswith("from torch2ms.runtime import ")}
    return out
