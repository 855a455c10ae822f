"""Which statements the converter must look inside, and on which line each change sits.

A libcst transformer pays Python dispatch for every node it visits, which costs as much as parsing.
Most statements of a torch project contain nothing to convert (``x = self.conv1(x)``, ``return x``),
so the cheap ``ast`` pass marks the statements that mention a torch name or a KB method/attribute
name, and the rewrite stage skips the others whole. The libcst statements are matched to these
``ast`` statements once, by document order (index.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..analysis.astwalk import walk
from ..analysis.buffers import buffer_assignment, registered_buffers
from ..analysis.forward_state import forward_caches, has_recasts, recast_attributes, self_attr
from ..analysis.imports import ImportMap
from ..analysis.infer import TENSOR_ONLY_METHODS
from ..analysis.loop_locals import loop_locals
from ..kb import KB

_BODY_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")
_METHOD_OWNERS = (
    "torch.Tensor.",
    "torch.nn.Module.",
    "torch.optim.Optimizer.",
    "torch.optim.lr_scheduler.LRScheduler.",
)


@dataclass(slots=True)
class Stmt:
    node: ast.stmt
    interesting: bool
    size: int  # number of statements nested inside (skipped together with this one)
    # the statement's own expressions (not its nested bodies) mention something
    header: bool = False


_ATTR_CACHE: dict[int, tuple[KB, frozenset[str]]] = {}


def attribute_names(kb: KB) -> frozenset[str]:
    """Attribute names the converter may rewrite: methods, tensor attributes, layer parameters."""
    hit = _ATTR_CACHE.get(id(kb))
    if hit is not None and hit[0] is kb:
        return hit[1]
    names = {"forward"} | set(TENSOR_ONLY_METHODS)
    for e in kb:
        for full in (e.torch, *e.aliases):
            for owner in _METHOD_OWNERS:
                if full.startswith(owner):
                    names.add(full[len(owner) :].split(".", 1)[0])
        if e.kind == "class":
            names.update(e.params)
            names.update(e.attrs)
    _ATTR_CACHE[id(kb)] = (kb, frozenset(names))
    return _ATTR_CACHE[id(kb)][1]


def self_attribute_names(kb: KB) -> frozenset[str]:
    """The subset that matters right after ``self.``: Module methods (``self.modules()``) and layer
    parameters/attributes (a subclass of a torch layer reading ``self.weight``). ``self.relu(x)``
    calls a submodule, never the Tensor method of that name."""
    key = ("self", id(kb))
    hit = _ATTR_CACHE.get(key)  # type: ignore[call-overload]
    if hit is not None and hit[0] is kb:
        return hit[1]
    names = {"forward"}
    for e in kb:
        for full in (e.torch, *e.aliases):
            if full.startswith("torch.nn.Module."):
                names.add(full[len("torch.nn.Module.") :].split(".", 1)[0])
        if e.kind == "class":
            names.update(e.params)
            names.update(e.attrs)
    _ATTR_CACHE[key] = (kb, frozenset(names))  # type: ignore[index]
    return _ATTR_CACHE[key][1]  # type: ignore[index]


def _children(stmt: ast.stmt) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for name in _BODY_FIELDS:
        for item in getattr(stmt, name, None) or ():
            if isinstance(item, ast.stmt):
                out.append(item)
            else:  # ExceptHandler / match_case hold statements of their own
                out.extend(item.body)
    return out


def header_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions of a statement outside its nested bodies (all of it for a simple statement)."""
    out: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in _BODY_FIELDS and name != "handlers" and name != "cases":
            continue
        if name == "handlers":
            out += [h.type for h in value if h.type is not None]
        elif name == "cases":
            out += [n for c in value for n in (c.pattern, c.guard) if n is not None]
        elif isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, ast.AST)]
    return out


def build_plan(tree: ast.Module, imap: ImportMap, kb: KB) -> list[Stmt]:
    """Statements in pre-order, each flagged when something inside may need converting."""
    torch_names = {local for local, full in imap.names.items() if imap.is_framework(full)}
    # Code the training/checkpoint pre-pass wrote (its names are shortened by the main pass).
    torch_names |= {"mindspore", "torch2ms"} - set(imap.names)
    builder = _PlanBuilder(frozenset(torch_names), attribute_names(kb), self_attribute_names(kb))
    builder.recasts = has_recasts(tree)
    for stmt in tree.body:
        builder.add(stmt)
    return builder.plan


