"""Convert one Python module's source: parse, transform, then settle the imports."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.scan import collect
from ..kb import KB, load_kb
from .names import ALIASES
from .transformer import MARK, Change, TorchToMindSpore, module_facts


@dataclass
class ConvertedModule:
    path: str
    source: str
    code: str
    changes: list[Change] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.code != self.source


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


def _still_used(new_code: str, generated_aliases: set[str], needed_by_marks: set[str]) -> set[str]:
    """Local names the converted code still reads (a generated alias counts only via marks)."""
    try:
        tree = ast.parse(new_code)
    except SyntaxError:
        return set(needed_by_marks)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return (used - generated_aliases) | needed_by_marks


def _settle_imports(module: cst.Module, t: TorchToMindSpore, keep_locals: set[str]) -> cst.Module:
    imap = t.imap
    body = list(module.body)
    insert_at: int | None = None
    carried_lines: list[cst.EmptyLine] = []
    new_body: list[cst.BaseStatement] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and _framework_aliases(stmt.body[0], imap):
            imp = stmt.body[0]
            names = imp.names if not isinstance(imp.names, cst.ImportStar) else None
            if names is None:
                new_body.append(stmt)
                continue
            kept = [a for a in names if _local(a) in keep_locals]
            if insert_at is None:
                insert_at = len(new_body)
            if not kept:
                carried_lines += list(stmt.leading_lines)
                continue
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            note = f"{MARK} torch import kept: unconverted code still uses it"
            lines = list(stmt.leading_lines)
            # The first statement's comments live in the module header.
            seen = [*lines, *(module.header if not new_body else [])]
            if not any(line.comment and line.comment.value == note for line in seen):
                lines.append(cst.EmptyLine(comment=cst.Comment(note)))
            new_body.append(stmt.with_changes(body=[imp.with_changes(names=kept)], leading_lines=lines))
            continue
        new_body.append(stmt)
    existing = {module.code_for_node(s).strip() for s in new_body if isinstance(s, cst.SimpleStatementLine)}
    imports = [cst.parse_statement(line + "\n") for line in t.names.import_lines() if line not in existing]
    if insert_at is None:
        insert_at = _after_header(new_body)
    if imports:
        imports[0] = imports[0].with_changes(leading_lines=carried_lines)
    elif carried_lines and insert_at < len(new_body):
        first = new_body[insert_at]
        new_body[insert_at] = first.with_changes(leading_lines=[*carried_lines, *first.leading_lines])
    new_body[insert_at:insert_at] = imports
    return module.with_changes(body=new_body)


def _after_header(body: list) -> int:
    """Index after the module docstring and __future__ imports."""
    i = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        i = 1
    while i < len(body) and isinstance(body[i], cst.SimpleStatementLine) and isinstance(body[i].body[0], cst.ImportFrom) \
            and _name(body[i].body[0].module) == "__future__":
        i += 1
    return i


def convert_source(source: str, path: str = "<string>", kb: KB | None = None,
                   local_roots: frozenset[str] = frozenset(),
                   project_modules: frozenset[str] = frozenset()) -> ConvertedModule:
    """Convert one module. A file that cannot be parsed comes back unchanged with the error.

    ``local_roots``: the project's own top-level packages (their imports are not torch's).
    ``project_modules``: names of the project's nn.Module subclasses defined in other files.
    """
    kb = kb or load_kb()
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return ConvertedModule(path, source, source, error=f"syntax error at line {exc.lineno}: {exc.msg}; copied unchanged")
    facts = module_facts(tree, kb, local_roots, project_modules)
    if not facts.imap.uses_torch():
        return ConvertedModule(path, source, source)
    try:
        module = cst.parse_module(source)
        t = TorchToMindSpore(kb, facts)
        new = module.visit(t)
        generated = {short.rstrip(".").split(".")[0] for _, short, _ in ALIASES}
        clash = t.still_needed & generated
        if clash:
            # Unconverted torch code still uses e.g. `nn`: MindSpore names must not shadow it.
            facts.taken |= clash
            t = TorchToMindSpore(kb, facts)
            new = module.visit(t)
        keep = _still_used(new.code, {a.split(".")[0] for a in _aliases_in_use(t)}, t.still_needed)
        new = _settle_imports(new, t, keep)
        code = new.code
    except Exception as exc:  # noqa: BLE001 - any converter crash must leave the file intact
        return ConvertedModule(path, source, source, error=f"converter failed ({type(exc).__name__}: {exc}); copied unchanged")
    _assign_lines(t.changes, tree, facts, kb)
    return ConvertedModule(path, source, code, t.changes)


def _aliases_in_use(t: TorchToMindSpore) -> set[str]:
    out = set()
    for full, short, imp in ALIASES:
        if imp in t.names.needed:
            out.add(short.rstrip("."))
    return out


def _assign_lines(changes: list[Change], tree: ast.Module, facts, kb: KB) -> None:
    """Give each change the line of the matching torch use (same resolution as scan), by order per API."""
    uses, _ = collect(tree, facts.imap, kb)
    lines: dict[str, list[int]] = {}
    for u in uses:
        lines.setdefault(u.api, []).append(u.line)
    seen: dict[str, int] = {}
    for c in changes:
        idx = seen.get(c.api, 0)
        got = lines.get(c.api, [])
        if idx < len(got):
            c.line = got[idx]
        seen[c.api] = idx + 1
