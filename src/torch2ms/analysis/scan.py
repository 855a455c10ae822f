"""The operator inventory (R1) and static-graph risks (R3) of a file or project tree.

Static only: reads source with ``ast``; needs neither torch nor MindSpore.
"""

from __future__ import annotations

import ast
import heapq
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..i18n import _
from ..kb import KB, load_kb
from .astwalk import depth
from .forward_state import graph_methods
from .headroom import MAX_NESTING, run_with_headroom
from .imports import ImportMap
from .infer import (
    AMBIGUOUS_METHODS,
    MODULE,
    OPTIMIZER,
    SCHEDULER,
    TENSOR,
    TENSOR_ONLY_METHODS,
    Scope,
    expr_type,
    infer_function,
    is_module_class,
    module_classes,
    self_attribute_types,
)
from .project_names import module_name, project_bindings, top_level_imports
from .risks import Risk, forward_risks
from .sourcefiles import MAX_FILE_BYTES, SKIP_DIRS, BadInput, Problem, TreeListing, display, read_python, walk_tree
from .spool import Spool

__all__ = ["MAX_FILE_BYTES", "SKIP_DIRS", "BadInput", "read_source", "iter_python_files", "scan_path", "scan_source"]

# Effort classes (R1): what converting leaves, in the conversion report's own counts (convert/estimate.py
# runs the converter on each file without writing): converted / review / not converted.
AUTO, REVIEW, MANUAL = "automatic", "review", "manual"
EFFORT_OF_ACTION = {"converted": AUTO, "review": REVIEW, "not-converted": MANUAL}


@dataclass(frozen=True, slots=True)  # slots: a 100,000-file scan keeps millions (issue 26)
class ApiUse:
    api: str
    line: int
    col: int
    status: str  # KB status, or "unknown"
    confidence: str = "certain"  # certain | likely | guess (tensor-method receivers)


@dataclass
class FileReport:
    path: str
    lines: int = 0
    uses: list[ApiUse] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)
    error: str | None = None
    # What converting the file gives, as the conversion report counts it (convert/estimate.py fills it:
    # None when no conversion was run), and the items it leaves for a person ({line, api, action, note}).
    conversion: dict[str, int] | None = None
    left: list[dict] = field(default_factory=list)

    def effort(self) -> Counter:
        """The converter's counts under scan's names; a KB status alone does not say what is left."""
        c: Counter = Counter({effort: 0 for effort in (AUTO, REVIEW, MANUAL)})
        for action, n in (self.conversion or {}).items():
            c[EFFORT_OF_ACTION.get(action, action)] += n
        return c


@dataclass
class ScanReport:
    root: str
    # Each file's report, on disk until read (issue 26: the driver's memory does not grow with the tree).
    files: Spool[FileReport] = field(default_factory=Spool)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # folders not walked: (path, why)

    @property
    def uses(self) -> list[tuple[str, ApiUse]]:
        return [(f.path, u) for f in self.files for u in f.uses]

    @property
    def risks(self) -> list[tuple[str, Risk]]:
        return [(f.path, r) for f in self.files for r in f.risks]

    @property
    def errors(self) -> list[FileReport]:
        return [f for f in self.files if f.error]

    def inventory(self) -> dict[str, dict]:
        """API → {status, count, locations, confidence}, the 算子清单."""
        inv: dict[str, dict] = {}
        for path, u in self.uses:
            row = inv.setdefault(
                u.api, {"api": u.api, "status": u.status, "count": 0, "locations": [], "confidence": Counter()}
            )
            row["count"] += 1
            row["locations"].append(f"{path}:{u.line}")
            row["confidence"][u.confidence] += 1
        return dict(sorted(inv.items(), key=lambda kv: (-kv[1]["count"], kv[0])))

    def by_status(self) -> Counter:
        return Counter(u.status for _path, u in self.uses)

    def effort(self) -> Counter:
        total: Counter = Counter({effort: 0 for effort in (AUTO, REVIEW, MANUAL)})
        for f in self.files:
            total.update(f.effort())
        return total

    @property
    def left(self) -> list[tuple[str, dict]]:
        """What converting leaves for a person, file by file: the conversion report's "needs a person" list."""
        return [(f.path, item) for f in self.files for item in f.left]

    def to_dict(self) -> dict:
        inv = self.inventory()
        for row in inv.values():
            row["confidence"] = dict(row["confidence"])
        return {
            "root": self.root,
            "summary": {
                "files": len(self.files),
                "files_with_errors": len(self.errors),
                "lines": sum(f.lines for f in self.files),
                "api_uses": len(self.uses),
                "distinct_apis": len(inv),
                "by_status": dict(self.by_status()),
                "effort": dict(self.effort()),
                "left_for_user": self.effort()[REVIEW] + self.effort()[MANUAL],
                "risks": len(self.risks),
            },
            "skipped_folders": [{"path": p, "why": why} for p, why in self.skipped],
            "inventory": list(inv.values()),
            "risks": [{"path": p, **asdict(r)} for p, r in self.risks],
            "left": [{"path": p, **item} for p, item in self.left],
            "files": [
                {
                    "path": f.path,
                    "lines": f.lines,
                    "uses": len(f.uses),
                    "risks": len(f.risks),
                    "effort": dict(f.effort()),
                    "error": f.error,
                }
                for f in self.files
            ],
        }


