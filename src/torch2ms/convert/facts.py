"""What the cheap ``ast`` pass knows about one file, before any libcst work.

Imports resolved to full torch names, the project's Module classes, lazily inferred types per
function, layer attributes, torch base classes, the statement plan (plan.py), names a torch star
import binds, torch names re-exported for other modules, and the facts constructs declare for
themselves (construct.Facts, e.g. the data pipeline's). Everything a stage may ask is a declared field.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..analysis.astwalk import nodes
from ..analysis.imports import ImportMap
from ..analysis.infer import (
    MODULE,
    Scope,
    infer_function,
    module_classes,
    module_receivers,
    self_attribute_types,
)
from ..kb import KB
from .plan import Stmt, build_plan

# roots of imports that only converted code has (the runtime: installed, or vendored into the output)
_MINDSPORE_SIDE = frozenset({"mindspore", "torch2ms", "torch2ms_runtime"})


@dataclass
class ModuleFacts:
    """What the cheap ``ast`` pass knows about the file."""

    imap: ImportMap
    module_classes: dict[str, str]
    self_attrs: dict[str, dict[str, str]]
    scopes: dict[tuple[str, str], Scope]
    taken: set[str]
    # class name → self attribute → torch layer class (self.bn = nn.BatchNorm2d(...))
    layer_attrs: dict[str, dict[str, str]] = field(default_factory=dict)
    # class name → torch layer classes it subclasses directly
    torch_bases: dict[str, list[str]] = field(default_factory=dict)
    # statements in pre-order, flagged when they may need converting (see plan.py)
    plan: list[Stmt] = field(default_factory=list)
    # names bound through a torch star import
    star_names: frozenset[str] = frozenset()
    nested_torch_imports: bool = False  # a torch import inside a function or block
    # torch names imported here but never read here: other modules import them from this one
    reexports: set[str] = field(default_factory=set)
    # re-exported torch names the KB maps: local name → the MindSpore name imported in their place
    reexport_ms: dict[str, str] = field(default_factory=dict)
    # facts the constructs compute for themselves (construct.Facts → its value; absent: the file has none)
    construct_facts: dict[object, object] = field(default_factory=dict)
    tree: ast.Module | None = field(default=None, repr=False)
    source: str | None = field(default=None, repr=False)  # the text ``tree`` was parsed from
    # class name → self attribute → Module classes of this file it may hold (self.visual = ResNet(...))
    sub_modules: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    _module_receivers: dict | None = field(default=None, repr=False)
    # function name → its parameters that reach an optimizer's params (constructs/optimizer_params.py)
    optimizer_params: dict | None = field(default=None, repr=False)

    def module_receivers(self) -> dict[tuple[str, ...], set[str]]:
        """infer.module_receivers of the file, computed when first asked."""
        if self._module_receivers is None:
            self._module_receivers = module_receivers(self.tree) if self.tree is not None else {}
        return self._module_receivers

    @property
    def imports_mindspore(self) -> bool:
        """The file already imports MindSpore, or torch2ms's runtime, which is MindSpore's side (it was
        converted before, or mixes both)."""
        return any(full.split(".", 1)[0] in _MINDSPORE_SIDE for full in self.imap.names.values())

    def assume_module(self, cls: str, fn: str, name: str) -> None:
        """``name`` holds a Module inside ``cls.fn`` (a training loop calls it as the model); ``self.<attr>``
        holds one in the whole class ``cls`` (a Trainer's ``self.model``)."""
        attr = name.removeprefix("self.")
        if attr != name and cls and attr.isidentifier():
            self.self_attrs.setdefault(cls, {}).setdefault(attr, MODULE)
            return
        self.scopes.setdefault((cls, fn), Scope(dict(self.module_classes))).types.setdefault(name, MODULE)


class _Lazy(dict):
    """A dict whose values are computed on first access (``defer(key, thunk)``)."""

    def __init__(self) -> None:
        super().__init__()
        self._pending: dict = {}

    def defer(self, key, thunk) -> None:
        self._pending[key] = thunk
        dict.pop(self, key, None)  # a later definition of the same name wins, as with plain assignment

    def _force(self, key) -> None:
        thunk = self._pending.pop(key, None)
        if thunk is not None:
            dict.__setitem__(self, key, thunk())

    def get(self, key, default=None):
        self._force(key)
        return dict.get(self, key, default)

    def __getitem__(self, key):
        self._force(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        return key in self._pending or dict.__contains__(self, key)

    def setdefault(self, key, default=None):
        self._force(key)
        return dict.setdefault(self, key, default)


def module_facts(
    tree: ast.Module,
    kb: KB,
    local_roots: frozenset[str] = frozenset(),
    project_modules: frozenset[str] = frozenset(),
    imap: ImportMap | None = None,
    imported: frozenset[str] | None = None,
) -> ModuleFacts:
    """``imported``: the names other project modules import from this one (None: not known)."""
    imap = imap or ImportMap.from_tree(tree, local_roots)
    star_names = _bind_star_names(tree, imap, kb)
    mclasses = module_classes(tree, imap, project_modules)
    # Computed when the converter first asks: most functions of a file have nothing to convert.
    self_attrs: _Lazy = _Lazy()
    scopes: _Lazy = _Lazy()
    taken: set[str] = set()

    layer_attrs: _Lazy = _Lazy()
    sub_modules: _Lazy = _Lazy()
    torch_bases: dict[str, list[str]] = {}

    # Document order, iteratively (a recursive closure would be a reference cycle holding the tree).
    stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(n, None) for n in reversed(tree.body)]
    while stack:
        node, cls = stack.pop()
        if isinstance(node, ast.ClassDef):
            self_attrs.defer(node.name, lambda node=node: self_attribute_types(node, imap, kb, mclasses))
            layer_attrs.defer(node.name, lambda node=node: _self_layers(node, imap, kb))
            sub_modules.defer(node.name, lambda node=node: _self_submodules(node, mclasses))
            bases = [kb.get(imap.resolve(b) or "") for b in node.bases]
            torch_bases[node.name] = [b.torch for b in bases if b is not None and b.kind == "class"]
            stack.extend((child, node) for child in reversed(node.body))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_mod = cls is not None and cls.name in mclasses

            def scope(node=node, cls=cls, in_mod=in_mod) -> Scope:
                attrs = self_attrs.get(cls.name, {}) if cls else {}
                return infer_function(node, imap, attrs, kb, in_mod and node.name == "forward", mclasses, in_mod)

            scopes.defer((cls.name if cls else "", node.name), scope)
            stack.extend((child, cls) for child in reversed(node.body))
        else:
            inner = [
                child
                for field_name in ("body", "orelse", "finalbody", "handlers")
                if isinstance(sub := getattr(node, field_name, None), list)
                for child in sub
            ]
            stack.extend((child, cls) for child in reversed(inner))
    for node in nodes(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            taken.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            taken.add(node.name)
        elif isinstance(node, ast.arg):
            taken.add(node.arg)
    for local, full in imap.names.items():
        if not imap.is_framework(full):
            taken.add(local)
    plan = build_plan(tree, imap, kb)
    top = {id(n) for n in tree.body}
    nested = any(id(x.node) not in top and _imports_framework(x.node, imap) for x in plan)
    reexports, reexport_ms = _split_reexports(_reexports(tree, imap, imported), imap, kb)
    return ModuleFacts(
        imap,
        mclasses,
        self_attrs,
        scopes,
        taken,
        layer_attrs,
        torch_bases,
        plan,
        star_names,
        nested,
        reexports=reexports,
        reexport_ms=reexport_ms,
        tree=tree,
        sub_modules=sub_modules,
    )


def _imports_framework(node: ast.stmt, imap: ImportMap) -> bool:
    if isinstance(node, ast.Import):
        return any(imap.is_framework(a.name) for a in node.names)
    return isinstance(node, ast.ImportFrom) and not node.level and imap.is_framework(node.module)


def _bind_star_names(tree: ast.Module, imap: ImportMap, kb: KB) -> frozenset[str]:
    """``from torch.nn import *``: free names the KB knows in a star-imported torch module are bound to it."""
    stars = [m for m in imap.stars if imap.is_framework(m)]
    if not stars:
        return frozenset()
    stored = {n.id for n in nodes(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {n.name for n in nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    bound: set[str] = set()
    for n in nodes(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in imap.names and n.id not in stored:
            for m in stars:
                if kb.get(f"{m}.{n.id}") is not None:
                    imap._bind(n.id, f"{m}.{n.id}", n.lineno)
                    bound.add(n.id)
                    break
    return frozenset(bound)


def _self_layers(cls: ast.ClassDef, imap: ImportMap, kb: KB) -> dict[str, str]:
    """``self.bn = nn.BatchNorm2d(...)`` → {"bn": "torch.nn.BatchNorm2d"}; layers named inside a
    ModuleDict too: ``self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(...)))`` →
    {"transformer.wte": "torch.nn.Embedding"}."""
    out: dict[str, str] = {}
    lists: dict[int, dict[str, ast.expr]] = {}  # per method: its local lists
    for fn in ast.walk(cls):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local = _local_lists(fn)
            lists.update({id(n): local for n in ast.walk(fn) if isinstance(n, ast.Assign)})
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out.update(_named_layers(t.attr, node.value, imap, kb, lists.get(id(node), {})))
    return out


def _local_lists(fn: ast.AST) -> dict[str, ast.expr]:
    """Names bound once in a method to a list/tuple display or comprehension
    (``embs = [nn.Embedding(1, d) for _ in range(4)]`` before ``self.embs = nn.ModuleList(embs)``)."""
    seen: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            seen.setdefault(node.targets[0].id, []).append(node.value)
    kinds = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)
    return {name: values[0] for name, values in seen.items() if len(values) == 1 and isinstance(values[0], kinds)}


def _elements(node: ast.expr, lists: Mapping[str, ast.expr]) -> tuple[list[ast.expr], ast.expr | None]:
    """A ModuleList/Sequential argument's elements by position, or the one element of a comprehension:
    through ``list(...)`` / ``tuple(...)`` and a local name bound to a list."""
    for _ in range(4):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple"):
            if len(node.args) != 1:
                return [], None
            node = node.args[0]
        elif isinstance(node, ast.Name) and node.id in lists:
            node = lists[node.id]
        else:
            break
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts), None
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return [], node.elt
    return [], None


def _self_submodules(cls: ast.ClassDef, module_classes: Mapping[str, str]) -> dict[str, list[str]]:
    """``self.visual = ModifiedResNet(...)`` (else ``VisionTransformer(...)``) → {"visual": [both]}:
    so ``self.visual.attnpool.c_proj`` can be followed to the layer it names."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(cls):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (isinstance(func, ast.Name) and func.id in module_classes):
            continue
        for t in node.targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                held = out.setdefault(t.attr, [])
                if func.id not in held:
                    held.append(func.id)
    return out


def _named_layers(
    path: str, call: ast.Call, imap: ImportMap, kb: KB, lists: Mapping[str, ast.expr] | None = None
) -> dict[str, str]:
    """The torch layer class a call builds, under ``path``, and those of a ModuleDict's named values
    and of a ModuleList's / Sequential's elements (``path.0``; ``path.*`` for every element of a
    comprehension): ``self.point_embeddings[0].weight`` then reads an Embedding's table."""
    lists = lists or {}
    entry = kb.get(imap.resolve(call.func) or "")
    if entry is None or entry.kind != "class":
        return {}
    out = {path: entry.torch}
    if entry.torch == "torch.nn.ModuleDict" and call.args:
        for key, value in _dict_items(call.args[0]):
            if isinstance(value, ast.Call):
                out.update(_named_layers(f"{path}.{key}", value, imap, kb, lists))
    elif entry.torch in ("torch.nn.ModuleList", "torch.nn.Sequential") and call.args:
        args = call.args
        if entry.torch == "torch.nn.ModuleList" or (len(args) == 1 and not isinstance(args[0], ast.Call)):
            elements, each = _elements(args[0], lists)
        else:
            elements, each = list(args), None
        for i, value in enumerate(elements):
            if isinstance(value, ast.Call):
                out.update(_named_layers(f"{path}.{i}", value, imap, kb, lists))
        kinds = {out.get(f"{path}.{i}") for i in range(len(elements))}
        if len(kinds) == 1 and None not in kinds:  # every element alike: a negative index reads one of them too
            out[f"{path}.*"] = kinds.pop()  # type: ignore[assignment]
        if isinstance(each, ast.Call):
            out.update(_named_layers(f"{path}.*", each, imap, kb, lists))
    return out


def _dict_items(node: ast.expr) -> list[tuple[str, ast.expr]]:
    """``dict(a=..., b=...)`` / ``{'a': ..., 'b': ...}`` → [(key, value)] for the string keys."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(k.arg, k.value) for k in node.keywords if k.arg]
    if isinstance(node, ast.Dict):
        return [
            (k.value, v)
            for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
    return []


# `from torch import nn` binds a namespace, never something another module re-imports from here.
_TORCH_SUBMODULES = frozenset(
    f"torch.{m}"
    for m in (
        "nn autograd optim utils cuda distributed jit fx linalg fft special hub onnx amp backends "
        "multiprocessing sparse distributions testing profiler quantization ao accelerator"
    ).split()
) | frozenset({"torch.nn.functional", "torch.nn.init", "torch.utils.data", "torch.optim.lr_scheduler"})


def _reexports(tree: ast.Module, imap: ImportMap, imported: frozenset[str] | None = None) -> set[str]:
    """Torch names a file imports but never reads itself (``from torch.hub import
    load_state_dict_from_url`` in a utils module) that other modules import from here.
    ``imported``: the names other project modules import from this one (project conversion): only
    those are re-exports, any other unread import is a leftover. Not known (one file converted alone):
    every unread one, unless the file is a script (a top-level ``if __name__ == "__main__":`` block),
    which is run, not imported from."""
    if imported is None and any(_is_main_guard(node) for node in tree.body):
        return set()
    candidates = {
        a.asname or a.name
        for node in nodes(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and imap.is_framework(node.module)
        for a in node.names
        if a.name != "*" and f"{node.module}.{a.name}" not in _TORCH_SUBMODULES
    }
    if imported is not None:  # a chain: ``from .a import X`` in a package's ``__init__`` others import X from
        candidates |= {
            a.asname or a.name
            for node in nodes(tree)
            if isinstance(node, ast.ImportFrom) and (node.level or not imap.is_framework(node.module))
            for a in node.names
            if imap.is_framework(full := imap.names.get(a.asname or a.name)) and full not in _TORCH_SUBMODULES
        }
    if imported is not None and "*" not in imported:
        candidates &= imported
    if not candidates:
        return set()
    read = {n.id for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    read |= {n.value.id for n in nodes(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    return candidates - read


def _split_reexports(names: set[str], imap: ImportMap, kb: KB) -> tuple[set[str], dict[str, str]]:
    """Re-exported torch names → (those kept as torch's, {local name: the MindSpore name the KB maps
    it to}): an importer reading one unconverted gets the MindSpore object instead of needing torch."""
    kept: set[str] = set()
    mapped: dict[str, str] = {}
    for local in names:
        full = imap.names.get(local, "")
        entry = kb.get(full) if full else None
        if entry is not None and entry.status != "no-equivalent" and entry.ms.startswith("mindspore."):
            mapped[local] = entry.ms
        else:
            kept.add(local)
    return kept, mapped


def _is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1):
        return False
    sides = [node.test.left, node.test.comparators[0]]
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    texts = [s.value for s in sides if isinstance(s, ast.Constant)]
    return isinstance(node.test.ops[0], ast.Eq) and names == ["__name__"] and texts == ["__main__"]
