"""Convert one Python module's source: parse, transform, then settle the imports."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.astwalk import nodes
from ..analysis.imports import ImportMap
from ..analysis.infer import MODULE, Scope
from ..analysis.scan import collect
from ..kb import KB, load_kb
from . import data_pipeline
from .names import ALIASES
from .plan import PlanMismatch, change_keys
from .quiet import hide_quiet_statements
from .training import LineMap, rewrite_training
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


def _mentioned(code: str, name: str) -> bool:
    """``name`` appears as a word outside ``# ...`` comments (the converter's own notes name torch APIs).
    A line with a quote before the ``#`` counts: the ``#`` may sit in a string. Right after a quote it is
    string text (``TorchCompat("torch.nn.ReLU")``)."""
    for m in re.finditer(rf"(?<![\w.'\"]){re.escape(name)}\b", code):
        before = code[code.rfind("\n", 0, m.start()) + 1 : m.start()]
        if "#" not in before or "'" in before or '"' in before:
            return True
    return False


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


def _settle_imports(module: cst.Module, t: TorchToMindSpore, keep_locals: set[str]) -> cst.Module:
    imap = t.imap
    body = list(module.body)
    insert_at: int | None = None
    carried_lines: list[cst.EmptyLine] = []
    new_body: list[cst.BaseStatement] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and _framework_aliases(stmt.body[0], imap):
            imp = stmt.body[0]
            if isinstance(imp.names, cst.ImportStar):
                # Kept only while a name it provides is still used unconverted.
                kept = [imp.names] if t.facts.star_names & keep_locals else []
            else:
                kept = [a for a in imp.names if _local(a) in keep_locals]
            if insert_at is None:
                insert_at = len(new_body)
            if not kept:
                carried_lines += list(stmt.leading_lines)
                continue
            if not isinstance(imp.names, cst.ImportStar):
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            note = f"{MARK} torch import kept: unconverted code still uses it"
            lines = list(stmt.leading_lines)
            # The first statement's comments live in the module header.
            seen = [*lines, *(module.header if not new_body else [])]
            if not any(line.comment and line.comment.value == note for line in seen):
                lines.append(cst.EmptyLine(comment=cst.Comment(note)))
            names = kept[0] if isinstance(imp.names, cst.ImportStar) else kept
            new_body.append(stmt.with_changes(body=[imp.with_changes(names=names)], leading_lines=lines))
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


def convert_source(
    source: str,
    path: str = "<string>",
    kb: KB | None = None,
    local_roots: frozenset[str] = frozenset(),
    project_modules: frozenset[str] = frozenset(),
) -> ConvertedModule:
    """Convert one module. A file that cannot be parsed comes back unchanged with the error.

    ``local_roots``: the project's own top-level packages (their imports are not torch's).
    ``project_modules``: names of the project's nn.Module subclasses defined in other files.
    """
    kb = kb or load_kb()
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return ConvertedModule(
            path, source, source, error=f"syntax error at line {exc.lineno}: {exc.msg}; copied unchanged"
        )
    except ValueError as exc:  # e.g. NUL bytes
        return ConvertedModule(path, source, source, error=f"cannot parse ({exc}); copied unchanged")
    imap = ImportMap.from_tree(tree, local_roots)
    if not imap.uses_torch() and not any(imap.is_framework(m) for m in imap.stars):
        return ConvertedModule(path, source, source)
    # Training loops and checkpoints are restructured first, still as torch code (training.py).
    try:
        training = rewrite_training(source, tree, imap)
    except Exception:  # noqa: BLE001 - a failed pre-pass leaves the loop to the per-call rules
        training = None
        tree = ast.parse(source, filename=path)  # the pre-pass may have spliced its edits into the tree
    work = source
    if training is not None and training.source != source:
        work = training.source
        tree = training.tree or ast.parse(work, filename=path)
    facts = module_facts(tree, kb, local_roots, project_modules, imap if work == source else None)
    if work != source:
        facts.training_generated = True
        for cls, fn, name in training.modules:
            facts.scopes.setdefault((cls, fn), Scope(dict(facts.module_classes))).types.setdefault(name, MODULE)
    try:
        facts.data = data_pipeline.scan(work, tree, facts.imap, kb, facts.plan)  # R14: None unless a pipeline
    except Exception:  # noqa: BLE001 - without pipeline facts the per-call KB rules still apply
        facts.data = None
    try:
        facts.reexports = _reexports(tree, facts)
        quiet = None
        if training is not None and training.parsed is not None:
            parsed = training.parsed
        else:
            quiet = hide_quiet_statements(work, tree, facts.plan)  # statements with nothing to convert skip libcst
            if quiet is not None:
                facts.plan = quiet.plan
            parsed = cst.parse_module(quiet.source if quiet is not None else work)
        code, t = _convert(parsed, kb, facts)
        if quiet is not None:
            code = quiet.restore(code)
    except Exception as exc:  # noqa: BLE001 - any converter crash must leave the file intact
        return ConvertedModule(
            path, source, source, error=f"converter failed ({type(exc).__name__}: {exc}); copied unchanged"
        )
    _assign_lines(t.changes, tree, facts, kb)
    changes = t.changes
    if training is not None:
        if work != source:
            to_original = training.line_map or LineMap(source, work)
            for c in changes:
                c.line = to_original(c.line)
        changes = sorted(
            [*changes, *(Change(n.api, n.action, n.note, n.line) for n in training.notes)], key=lambda c: c.line
        )
    return ConvertedModule(path, source, code, changes)


def _transform(module: cst.Module, kb: KB, facts) -> tuple[cst.Module, TorchToMindSpore]:
    t = TorchToMindSpore(kb, facts)
    try:
        new = module.visit(t)
    except PlanMismatch:
        t = TorchToMindSpore(kb, facts, use_plan=False)  # an unusual construct: visit every node
        new = module.visit(t)
    return new, t


def _convert(module: cst.Module, kb: KB, facts) -> tuple[str, TorchToMindSpore]:
    new, t = _transform(module, kb, facts)
    generated = {short.rstrip(".").split(".")[0] for _, short, _ in ALIASES}
    clash = t.still_needed & generated
    if clash:
        # Unconverted torch code still uses e.g. `nn`: MindSpore names must not shadow it.
        facts.taken |= clash
        new, t = _transform(module, kb, facts)
    torch_locals = {n for n, full in facts.imap.names.items() if facts.imap.is_framework(full)}
    reexports = facts.reexports
    keep = set(t.still_needed) | reexports
    for _ in range(3):
        settled = _settle_imports(new, t, keep)
        if facts.nested_torch_imports:
            settled = settled.visit(_NestedImports(facts.imap, _aliases_in_use(t), reexports))
        code = settled.code
        # A torch name the output still reads (not one of the MindSpore aliases) keeps its import.
        used = _torch_names_used(code, torch_locals - _aliases_in_use(t) - keep)
        if not used:
            return code, t
        keep |= used
    return code, t


# `from torch import nn` binds a namespace, never something another module re-imports from here.
_TORCH_SUBMODULES = frozenset(
    f"torch.{m}"
    for m in (
        "nn autograd optim utils cuda distributed jit fx linalg fft special hub onnx amp backends "
        "multiprocessing sparse distributions testing profiler quantization ao accelerator"
    ).split()
) | frozenset({"torch.nn.functional", "torch.nn.init", "torch.utils.data", "torch.optim.lr_scheduler"})


def _reexports(tree: ast.Module, facts) -> set[str]:
    """Torch names a file imports but never reads itself (``from torch.hub import
    load_state_dict_from_url`` in a utils module): other modules import them from here, so the
    import stays (it has no MindSpore meaning to convert to)."""
    candidates = {
        a.asname or a.name
        for node in nodes(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and facts.imap.is_framework(node.module)
        for a in node.names
        if a.name != "*" and f"{node.module}.{a.name}" not in _TORCH_SUBMODULES
    }
    if not candidates:
        return set()
    read = {n.id for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    read |= {n.value.id for n in nodes(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    return candidates - read


class _NestedImports(cst.CSTTransformer):
    """Torch imports inside functions and blocks: drop the names the block's converted code no
    longer reads (a read of a MindSpore alias such as ``nn`` is MindSpore's, never torch's)."""

    def __init__(self, imap, ms_aliases: set[str], reexports: set[str] = frozenset()) -> None:
        super().__init__()
        self.imap, self.ms_aliases, self.reexports = imap, ms_aliases, reexports

    def visit_SimpleStatementLine(self, node) -> bool:
        return False

    def _is_torch_import(self, stmt) -> bool:
        return (
            isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1
            and _framework_aliases(stmt.body[0], self.imap)
            and not isinstance(stmt.body[0].names, cst.ImportStar)
        )

    def leave_IndentedBlock(self, original, updated):
        if not any(self._is_torch_import(s) for s in updated.body):
            return updated
        block = cst.Module(body=[s for s in updated.body if not self._is_torch_import(s)]).code
        try:
            tree = ast.parse(block)
            read = {n.id for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        except SyntaxError:
            return updated
        read = (read - self.ms_aliases) | self.reexports
        body = []
        for stmt in updated.body:
            if not self._is_torch_import(stmt):
                body.append(stmt)
                continue
            imp = stmt.body[0]
            kept = [a for a in imp.names if _local(a) in read]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                body.append(stmt.with_changes(body=[imp.with_changes(names=kept)]))
        return updated.with_changes(body=body or [cst.SimpleStatementLine([cst.Pass()])])


def _aliases_in_use(t: TorchToMindSpore) -> set[str]:
    out = set()
    for _full, short, imp in ALIASES:
        if imp in t.names.needed:
            out.add(short.rstrip("."))
    return out


def _assign_lines(changes: list[Change], tree: ast.Module, facts, kb: KB) -> None:
    """Give each change the line of its torch use: within the statement it was found in, the
    matching name (or attribute) by order of appearance; else the statement's own line."""
    if any(c.stmt is None for c in changes):
        _assign_lines_by_order(changes, tree, facts, kb)
        return
    keys: dict[int, dict[str, list[int]]] = {}
    seen: dict[tuple[int, str], int] = {}
    for c in changes:
        stmt = c.stmt
        assert stmt is not None
        found = keys.get(id(stmt))
        if found is None:
            found = keys[id(stmt)] = change_keys(stmt, facts.imap, kb)
        c.line = stmt.lineno
        for key in (c.api, c.api.rsplit(".", 1)[-1]):
            got = found.get(key)
            if got:
                idx = seen.get((id(stmt), key), 0)
                c.line = got[min(idx, len(got) - 1)]
                seen[(id(stmt), key)] = idx + 1
                break


def _assign_lines_by_order(changes: list[Change], tree: ast.Module, facts, kb: KB) -> None:
    """Fallback without statements: the n-th change of an API gets the n-th use scan finds."""
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
