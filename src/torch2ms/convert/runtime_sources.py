"""The ``torch2ms.runtime`` (and ``torch2ms.kb``) sources read as syntax trees, and what one helper needs of them.

``convert --runtime vendor`` copies into the output tree only the helpers the converted code uses;
this module follows a helper's names through the runtime package with ``ast`` (never importing it:
the runtime modules import MindSpore, and ``convert`` is static). A need is ``(module, name)``, or
``(module, None)`` for a whole module. The modules directly in ``runtime/`` and every package's
``__init__`` are pruned statement by statement; the modules of a subpackage (``distributions/``, whose
KL pairs register themselves as the module loads) are taken whole.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

RUNTIME_DIR = Path(__file__).resolve().parents[1] / "runtime"
KB_LINK = "_kb.py"  # runtime/_kb.py: how TorchCompat and compat_base reach the knowledge base

Need = tuple[str, str | None]


@dataclass
class RuntimeModule:
    key: str  # path inside runtime/: "einops.py", "distributions/__init__.py"
    text: str
    tree: ast.Module
    binds: dict[str, list[int]]  # top-level name → the statements that bind it
    exported: tuple[str, ...]  # its __all__
    whole: bool = False  # taken whole, never pruned

    @property
    def package(self) -> str:
        """The package this module's relative imports start from ("" = the tree's root)."""
        return self.key.rpartition("/")[0]


@dataclass
class Closure:
    """What a set of needs keeps: statements per module (all of them for a whole module), the
    aliases kept of each top-level import, and what lies outside the runtime package."""

    statements: dict[str, set[int]] = field(default_factory=dict)
    aliases: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    outside: list[str] = field(default_factory=list)
    generated: set[str] = field(default_factory=set)  # modules the vendor writes itself (runtime/_kb.py)


def bound_names(stmt: ast.stmt) -> list[str]:
    """Names a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For)):
        return sorted(
            {n for child in ast.iter_child_nodes(stmt) if isinstance(child, ast.stmt) for n in bound_names(child)}
        )
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _read(path: Path, root: Path, whole_subpackages: bool) -> RuntimeModule:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    binds: dict[str, list[int]] = {}
    exported: tuple[str, ...] = ()
    for i, stmt in enumerate(tree.body):
        for name in bound_names(stmt):
            binds.setdefault(name, []).append(i)
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            exported = tuple(ast.literal_eval(stmt.value))
    key = path.relative_to(root).as_posix()
    whole = whole_subpackages and "/" in key and not key.endswith("__init__.py")
    return RuntimeModule(key, text, tree, binds, exported, whole)