class _PlanBuilder:
    """Appends statements in pre-order (a class, not a recursive closure: no reference cycle)."""

    def __init__(self, torch_names: frozenset[str], attrs: frozenset[str], self_attrs: frozenset[str]) -> None:
        self.torch_names, self.attrs, self.self_attrs = torch_names, attrs, self_attrs
        self.plan: list[Stmt] = []
        # In a class: method → attributes the GRAPH_MODE construct makes locals (forward caches,
        # in-place re-casts); in a method: its own, the method node (directly in a class) and
        # whether it is forward.
        self.class_locals: dict[str, frozenset[str]] | None = None
        self.caches: frozenset[str] = frozenset()
        self.method: ast.FunctionDef | None = None
        self.loops: dict[ast.stmt, list[str]] = {}  # the method's loops that need names predefined
        self.in_forward = False
        self.recasts = True  # the file re-casts a self attribute somewhere (forward_state.has_recasts)
        self.buffers: dict[str, ast.expr | None] = {}  # the class's registered buffers

    def graph_rewrite(self, stmt: ast.stmt) -> bool:
        """Statements the GRAPH_MODE constructs rewrite or mark (constructs/graph_mode.py, loop_locals.py)."""
        if self.in_forward and isinstance(stmt, (ast.Delete, ast.Try)):
            return True
        if stmt in self.loops:
            return True
        if not self.in_forward and self.buffers and buffer_assignment(stmt, self.buffers) is not None:
            return True  # a registered buffer reassigned (module_attributes.py writes register_buffer again)
        return bool(self.caches) and any(self_attr(n) in self.caches for h in header_nodes(stmt) for n in walk(h))

    def enter(self, stmt: ast.stmt) -> None:
        """The class/method context of ``stmt``'s body."""
        if isinstance(stmt, ast.ClassDef):
            recast = recast_attributes(stmt) if self.recasts else {}
            cached = {"forward": forward_caches(stmt)}
            names = set(recast) | set(cached)
            self.class_locals = {m: frozenset(cached.get(m, [])) | frozenset(recast.get(m, [])) for m in names}
            self.caches, self.method, self.loops, self.in_forward = frozenset(), None, {}, False
            self.buffers = registered_buffers(stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            direct = self.class_locals is not None and self.method is None
            self.caches = (self.class_locals or {}).get(stmt.name, frozenset()) if direct else frozenset()
            self.method = stmt if direct and isinstance(stmt, ast.FunctionDef) else None
            self.loops = loop_locals(self.method) if self.method is not None else {}
            self.in_forward = stmt.name == "forward"
            self.class_locals = None if not direct else self.class_locals

    def mentions(self, nodes: list[ast.AST]) -> bool:
        for root in nodes:
            for n in walk(root):
                if isinstance(n, ast.Name):
                    if n.id in self.torch_names:
                        return True
                elif isinstance(n, ast.Attribute):
                    if n.attr in self.attrs and (n.attr in self.self_attrs or not _is_self(n.value)):
                        return True
        return False

    def add(self, stmt: ast.stmt) -> bool:
        at = len(self.plan)
        info = Stmt(stmt, False, 0)
        self.plan.append(info)
        inner = False
        saved = self.class_locals, self.caches, self.method, self.loops, self.in_forward, self.buffers
        self.enter(stmt)
        for child in _children(stmt):
            inner |= self.add(child)
        self.class_locals, self.caches, self.method, self.loops, self.in_forward, self.buffers = saved
        info.size = len(self.plan) - at - 1
        head = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "forward"
        # Imports are settled separately; a nested torch import must still be seen.
        head = head or isinstance(stmt, (ast.Import, ast.ImportFrom)) or self.mentions(header_nodes(stmt))
        head = head or self.graph_rewrite(stmt)
        info.header = head
        info.interesting = inner or head
        return info.interesting


def change_keys(stmt: ast.stmt, imap: ImportMap, kb: KB) -> dict[str, list[int]]:
    """Lines of the things a change can be about, in the converter's (post-)order, by key:
    a torch name (canonical) or a bare attribute name (methods, layer parameters)."""
    keys = _ChangeKeys(imap, kb)
    for n in header_nodes(stmt):
        keys.visit(n)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        for d in stmt.decorator_list:
            keys.put("@", d.lineno)
    return keys.out


class _ChangeKeys:
    def __init__(self, imap: ImportMap, kb: KB) -> None:
        self.imap, self.kb = imap, kb
        self.out: dict[str, list[int]] = {}

    def put(self, key: str, line: int) -> None:
        self.out.setdefault(key, []).append(line)

    def chain(self, node: ast.AST) -> str | None:
        full = self.imap.resolve(node)
        return full if full and self.imap.is_framework(full) else None

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Attribute, ast.Name)):
            full = self.chain(node)
            if full is not None:
                entry = self.kb.get(full)
                self.put(entry.torch if entry is not None else full, node.lineno)
                return
            if isinstance(node, ast.Attribute):
                self.visit(node.value)
                self.put(node.attr, node.lineno)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.chain(node.func) is None:
            # A method call is converted after its arguments (libcst leave order).
            self.visit(node.func.value)
            for a in (*node.args, *node.keywords):
                self.visit(a)
            self.put(node.func.attr, node.func.lineno)
            return
        for child in ast.iter_child_nodes(node):
            self.visit(child)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