# ---- reading files robustly: see sourcefiles.py ------------------------------------------------


def read_source(path: Path) -> str:
    """Decode a Python file as Python would (BOM, PEP 263 cookie), or raise BadInput with why."""
    return read_python(path).text


def iter_python_files(root: Path) -> tuple[list[Path], list[FileReport]]:
    """Python files under root (following directory links once), plus reports for bad paths."""
    listing = walk_tree(root)
    return listing.python, [FileReport(str(p.path), error=p.reason) for p in _python_problems(listing)]


def _python_problems(listing: TreeListing) -> list[Problem]:
    """What could not be read among Python files and folders (a broken link named data.csv is not scan's business)."""
    return [p for p in listing.problems if p.folder or p.path.name.endswith(".py")]


# ---- one file ---------------------------------------------------------------------------------


class _Collector(ast.NodeVisitor):
    """Records every framework API reference (maximal dotted chains) and tensor-method calls."""

    def __init__(self, imap: ImportMap, kb: KB) -> None:
        self.imap = imap
        self.kb = kb
        self.uses: list[ApiUse] = []
        self.risks: list[Risk] = []
        self.scope = Scope()
        self.self_attrs: dict[str, str] = {}
        self.local_modules: set[str] = set()
        self.module_classes: dict[str, str] = {}
        self.in_module_class = False
        self.compiled: frozenset[str] = frozenset()  # the class's methods GRAPH_MODE compiles

    def _add(self, api: str, node: ast.AST, confidence: str = "certain") -> None:
        entry = self.kb.get(api)
        status = entry.status if entry else "unknown"
        self.uses.append(ApiUse(entry.torch if entry else api, node.lineno, node.col_offset, status, confidence))

    def visit_Import(self, node):  # imports are bindings, not uses
        return

    def visit_ImportFrom(self, node):
        return

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        for b in node.bases:
            self.visit(b)
        outer = (self.self_attrs, self.in_module_class, self.compiled)
        self.in_module_class = is_module_class(node, self.imap, self.local_modules)
        self.compiled = frozenset()
        if self.in_module_class:
            self.local_modules.add(node.name)
            self.compiled = graph_methods(node)  # forward and the methods it calls: GRAPH_MODE compiles them
        self.self_attrs = self_attribute_types(node, self.imap, self.kb, self.module_classes)
        for stmt in node.body:
            self.visit(stmt)
        self.self_attrs, self.in_module_class, self.compiled = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        is_forward = self.in_module_class and node.name == "forward"
        outer = self.scope
        self.scope = infer_function(
            node, self.imap, self.self_attrs, self.kb, is_forward, self.module_classes, self.in_module_class
        )
        if self.in_module_class and node.name in self.compiled:
            self.risks.extend(forward_risks(node, self.imap, self.scope, self.self_attrs, self.kb))
        self.generic_visit(node)
        self.scope = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        full = self.imap.resolve(node)
        if full and self.imap.is_framework(full):
            self._add(full, node)
            return  # the maximal chain only
        self._method_or_attribute(node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        full = self.imap.resolve(node)
        if full and self.imap.is_framework(full) and full != node.id and "." in full:
            # `from torch.nn import Conv2d` then `Conv2d(...)`
            self._add(full, node)

    def _method_or_attribute(self, node: ast.Attribute) -> None:
        recv_type = expr_type(node.value, self.imap, self.scope, self.self_attrs, self.kb)
        if isinstance(node.value, ast.Name) and node.value.id == "self" and self.in_module_class:
            recv_type = recv_type or None
        attr = node.attr
        if recv_type in (MODULE, OPTIMIZER, SCHEDULER):
            owner = recv_type
            if self.kb.method(attr, owner) is not None:
                self._add(f"{owner}.{attr}", node, "certain")
            return
        entry = self.kb.method(attr)
        if recv_type == TENSOR:
            if entry is not None or attr in TENSOR_ONLY_METHODS or attr in AMBIGUOUS_METHODS:
                self._add(f"torch.Tensor.{attr}", node, "certain")
            return
        if (
            recv_type is None
            and attr in TENSOR_ONLY_METHODS
            and not (isinstance(node.value, ast.Name) and node.value.id == "self")
        ):
            self._add(f"torch.Tensor.{attr}", node, "likely")


def scan_source(
    source: str, path: str, kb: KB | None = None, project_names: dict[str, str] | None = None
) -> FileReport:
    kb = kb or load_kb()
    report = FileReport(path, lines=source.count("\n") + (0 if source.endswith("\n") else 1))
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        report.error = (
            f"syntax error at line {exc.lineno}: {exc.msg}; fix the file (or run it under Python 3.11) and scan again"
        )
        return report
    except (ValueError, RecursionError, MemoryError) as exc:
        report.error = f"cannot parse ({type(exc).__name__}: {exc}); skipped"
        return report
    deep = depth(tree)
    if deep > MAX_NESTING:  # as convert: the walks below have room up to the cap (analysis/headroom.py)
        report.error = _("nested {depth} levels deep, over the {cap} torch2ms analyses; skipped").format(
            depth=deep, cap=MAX_NESTING
        )
        return report
    imap = ImportMap.from_tree(tree)
    for name, full in (project_names or {}).items():  # from .parts import *: torch names of other files
        if not imap.is_framework(imap.names.get(name)):
            imap._bind(name, full, imap.lines.get(name, 0))
    if not imap.uses_torch():
        return report
    report.uses, report.risks = collect(tree, imap, kb)
    return report


def collect(tree: ast.Module, imap: ImportMap, kb: KB) -> tuple[list[ApiUse], list[Risk]]:
    """Every torch API use and forward risk in a parsed module, in source order."""
    col = _Collector(imap, kb)
    col.module_classes = module_classes(tree, imap)
    col.scope = Scope(dict(col.module_classes))
    col.visit(tree)
    return sorted(col.uses, key=lambda u: (u.line, u.col)), sorted(col.risks, key=lambda r: (r.line, r.col))


def scan_file(
    path: Path, kb: KB | None = None, display_name: str | None = None, project_names: dict[str, str] | None = None
) -> FileReport:
    """One file's report; whatever goes wrong (unreadable, too deep to parse) is that file's error."""
    name = display_name or display(path)
    try:  # in a thread with room for every walk up to the documented nesting cap (analysis/headroom.py)
        return run_with_headroom(scan_source, read_source(path), name, kb, project_names)
    except BadInput as exc:
        return FileReport(name, error=str(exc))
    except RecursionError:
        return FileReport(name, error="nested too deeply to analyse (RecursionError); skipped")
    except MemoryError:
        return FileReport(name, error="too large to analyse (MemoryError); skipped")
    except Exception as exc:  # noqa: BLE001 - one file never ends the scan of a tree
        return FileReport(name, error=f"scan failed ({type(exc).__name__}: {exc}); skipped")


def _relative(path: Path, base: Path) -> str:
    try:
        return display(path.relative_to(base))
    except ValueError:
        return display(path)


def _project_names(files: list[Path], base: Path) -> dict[str, dict[str, str]]:
    """Per module: the torch names it gets from other files of the tree (from .parts import *)."""
    trees = {}
    for f in files:
        try:
            tree = top_level_imports(ast.parse(read_source(f)))  # not the whole tree: memory stays flat
            trees[module_name(f.relative_to(base))] = (tree, f.name == "__init__.py")
        except (BadInput, SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # reported when the file itself is scanned
    return project_bindings(trees)


_POOL_KB: KB | None = None  # the KB a forked scan worker inherits (set before the pool forks)


def _scan_task(task: tuple[Path, str, dict[str, str] | None]) -> FileReport:
    return scan_file(task[0], _POOL_KB, task[1], task[2])


def _scan_files(tasks: list[tuple[Path, str, dict[str, str] | None]], kb: KB, jobs: int) -> Iterator[FileReport]:
    """Each file's report in order; with ``jobs`` > 1 from forked worker processes (the KB shared, each
    worker holding one file at a time), where fork exists."""
    import multiprocessing

    if jobs <= 1 or len(tasks) < 8 or "fork" not in multiprocessing.get_all_start_methods():
        yield from (scan_file(f, kb, rel, names) for f, rel, names in tasks)
        return
    global _POOL_KB
    _POOL_KB = kb
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            yield from pool.imap(_scan_task, tasks, chunksize=8)
    finally:
        _POOL_KB = None


def scan_path(
    path: str | os.PathLike, kb: KB | None = None, jobs: int = 1, fill: Callable[[FileReport], None] | None = None
) -> ScanReport:
    """Scan a file or a project tree; bad files are reported and the rest still scanned.
    ``jobs`` > 1: files are scanned in that many worker processes (same report). ``fill`` completes each
    file's report before it is kept (convert/estimate.py: the conversion's counts). The reports are
    kept on disk in path order as they arrive, so memory does not grow with the tree."""
    kb = kb or load_kb()
    root = Path(path)
    if not root.exists() and not root.is_symlink():
        raise FileNotFoundError(_("{path}: no such file or directory").format(path=display(root)))
    listing = walk_tree(root)
    base = root if root.is_dir() else root.parent
    report = ScanReport(display(root))
    names = _project_names(listing.python, base) if root.is_dir() else {}
    tasks = sorted(
        ((f, rel, names.get(module_name(rel))) for f in listing.python for rel in (_relative(f, base),)),
        key=lambda t: t[1],
    )
    del names
    bad = sorted((FileReport(_relative(p.path, base), error=p.reason) for p in _python_problems(listing)), key=_path)
    report.skipped = [(_relative(p.path, base), p.reason) for p in listing.skipped]
    del listing
    for f in heapq.merge(_scan_files(tasks, kb, jobs), bad, key=_path):
        if fill is not None:
            fill(f)
        report.files.append(f)
    return report


def _path(f: FileReport) -> str:
    return f.path