class SourceTree:
    """Python modules under one folder, parsed once; what a set of needs reaches among them.

    ``generated``: modules the vendor writes itself, so their imports are not followed.
    ``whole_subpackages``: the modules of a subpackage are taken whole (they may register themselves).
    """

    def __init__(
        self, paths: list[Path], root: Path, generated: frozenset[str] = frozenset(), whole_subpackages: bool = False
    ) -> None:
        self.modules = {m.key: m for m in (_read(p, root, whole_subpackages) for p in sorted(paths))}
        self.generated = generated

    def module_key(self, package: str, dotted: str) -> str | None:
        """The module ``from .<dotted>`` names inside ``package`` (a package's ``__init__``), if any."""
        base = "/".join(p for p in (package, dotted.replace(".", "/")) if p)
        for key in (f"{base}.py", f"{base}/__init__.py"):
            if key in self.modules:
                return key
        return None

    def closure(self, needs: list[Need]) -> Closure:
        """Every statement the needs reach, following names and relative imports."""
        out = Closure()
        todo = list(needs)
        seen: set[Need] = set()
        while todo:
            need = todo.pop()
            if need in seen:
                continue
            seen.add(need)
            key, name = need
            if key in self.generated:
                out.generated.add(key)
                continue
            mod = self.modules[key]
            if mod.whole and name is not None:
                todo.append((key, None))
                continue
            indices = range(len(mod.tree.body)) if name is None else mod.binds.get(name, [])
            for i in indices:
                todo += self._statement_needs(mod, i, name, out)
        return out

    def _statement_needs(self, mod: RuntimeModule, i: int, name: str | None, out: Closure) -> list[Need]:
        kept = out.statements.setdefault(mod.key, set())
        stmt = mod.tree.body[i]
        new = i not in kept
        kept.add(i)
        found: list[Need] = []
        if isinstance(stmt, ast.ImportFrom):
            aliases = out.aliases.setdefault((mod.key, i), set())
            wanted = [a for a in stmt.names if name is None or (a.asname or a.name) == name]
            aliases.update(a.asname or a.name for a in wanted)
            return self._import_needs(mod, stmt, wanted, out)
        if isinstance(stmt, ast.Import):
            wanted_names = [a for a in stmt.names if name is None or (a.asname or a.name).split(".")[0] == name]
            out.aliases.setdefault((mod.key, i), set()).update((a.asname or a.name).split(".")[0] for a in wanted_names)
            return self._import_needs(mod, stmt, wanted_names, out)
        if not new:
            return []
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id in mod.binds:
                found.append((mod.key, node.id))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found += self._import_needs(mod, node, node.names, out)
        return found

    def _import_needs(self, mod: RuntimeModule, node: ast.Import | ast.ImportFrom, aliases, out: Closure) -> list[Need]:
        """The needs of an import inside the runtime; what it imports from torch2ms itself goes to ``out.outside``."""
        if isinstance(node, ast.Import):
            out.outside += [f"{mod.key}: import {a.name}" for a in aliases if a.name.split(".")[0] == "torch2ms"]
            return []
        if node.level == 0:
            if (node.module or "").split(".")[0] == "torch2ms":
                out.outside.append(f"{mod.key}: from {node.module} import ...")
            return []
        package = mod.package.split("/") if mod.package else []
        if node.level - 1 > len(package):
            out.outside.append(f"{mod.key}: from {'.' * node.level}{node.module or ''} import ...")
            return []
        base = "/".join(package[: len(package) - (node.level - 1)])
        if node.module:
            key = self.module_key(base, node.module)
            return [(key, a.name) for a in aliases] if key else []
        return [(key, None) for a in aliases if (key := self.module_key(base, a.name)) is not None]


class RuntimeSources(SourceTree):
    """Every module of ``torch2ms.runtime``, parsed once (``_kb.py``, its link to the knowledge base,
    is written by the vendor: :mod:`.runtime_kb`)."""

    def __init__(self, root: Path = RUNTIME_DIR) -> None:
        super().__init__(list(root.rglob("*.py")), root, generated=frozenset({KB_LINK}), whole_subpackages=True)
        init = self.modules["__init__.py"]
        self.builders = _builders(init.tree)
        # Helper name → the module directly in runtime/ that exports it (what runtime.__getattr__ reads).
        self.helper_modules: dict[str, str] = {}
        for key, mod in self.modules.items():
            if "/" not in key and not key.startswith("_"):
                self.helper_modules.update(dict.fromkeys(mod.exported, key))

    def resolve(self, submodule: str, name: str) -> tuple[Need, str | None] | None:
        """How the package ``__init__`` reaches a requested helper: the need, and the line it adds there
        (``from .einops import rearrange``, ``Sequential = _sequential_cell()``) or None."""
        if submodule:
            key = self.module_key("", submodule)
            return ((key, name), f"from .{submodule} import {name}") if key else None
        if name in self.modules["__init__.py"].binds:
            return ("__init__.py", name), None
        if name in self.helper_modules:
            key = self.helper_modules[name]
            return (key, name), f"from .{key[:-3]} import {name}"
        if name in self.builders:
            return ("__init__.py", self.builders[name]), f"{name} = {self.builders[name]}()"
        sub = self.modules.get("distributions/__init__.py")
        if sub is not None and name in sub.exported:
            return ("distributions/__init__.py", name), f"from .distributions import {name}"
        return None


def _builders(init: ast.Module) -> dict[str, str]:
    """runtime.__getattr__'s ``builders = {"Sequential": _sequential_cell, ...}``: classes built on first use."""
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "builders" for t in node.targets)
        ):
            return {
                k.value: v.id
                for k, v in zip(node.value.keys, node.value.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name)
            }
    return {}


@functools.cache
def runtime_sources() -> RuntimeSources:
    return RuntimeSources()
