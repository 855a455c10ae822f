"""``convert --runtime vendor``: the converted project carries the runtime helpers it uses.

Converted code imports helpers from ``torch2ms.runtime`` (``from torch2ms.runtime import ckpt_path``).
With ``vendor`` (the default), the converted tree gets the package ``torch2ms_runtime/`` at its root
holding only those helpers and what they need (followed with ``ast``, :mod:`.runtime_sources`), and
the imports point there — the project then runs with MindSpore alone, neither torch nor torch2ms
installed. A helper that needs torch2ms itself at run time (``TorchCompat`` and ``compat_base`` apply
the knowledge base's argument rules to run-time values) keeps its ``torch2ms.runtime`` import, and the
report says so. The package is the runtime's own layout, pruned, so its relative imports stay as they
are (two runtime modules define private names alike, so one flat module would not do).
"""

from __future__ import annotations

import ast
import importlib.metadata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .runtime_sources import Closure, RuntimeModule, RuntimeSources, bound_names, runtime_sources

__all__ = ["PACKAGE", "RuntimeVendor"]

PACKAGE = "torch2ms_runtime"
_SOURCE = "torch2ms.runtime"


def _version() -> str:
    try:
        return importlib.metadata.version("torch2ms")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


__version__ = _version()
HEADER = (
    f"# {PACKAGE}: the torch2ms.runtime helpers this converted project uses, written by torch2ms "
    f"{__version__}\n# (only those helpers and what they need). It imports neither torch nor torch2ms; you may edit it.\n"
)


@dataclass
class RuntimeVendor:
    """Rewrites converted modules' runtime imports and collects the helpers they ask for."""

    sources: RuntimeSources = field(default_factory=runtime_sources)
    requests: set[tuple[str, str]] = field(default_factory=set)  # (submodule or "", name)
    kept_on_package: dict[str, set[str]] = field(default_factory=dict)  # helper → files still importing torch2ms

    def vendorable(self, submodule: str, name: str) -> bool:
        found = self.sources.resolve(submodule, name)
        return found is not None and not self.sources.closure([found[0]]).outside

    def rewrite(self, code: str, path: str, level: int = 0) -> str:
        """``code`` with its ``from torch2ms.runtime[.x] import ...`` lines pointing at the vendored package
        (``level`` > 0: a relative import, for a file inside the converted package)."""
        if _SOURCE not in code:
            return code
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return code
        lines = code.splitlines(keepends=True)
        for node in sorted(_runtime_imports(tree), key=lambda n: -n.lineno):
            new = self._replacement(node, path, level)
            indent = " " * node.col_offset
            end = lines[node.end_lineno - 1] if node.end_lineno else ""
            newline = "\n" if end.endswith("\n") else ""
            lines[node.lineno - 1 : node.end_lineno] = [indent + ("\n" + indent).join(new) + newline]
        return "".join(lines)

    def _replacement(self, node: ast.ImportFrom, path: str, level: int) -> list[str]:
        submodule = (node.module or "")[len(_SOURCE) + 1 :]
        here, there = [], []
        for alias in node.names:
            text = alias.name + (f" as {alias.asname}" if alias.asname else "")
            if self.vendorable(submodule, alias.name):
                self.requests.add((submodule, alias.name))
                here.append(text)
            else:
                self.kept_on_package.setdefault(alias.name, set()).add(path)
                there.append(text)
        out = []
        if here:
            out.append(f"from {'.' * level}{PACKAGE} import {', '.join(here)}")
        if there:
            out.append(f"from {node.module} import {', '.join(there)}")
        return out

    def write(self, out_dir: Path) -> list[str]:
        """Write ``torch2ms_runtime/`` into ``out_dir`` when anything was asked for; the report's lines."""
        notes = []
        if self.requests:
            files = self.package_files()
            for rel, text in files.items():
                target = out_dir / PACKAGE / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            names = ", ".join(sorted(name for _, name in self.requests))
            notes.append(
                f"{PACKAGE}/: the torch2ms.runtime helpers the converted code uses ({names}), so it runs without "
                "torch2ms (run from this folder, or put it on PYTHONPATH)"
            )
        for name, paths in sorted(self.kept_on_package.items()):
            notes.append(
                f"{name} still comes from torch2ms.runtime (it needs torch2ms at run time): {', '.join(sorted(paths))}"
            )
        return notes

    def package_files(self) -> dict[str, str]:
        """The vendored package: path inside it → text."""
        needs, lines = [], []
        for submodule, name in sorted(self.requests):
            found = self.sources.resolve(submodule, name)
            if found is not None:
                needs.append(found[0])
                if found[1] is not None and found[1] not in lines:
                    lines.append(found[1])
        closure = self.sources.closure(needs)
        closure.statements.setdefault("__init__.py", set())
        files = {}
        for key in sorted(closure.statements):
            mod = self.sources.modules[key]
            extra = lines if key == "__init__.py" else []
            files[key] = render(mod, closure, extra)
        return files


def _runtime_imports(tree: ast.Module) -> Iterable[ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == _SOURCE or node.module.startswith(_SOURCE + "."):
                yield node


def render(mod: RuntimeModule, closure: Closure, extra: list[str]) -> str:
    """A runtime module as the vendored package holds it: header, then its kept statements in their order
    (``extra``: the package ``__init__``'s re-exports, after its imports, and built classes, at its end)."""
    header = (
        HEADER
        if mod.key == "__init__.py"
        else f"# Part of {PACKAGE}, written by torch2ms {__version__}; you may edit it.\n"
    )
    if mod.whole:
        return header + mod.text
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
    return header + "".join(parts)


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
