"""The shape of the code itself: no import cycles, the knowledge base at the bottom, short functions.

Read from the source with ``ast`` (no import is executed): every ``import`` / ``from ... import`` of a
``torch2ms`` module, at module level or inside functions (a lazy import is still a dependency);
imports under ``if TYPE_CHECKING:`` are for the type checker only and do not count.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

MAX_FUNCTION_LINES = 80
# Packages in dependency order: each may import only those before it (and itself). torch2ms.runtime
# is imported by converted code, so it sits beside the KB, below everything that converts. torch2ms.i18n
# (the language messages are shown in) is below everything, so that every layer can speak.
LAYERS = [
    {"torch2ms.i18n"},
    {"torch2ms.kb"},
    {"torch2ms.analysis", "torch2ms.runtime", "torch2ms.import_probe", "torch2ms.plots", "torch2ms.progress"},
    {"torch2ms.factory", "torch2ms.cli_support", "torch2ms.project_index"},
    {"torch2ms.weights", "torch2ms.convert", "torch2ms.report"},
    {"torch2ms.proof", "torch2ms.align", "torch2ms.data", "torch2ms.export", "torch2ms.doctor"},
    # compare-train --api records and aligns a training step's calls as compare --api does (align's
    # recorder, line map and report); replay runs a recording's calls through the proof harness
    {"torch2ms.trainrun"},
    {"torch2ms.replay"},  # replay --train records N steps through compare-train's torch side
    {"torch2ms.cli", "torch2ms"},
    {"torch2ms.__main__"},
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "torch2ms").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _imports(name: str, path: Path, modules: dict[str, Path], type_only: bool = False) -> set[str]:
    """The torch2ms modules ``name`` imports (``from pkg import mod`` counts as importing ``pkg.mod``);
    ``type_only``: the imports under ``if TYPE_CHECKING:`` count too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = set() if type_only else _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    out.add(f"{target}.{alias.name}")
                elif target in modules:
                    out.add(target)
    out.discard(name)
    return out


@functools.cache
def _graph(type_only: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules, type_only) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_graph()) == []


def test_no_import_cycle_for_the_type_checker_either() -> None:
    """A type-only import that closes a loop (a report dataclass and its renderer importing each other)
    hides a dependency the wrong way round: none, counting the imports under TYPE_CHECKING."""
    assert _cycles(_graph(type_only=True)) == []


def test_no_import_cycle_between_packages() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        packages.setdefault(_package(module), set()).update(
            _package(t) for t in targets if _package(t) != _package(module)
        )
    assert _cycles(packages) == []


def test_packages_import_only_the_layers_below() -> None:
    layer_of = {package: i for i, layer in enumerate(LAYERS) for package in layer}
    wrong = []
    for module, targets in _graph().items():
        package = _package(module)
        assert package in layer_of, f"{package}: add the new package to LAYERS"
        for target in targets:
            if _package(target) != package and layer_of[_package(target)] >= layer_of[package]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_no_function_over_80_lines_in_src() -> None:
    long = []
    for path in sorted((SRC / "torch2ms").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []
