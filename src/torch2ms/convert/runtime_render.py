"""How a vendored runtime module is written: its kept statements in their order, under a header.

Shared by the runtime helpers (:mod:`.runtime_vendor`) and the knowledge-base snapshot that
``TorchCompat`` / ``compat_base`` carry (:mod:`.runtime_kb`).
"""

from __future__ import annotations

import ast
import importlib.metadata

from ..i18n import _
from .runtime_sources import Closure, RuntimeModule, bound_names

__all__ = ["PACKAGE", "header", "part_header", "render"]

PACKAGE = "torch2ms_runtime"


def _version() -> str:
    try:
        return importlib.metadata.version("torch2ms")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


__version__ = _version()


def header() -> str:
    """The comment the vendored package's ``__init__`` starts with, in the language of the run."""
    text = _(
        "{package}: the torch2ms.runtime helpers this converted project uses, written by torch2ms {version}\n"
        "(only those helpers and what they need). It imports neither torch nor torch2ms; you may edit it."
    ).format(package=PACKAGE, version=__version__)
    return "".join(f"# {line}\n" for line in text.splitlines())


def part_header() -> str:
    """The first line of every vendored file but the package's ``__init__``."""
    text = _("Part of {package}, written by torch2ms {version}; you may edit it.")
    return "# " + text.format(package=PACKAGE, version=__version__) + "\n"


def render(mod: RuntimeModule, closure: Closure, extra: list[str]) -> str:
    """A runtime module as the vendored package holds it: header, then its kept statements in their order
    (``extra``: the package ``__init__``'s re-exports, after its imports, and built classes, at its end)."""
    first = header() if mod.key == "__init__.py" else part_header()
    if mod.whole:
        return first + mod.text
    imports = _merged_imports([line for line in extra if line.startswith("from ")])
    kept = closure.statements.get(mod.key, set())
    body, lines = mod.tree.body, mod.text.splitlines(keepends=True)
    parts: list[str] = []
    previous = -1
    for i, stmt in enumerate(body):
        text = _statement_text(mod, closure, i, stmt, kept, lines)
        if text is None:
            continue
        is_import = isinstance(stmt, (ast.Import, ast.ImportFrom)) or (i == 0 and isinstance(stmt, ast.Expr))
        if imports and not is_import:
            parts.append("\n" + "".join(f"{line}\n" for line in imports))
            imports, previous = [], -1
        if previous == i - 1 and previous >= 0:
            gap = "".join(lines[body[previous].end_lineno or 0 : _first_line(stmt) - 1])
        else:
            spacing = "\n\n" if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else "\n"
            gap = (spacing if parts else "") + _leading_comments(lines, _first_line(stmt))
        parts.append(gap + text)
        previous = i
    if imports:
        parts.append("\n" + "".join(f"{line}\n" for line in imports))
    built = [line for line in extra if not line.startswith("from ")]
    if built:
        parts.append("\n\n" + "".join(f"{line}\n" for line in built))
    return first + "".join(parts)


def _merged_imports(lines: list[str]) -> list[str]:
    """``from .vision import a`` + ``from .vision import b`` → ``from .vision import a, b`` (sorted)."""
    by_module: dict[str, list[str]] = {}
    for line in lines:
        module, _, name = line.partition(" import ")
        by_module.setdefault(module, []).append(name)
    return [f"{module} import {', '.join(sorted(set(names)))}" for module, names in sorted(by_module.items())]


def _statement_text(
    mod: RuntimeModule, closure: Closure, i: int, stmt: ast.stmt, kept: set[int], lines: list[str]
) -> str | None:
    """The source of one top-level statement as vendored, or None when it is left out."""
    docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
    if "__all__" in bound_names(stmt) and not isinstance(stmt, (ast.Import, ast.ImportFrom)):
        names = sorted(_kept_names(mod, closure, kept) & set(mod.exported))
        return f"__all__ = {names!r}\n".replace("'", '"') if names else None
    if not (docstring or future or i in kept):
        return None
    if isinstance(stmt, (ast.Import, ast.ImportFrom)) and not future:
        wanted = closure.aliases.get((mod.key, i), set())
        aliases = [a for a in stmt.names if (a.asname or a.name).split(".")[0] in wanted]
        if len(aliases) < len(stmt.names):
            return ast.unparse(type(stmt)(**{**stmt.__dict__, "names": aliases})) + "\n"
    return "".join(lines[_first_line(stmt) - 1 : stmt.end_lineno])


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _leading_comments(lines: list[str], first: int) -> str:
    """The comment lines right above a statement (what explains it)."""
    start = first - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return "".join(lines[start : first - 1])


def _kept_names(mod: RuntimeModule, closure: Closure, kept: set[int]) -> set[str]:
    """The top-level names the kept statements bind (an import: only its kept aliases)."""
    out: set[str] = set()
    for j in kept:
        stmt = mod.tree.body[j]
        is_import = isinstance(stmt, (ast.Import, ast.ImportFrom))
        out |= closure.aliases.get((mod.key, j), set()) if is_import else set(bound_names(stmt))
    return out
