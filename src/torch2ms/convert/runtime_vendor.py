"""``convert --runtime vendor``: the converted project carries the runtime helpers it uses.

Converted code imports helpers from ``torch2ms.runtime`` (``from torch2ms.runtime import ckpt_path``).
With ``vendor`` (the default), the converted tree gets the package ``torch2ms_runtime/`` at its root
holding only those helpers and what they need (followed with ``ast``, :mod:`.runtime_sources`), and
the imports point there — the project then runs with MindSpore alone, neither torch nor torch2ms
installed. ``TorchCompat`` and ``compat_base`` apply the knowledge base's argument rules to run-time
values: they come with ``_kb/``, the entries the project names and the rule engine (:mod:`.runtime_kb`).
A helper that would still need torch2ms keeps its ``torch2ms.runtime`` import, and the report says so.
The package is the runtime's own layout, pruned, so its relative imports stay as they are (two runtime
modules define private names alike, so one flat module would not do).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis.astwalk import walk
from ..i18n import _
from .runtime_kb import kb_snapshot
from .runtime_render import PACKAGE, render
from .runtime_sources import KB_LINK, Closure, RuntimeSources, runtime_sources

__all__ = ["PACKAGE", "RuntimeVendor"]

_SOURCE = "torch2ms.runtime"


@dataclass(frozen=True)
class Collected:
    """The helpers, kept imports and TorchCompat names one file's rewrite asked for."""

    requests: set[tuple[str, str]]
    kept_on_package: dict[str, set[str]]
    compat_apis: set[str]


@dataclass
class RuntimeVendor:
    """Rewrites converted modules' runtime imports and collects the helpers they ask for."""

    sources: RuntimeSources = field(default_factory=runtime_sources)
    requests: set[tuple[str, str]] = field(default_factory=set)  # (submodule or "", name)
    kept_on_package: dict[str, set[str]] = field(default_factory=dict)  # helper → files still importing torch2ms
    compat_apis: set[str] = field(default_factory=set)  # torch names given to TorchCompat / compat_base

    def collected(self) -> Collected:
        """What this vendor collected, without its sources (what a worker sends back)."""
        return Collected(self.requests, self.kept_on_package, self.compat_apis)

    def merge(self, other: Collected) -> None:
        """Take in what a vendor of one file (in a worker) collected."""
        self.requests |= other.requests
        self.compat_apis |= other.compat_apis
        for name, paths in other.kept_on_package.items():
            self.kept_on_package.setdefault(name, set()).update(paths)

    def vendorable(self, submodule: str, name: str) -> bool:
        found = self.sources.resolve(submodule, name)
        return found is not None and not self.sources.closure([found[0]]).outside

    def rewrite(self, code: str, path: str, level: int = 0, tree: ast.Module | None = None, depth: int = 0) -> str:
        """``code`` with its ``from torch2ms.runtime[.x] import ...`` lines pointing at the vendored package
        (``level`` > 0: a relative import, for a file inside the converted package). ``tree``: ``code``
        already parsed (the worker's syntax check), so it is not parsed again. ``depth``: how many folders
        below the converted root the file sits; > 0, its first import of the package falls back to putting
        the root on ``sys.path`` (the file started as a script from its own folder, or from anywhere)."""
        if _SOURCE not in code:
            return code
        if tree is None:
            try:
                tree = ast.parse(code)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return code
        if any(helper in code for helper in _COMPAT_HELPERS):  # no call of theirs without their name
            self.compat_apis |= set(_compat_apis(tree))
        lines = code.splitlines(keepends=True)
        nodes = sorted(_runtime_imports(tree), key=lambda n: n.lineno)
        guarded = _guarded(nodes) if depth else set()
        for node in reversed(nodes):
            new = self._replacement(node, path, level, depth if id(node) in guarded else 0)
            indent = " " * node.col_offset
            end = lines[node.end_lineno - 1] if node.end_lineno else ""
            newline = "\n" if end.endswith("\n") else ""
            lines[node.lineno - 1 : node.end_lineno] = [indent + ("\n" + indent).join(new) + newline]
        return "".join(lines)

    def _replacement(self, node: ast.ImportFrom, path: str, level: int, depth: int = 0) -> list[str]:
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
        if here and depth:
            out += _from_root(here, level, depth)
        elif here and level:
            # a module of the converted package, which may also be run as a script from the root
            out += [
                "try:",
                f"    from {'.' * level}{PACKAGE} import {', '.join(here)}",
                "except ImportError:  # run as a script, not as a module of its package",
                f"    from {PACKAGE} import {', '.join(here)}",
            ]
        elif here:
            out.append(f"from {PACKAGE} import {', '.join(here)}")
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
            names = ", ".join(sorted(name for _module, name in self.requests))
            text = _(
                "{package}/: the torch2ms.runtime helpers the converted code uses ({names}), so it runs without "
                "torch2ms; a file in a sub-folder finds it from wherever it is started"
            )
            notes.append(text.format(package=PACKAGE, names=names))
        for name, paths in sorted(self.kept_on_package.items()):
            text = _("{name} still comes from torch2ms.runtime (it needs torch2ms at run time): {paths}")
            notes.append(text.format(name=name, paths=", ".join(sorted(paths))))
        return notes

    def package_files(self) -> dict[str, str]:
        """The vendored package: path inside it → text (``_kb/``: the KB snapshot TorchCompat / compat_base read)."""
        closure, lines = self._closure(self.requests)
        snapshot = kb_snapshot(self.compat_apis) if KB_LINK in closure.generated else None
        if snapshot is not None:
            # Helpers the entries' MindSpore source names (torch2ms.runtime.GRU, .ckpt_path) come along.
            more = {("", n) for n in snapshot.runtime_names if self.sources.resolve("", n) is not None}
            if not more <= self.requests:
                closure, lines = self._closure(self.requests | more)
        closure.statements.setdefault("__init__.py", set())
        files = {}
        for key in sorted(closure.statements):
            mod = self.sources.modules[key]
            extra = lines if key == "__init__.py" else []
            files[key] = render(mod, closure, extra)
        if snapshot is not None:
            files.update({f"{KB_LINK[:-3]}/{rel}": text for rel, text in snapshot.files.items()})
        return files

    def _closure(self, requests: set[tuple[str, str]]) -> tuple[Closure, list[str]]:
        """What the requested helpers reach, and the lines the package ``__init__`` adds to reach them."""
        needs, lines = [], []
        for submodule, name in sorted(requests):
            found = self.sources.resolve(submodule, name)
            if found is not None:
                needs.append(found[0])
                if found[1] is not None and found[1] not in lines:
                    lines.append(found[1])
        return self.sources.closure(needs), lines


def _runtime_imports(tree: ast.Module) -> Iterable[ast.ImportFrom]:
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == _SOURCE or node.module.startswith(_SOURCE + "."):
                yield node


def _guarded(nodes: list[ast.ImportFrom]) -> set[int]:
    """The runtime imports of a file below the converted root that fall back to finding the root: the
    first one at the module's top level (it runs first, and the rest then find the package), else all."""
    top = [n for n in nodes if n.col_offset == 0]
    return {id(top[0])} if top else {id(n) for n in nodes}


def _from_root(names: list[str], level: int, depth: int) -> list[str]:
    """Import ``names`` from the vendored package, which sits ``depth`` folders above this file: by the
    usual import first (the root is on sys.path: ``python -m pkg.module`` from there, or an importer
    that put it there), else with the root appended to sys.path (``cd folder && python script.py``,
    ``python path/to/script.py``)."""
    what = ", ".join(names)
    up = "/".join([".."] * depth)
    find_root = [
        f"except ImportError:  # started from its own folder: {PACKAGE} sits at the converted project's root",
        "    import os, sys",
        f'    sys.path.append(os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "{up}")))',
    ]
    if level:
        return [
            "try:",
            f"    from {'.' * level}{PACKAGE} import {what}",
            *find_root,
            f"    from {PACKAGE} import {what}",
        ]
    # The names are bound by a plain top-level import after the guard, not inside it: whatever reads the
    # module's imports and definitions without running its other statements still finds them.
    return ["try:", f"    import {PACKAGE}  # noqa: F401", *find_root, f"from {PACKAGE} import {what}"]


_COMPAT_HELPERS = ("TorchCompat", "compat_base")


def _compat_apis(tree: ast.Module) -> Iterable[str]:
    """The torch names in ``TorchCompat("torch.nn.Conv2d")`` / ``compat_base("torch.nn.Linear")`` calls."""
    for node in walk(tree):
        if not (node.__class__ is ast.Call and node.args and isinstance(node.args[0], ast.Constant)):  # type: ignore[attr-defined]
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name in _COMPAT_HELPERS and isinstance(node.args[0].value, str):
            yield node.args[0].value
