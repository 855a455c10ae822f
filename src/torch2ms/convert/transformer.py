"""The source-to-source converter for one module: libcst, driven by the KB.

Canonicalise, then match: every torch reference is resolved to its full name through the file's
imports (``analysis.imports``) before the KB is consulted. Types of method receivers come from the
same light inference ``scan`` uses. Comments and formatting survive because unchanged nodes
(and unchanged call arguments) are reused as they are.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

import libcst as cst

from ..analysis.astwalk import nodes
from ..analysis.imports import ImportMap
from ..analysis.infer import (
    MODULE,
    MODULE_ONLY_METHODS,
    OPTIMIZER,
    SCHEDULER,
    TENSOR,
    TENSOR_ONLY_METHODS,
    Scope,
    expr_type,
    infer_function,
    module_classes,
    module_receivers,
    self_attribute_types,
)
from ..kb import KB, Entry
from ..kb.rewrite import CallRewrite, rewrite_call
from . import autograd_function, data_pipeline, handlers
from .cstutil import FastDispatch, code, dotted
from .cstutil import resolve as resolve_cst
from .names import MindSporeNames
from .plan import PlanMismatch, Stmt, build_plan

MARK = "# torch2ms:"


@functools.lru_cache(maxsize=8192)
def _parse_expression(source: str) -> cst.BaseExpression:
    """Parsed once per distinct text: libcst nodes are immutable, so one node may sit in many places."""
    return cst.parse_expression(source)


@dataclass
class Change:
    api: str
    action: str  # converted | review | not-converted
    note: str = ""
    line: int = 0
    stmt: ast.stmt | None = field(default=None, repr=False, compare=False)  # where it was found


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
    training_generated: bool = False  # the training/checkpoint pre-pass wrote mindspore.* code
    tree: ast.Module | None = field(default=None, repr=False)
    _module_receivers: dict | None = field(default=None, repr=False)

    def module_receivers(self) -> dict[tuple[str, ...], set[str]]:
        """infer.module_receivers of the file, computed when first asked."""
        if self._module_receivers is None:
            self._module_receivers = module_receivers(self.tree) if self.tree is not None else {}
        return self._module_receivers


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
) -> ModuleFacts:
    imap = imap or ImportMap.from_tree(tree, local_roots)
    star_names = _bind_star_names(tree, imap, kb)
    mclasses = module_classes(tree, imap, project_modules)
    # Computed when the converter first asks: most functions of a file have nothing to convert.
    self_attrs: _Lazy = _Lazy()
    scopes: _Lazy = _Lazy()
    taken: set[str] = set()

    layer_attrs: _Lazy = _Lazy()
    torch_bases: dict[str, list[str]] = {}

    # Document order, iteratively (a recursive closure would be a reference cycle holding the tree).
    stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(n, None) for n in reversed(tree.body)]
    while stack:
        node, cls = stack.pop()
        if isinstance(node, ast.ClassDef):
            self_attrs.defer(node.name, lambda node=node: self_attribute_types(node, imap, kb, mclasses))
            layer_attrs.defer(node.name, lambda node=node: _self_layers(node, imap, kb))
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
    return ModuleFacts(
        imap, mclasses, self_attrs, scopes, taken, layer_attrs, torch_bases, plan, star_names, nested, tree=tree
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
    """``self.bn = nn.BatchNorm2d(...)`` → {"bn": "torch.nn.BatchNorm2d"}."""
    out: dict[str, str] = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            entry = kb.get(imap.resolve(node.value.func) or "")
            if entry is None or entry.kind != "class":
                continue
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out[t.attr] = entry.torch
    return out


def _to_ast(node: cst.BaseExpression) -> ast.expr | None:
    """The shape of an expression as ``ast``, as far as type inference looks at it (no re-parsing).

    Names, attribute chains, calls (callee only), subscripts and binary operations; anything else
    has no inferable type and gives None.
    """
    if isinstance(node, cst.Name):
        return ast.Name(node.value, ast.Load())
    if isinstance(node, cst.Attribute):
        value = _to_ast(node.value)
        return None if value is None else ast.Attribute(value, node.attr.value, ast.Load())
    if isinstance(node, cst.Call):
        func = _to_ast(node.func)
        return None if func is None else ast.Call(func, [], [])
    if isinstance(node, cst.Subscript):
        value = _to_ast(node.value)
        return None if value is None else ast.Subscript(value, ast.Constant(0), ast.Load())
    if isinstance(node, cst.BinaryOperation):
        left, right = _to_ast(node.left), _to_ast(node.right)
        if left is None and right is None:
            return None
        return ast.BinOp(left or ast.Constant(0), ast.Add(), right or ast.Constant(0))
    return None


_SIMPLE = (cst.SimpleStatementLine, cst.SimpleStatementSuite)
_COMPOUND = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
    cst.Match: (ast.Match,),
}
if hasattr(ast, "TryStar"):
    _COMPOUND[cst.TryStar] = (ast.TryStar,)
_COMPOUND_AST = tuple(t for ts in _COMPOUND.values() for t in ts)


# Nodes that hold only punctuation, whitespace and comments: nothing inside them is ever rewritten,
# so their children (mostly whitespace nodes, half of all nodes) are not visited.
_OPAQUE = frozenset(
    {
        cst.Comma,
        cst.Dot,
        cst.AssignEqual,
        cst.Colon,
        cst.Semicolon,
        cst.LeftParen,
        cst.RightParen,
        cst.LeftSquareBracket,
        cst.RightSquareBracket,
        cst.LeftCurlyBrace,
        cst.RightCurlyBrace,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.ParenthesizedWhitespace,
        cst.SimpleWhitespace,
        cst.Newline,
        cst.Comment,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.ImportStar,
        *(
            c
            for c in vars(cst).values()
            if isinstance(c, type)
            and issubclass(c, (cst.BaseBinaryOp, cst.BaseCompOp, cst.BaseBooleanOp, cst.BaseUnaryOp, cst.BaseAugOp))
            and not c.__name__.startswith("Base")
        ),
    }
)
# Parts of a def/class header, skipped when the header mentions nothing to convert.
_HEADER_PARTS = frozenset({cst.Parameters, cst.Decorator, cst.Annotation, cst.Arg})


class TorchToMindSpore(FastDispatch, cst.CSTTransformer):
    def __init__(self, kb: KB, facts: ModuleFacts, use_plan: bool = True) -> None:
        super().__init__()
        self.use_plan = use_plan and bool(facts.plan)
        self._pi = 0  # next plan entry
        self._header_quiet = False
        self.stmt_stack: list[ast.stmt | None] = []
        self.kb = kb
        self.facts = facts
        self.imap = facts.imap
        self.names = MindSporeNames(facts.taken)
        self.changes: list[Change] = []
        self.markers: list[list[str]] = []
        self.class_stack: list[str] = []
        self.func_stack: list[str] = []
        self.still_needed: set[str] = set()  # local import names unconverted code still uses
        self.narrowed: list[dict[str, list[str]]] = []  # isinstance(m, nn.BatchNorm2d) guards
        self._call_funcs: set[cst.CSTNode] = set()
        self._type_nodes: set[cst.CSTNode] = set()
        self._type_depth = 0
        self._in_bases = False
        self._attr_depth = 0
        self._class_has_bases: list[bool] = []
        self.data = getattr(facts, "data", None)  # data-pipeline facts (data_pipeline.scan)

    # ---- statement plan: skip statements with nothing to convert, know each change's line -------

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        if kind in _OPAQUE:
            return False
        if kind is cst.Name:  # its only children are parentheses: not rebuilding it saves a node copy
            super().on_visit(node)
            return False
        if kind in _SIMPLE or kind in _COMPOUND:
            go = self._enter_statement(node, kind)
            return super().on_visit(node) and go
        if kind in _HEADER_PARTS and self._header_quiet:
            super().on_visit(node)  # keeps visit_/leave_ hooks paired (leave_ always runs)
            return False
        return super().on_visit(node)

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):
        kind = type(original)
        if kind in _OPAQUE:
            return updated  # no hooks for punctuation and whitespace
        result = super().on_leave(original, updated)
        if kind in _SIMPLE or kind in _COMPOUND:
            self.stmt_stack.pop()
        return result

    def _enter_statement(self, node: cst.CSTNode, kind: type) -> bool:
        if not self.use_plan:
            self.stmt_stack.append(None)
            return True
        plan, i = self.facts.plan, self._pi
        if kind in _SIMPLE:
            k = len(node.body)  # type: ignore[attr-defined]
            infos = plan[i : i + k]
            if len(infos) != k or any(isinstance(x.node, _COMPOUND_AST) for x in infos):
                raise PlanMismatch(f"statement {i}")
            self._pi = i + k
            self._header_quiet = False
            self.stmt_stack.append(infos[0].node)
            return any(x.interesting for x in infos)
        if i >= len(plan) or not isinstance(plan[i].node, _COMPOUND[kind]):
            raise PlanMismatch(f"statement {i}")
        info = plan[i]
        self.stmt_stack.append(info.node)
        # A def/class header with nothing to convert: its parameters, decorators, bases are skipped
        # (statements of the body set it back when entered).
        self._header_quiet = kind in (cst.FunctionDef, cst.ClassDef) and not info.header
        if info.interesting:
            self._pi = i + 1
            return True
        self._pi = i + 1 + info.size  # the nested statements are skipped with it
        return False

    # ---- context -------------------------------------------------------------------------

    @property
    def in_module_class(self) -> bool:
        return bool(self.class_stack) and self.class_stack[-1] in self.facts.module_classes

    def scope(self) -> Scope:
        cls = self.class_stack[-1] if self.class_stack else ""
        fn = self.func_stack[-1] if self.func_stack else ""
        return self.facts.scopes.get((cls, fn)) or Scope(dict(self.facts.module_classes))

    def self_attrs(self) -> dict[str, str]:
        return self.facts.self_attrs.get(self.class_stack[-1], {}) if self.class_stack else {}

    def receiver_type(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name):
            return self.scope().get(node.value)
        tree = _to_ast(node)
        if tree is None:
            return None
        return expr_type(tree, self.imap, self.scope(), self.self_attrs(), self.kb)

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return resolve_cst(self.imap, node)

    def _stmt(self) -> ast.stmt | None:
        return self.stmt_stack[-1] if self.stmt_stack else None

    def mark(self, api: str, note: str, root: str | None = None) -> None:
        self.changes.append(Change(api, "not-converted", note, stmt=self._stmt()))
        if self.markers:
            self.markers[-1].append(f"{MARK} not converted — {api}: {note}")
        if root:
            self.still_needed.add(root)

    def record(self, api: str, action: str = "converted", note: str = "") -> None:
        self.changes.append(Change(api, action, note, stmt=self._stmt()))
        if action == "review" and self.markers:
            self.markers[-1].append(f"{MARK} review — {api}: {note}")

    def parse_ms(self, source: str) -> cst.BaseExpression:
        return _parse_expression(self.names.shorten(source))

    # ---- statements carry the markers of what is inside them ------------------------------

    def _push(self, node) -> bool:
        self.markers.append([])
        return True

    def _pop(self, original, updated):
        notes = self.markers.pop()
        if not notes:
            return updated
        existing = {line.comment.value for line in updated.leading_lines if line.comment}
        new = [cst.EmptyLine(comment=cst.Comment(n)) for n in dict.fromkeys(notes) if n not in existing]
        if not new:
            return updated
        return updated.with_changes(leading_lines=[*updated.leading_lines, *new])

    visit_SimpleStatementLine = _push
    visit_If = visit_For = visit_While = visit_With = visit_Try = _push

    def leave_SimpleStatementLine(self, original, updated):
        updated = self._pop(original, updated)
        return handlers.after_statement(self, original, updated)

    leave_If = leave_While = leave_Try = _pop

    def leave_For(self, original, updated):
        updated = self._pop(original, updated)
        return data_pipeline.leave_for(self, original, updated) if self.data else updated

    def leave_With(self, original, updated):
        updated = self._pop(original, updated)
        return handlers.unwrap_grad_context(self, original, updated)

    # ---- isinstance narrowing: inside `if isinstance(m, nn.BatchNorm2d):`, m is a BatchNorm ----

    def visit_If_body(self, node: cst.If) -> None:
        self.narrowed.append(self._isinstance_classes(node.test))

    def leave_If_body(self, node: cst.If) -> None:
        self.narrowed.pop()

    def _isinstance_classes(self, test: cst.BaseExpression) -> dict[str, list[str]]:
        if not (
            isinstance(test, cst.Call)
            and isinstance(test.func, cst.Name)
            and test.func.value == "isinstance"
            and len(test.args) == 2
            and isinstance(test.args[0].value, cst.Name)
        ):
            return {}
        cls = test.args[1].value
        elts = [e.value for e in cls.elements] if isinstance(cls, (cst.Tuple, cst.List)) else [cls]
        names = []
        for e in elts:
            entry = self.kb.get(self.resolve(e) or "")
            if entry is not None and entry.kind == "class":
                names.append(entry.torch)
        return {test.args[0].value.value: names} if names else {}

    def layer_classes(self, receiver: cst.BaseExpression) -> list[str]:
        """The torch layer class(es) a receiver is known to hold (isinstance guard or self.<layer>)."""
        if isinstance(receiver, cst.Name):
            for frame in reversed(self.narrowed):
                if receiver.value in frame:
                    return frame[receiver.value]
        if isinstance(receiver, cst.Name) and receiver.value == "self" and self.class_stack:
            # self inside `class LayerNorm2d(nn.LayerNorm)`: the torch base's names apply.
            return self.facts.torch_bases.get(self.class_stack[-1], [])
        if (
            isinstance(receiver, cst.Attribute)
            and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self"
            and self.class_stack
        ):
            cls = self.facts.layer_attrs.get(self.class_stack[-1], {}).get(receiver.attr.value)
            return [cls] if cls else []
        return []

    def leave_IndentedBlock(self, original, updated):
        # A block whose statements all became no-ops still needs one statement.
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated

    # ---- classes and functions -------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.markers.append([])
        self.class_stack.append(node.name.value)
        self._class_has_bases.append(bool(node.bases))
        return True

    def leave_ClassDef(self, original, updated):
        self.class_stack.pop()
        self._class_has_bases.pop()
        if autograd_function.FUNCTION in self.facts.torch_bases.get(original.name.value, ()):
            updated = autograd_function.convert_class(self, original, updated)  # R12: → Cell with bprop
        if self.data and original.name.value in self.data.torch_datasets:
            updated = data_pipeline.drop_dataset_base(self, original, updated)  # R14: a plain source class
        return self._pop(original, updated)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.markers.append([])
        self.func_stack.append(node.name.value)
        return True

    def leave_FunctionDef(self, original, updated):
        self.func_stack.pop()
        updated = handlers.drop_decorators(self, updated)
        if self.in_module_class and original.name.value == "forward":
            updated = updated.with_changes(name=cst.Name("construct"))
            self.record("torch.nn.Module.forward")
        return self._pop(original, updated)

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        # Decorators dropped whole (torch.jit.*, no_grad) are not references to convert.
        return self.resolve(handlers.callee(node.decorator)) not in handlers.drop_decorator_names(self)

    # ---- imports ------------------------------------------------------------------------------

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    # ---- references and calls ----------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # A resolved torch chain is handled whole in leave_Attribute / leave_Call.
        return self.resolve(node) is None and not self._generated_ms(node)

    def visit_Attribute_attr(self, node: cst.Attribute) -> None:
        self._attr_depth += 1  # ``ms.nn.Dense``: the ``nn`` after a dot is no reference to torch.nn

    def leave_Attribute_attr(self, node: cst.Attribute) -> None:
        self._attr_depth -= 1

    def _generated_ms(self, node: cst.Attribute) -> bool:
        """``mindspore.x.y`` or ``torch2ms.runtime.f`` written by the training/checkpoint pre-pass."""
        if not self.facts.training_generated or not isinstance(node.value, (cst.Name, cst.Attribute)):
            return False
        root = (dotted(node) or "").split(".", 1)[0]
        return root in ("mindspore", "torch2ms") and root not in self.imap.names

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if self._generated_ms(original):
            return self.parse_ms(dotted(original))
        full = self.resolve(original)
        if full is None:
            if self.data and original.attr.value in ("classes", "class_to_idx"):
                special = data_pipeline.attribute(self, original, updated)  # ImageFolder.classes
                if special is not None:
                    return special
            if original.attr.value == "apply" and original not in self._call_funcs:
                special = autograd_function.apply_reference(self, original)
                if special is not None:
                    return special
            return self._method_attribute(original, updated)
        return self._reference(full, original, updated)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        full = self.imap.names.get(original.value)
        if full and self.imap.is_framework(full) and "." in full and not self._attr_depth:
            return self._reference(full, original, updated)
        return updated

    def _reference(self, full: str, original, updated) -> cst.BaseExpression:
        """A torch name used as a value: a class (base class, isinstance), a dtype, a function."""
        if self._is_call_func(original):
            return updated  # the call handler converts (or marks) the whole call
        entry = self.kb.get(full)
        root = dotted(original).split(".", 1)[0] if dotted(original) else None
        if entry is None:
            self.mark(full, "not in the torch2ms knowledge base; port by hand", root)
            return updated
        if entry.status == "no-equivalent" or not entry.ms.startswith("mindspore."):
            self.mark(entry.torch, entry.note or "no MindSpore equivalent", root)
            return updated
        in_type_position = self._type_depth > 0 or original in self._type_nodes
        if self._in_bases and self.data and entry.torch in data_pipeline.DATASET_BASES:
            return updated  # dropped with the class's bases (data_pipeline.drop_dataset_base)
        if self._in_bases and entry.ms_base:
            self.record(entry.torch, "converted", f"subclassed: base is {entry.ms_base}")
            return self.parse_ms(entry.ms_base)
        if not in_type_position and entry.kind in ("class", "function") and (entry.args or entry.template or entry.sig):
            # Passed around as a value (conv_layer=nn.Conv2d, partial(nn.LayerNorm, eps=1e-6)): the
            # calls made through it are only known at run time, so the KB rules run then.
            self.record(
                entry.torch,
                "review",
                "used as a value: torch2ms.runtime.TorchCompat applies its argument rules at run time",
            )
            return self.parse_ms(f'torch2ms.runtime.TorchCompat("{entry.torch}")')
        self.record(entry.torch)
        return self.parse_ms(entry.ms)

    # Base classes, annotations and isinstance/issubclass arguments name the class itself.
    def visit_ClassDef_bases(self, node) -> None:
        self._type_depth += 1
        self._in_bases = True

    def leave_ClassDef_bases(self, node) -> None:
        self._type_depth -= 1
        self._in_bases = False

    def visit_Annotation(self, node) -> bool:
        self._type_depth += 1
        return True

    def leave_Annotation(self, original, updated):
        self._type_depth -= 1
        return updated

    def _is_call_func(self, node) -> bool:
        return node in self._call_funcs

    def visit_Call(self, node: cst.Call) -> bool:
        # Remember callee nodes so references know they are being called.
        self._call_funcs.add(node.func)
        if isinstance(node.func, cst.Name) and node.func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            cls = node.args[1].value
            self._type_nodes.add(cls)
            if isinstance(cls, (cst.Tuple, cst.List)):
                self._type_nodes.update(e.value for e in cls.elements)
        return True

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        self._call_funcs.discard(original.func)
        full = self.resolve(original.func)
        if full is not None:
            return self._torch_call(full, original, updated)
        if isinstance(original.func, cst.Attribute):
            if original.func.attr.value == "apply":  # MyFunction.apply(x) → MyFunction()(x)
                special = autograd_function.apply_call(self, original, updated)
                if special is not None:
                    return special
            return self._method_call(original, updated)
        if self.data and isinstance(original.func, cst.Name):
            return data_pipeline.builtin_call(self, original, updated)  # len(loader)
        return updated

    def _split_args(self, call: cst.Call) -> tuple[list[str], list[tuple[str, str]]] | None:
        args, kwargs = [], []
        for a in call.args:
            if a.star:
                return None
            if a.keyword is not None:
                kwargs.append((a.keyword.value, code(a.value).strip()))
            else:
                args.append(code(a.value).strip())
        return args, kwargs

    def _apply(
        self, entry: Entry, original: cst.Call, updated: cst.Call, receiver: str | None, api: str
    ) -> cst.BaseExpression:
        split = self._split_args(updated)
        if split is None:
            if not entry.sig and not entry.args and not entry.template and entry.status == "direct":
                res = rewrite_call(entry, [], [], receiver)
                self.record(api)
                return updated.with_changes(func=self.parse_ms(res.func or ""))
            if receiver is None and entry.kind in ("class", "function"):
                # *args/**kwargs: the arguments are only known at run time.
                self.record(
                    api, "review", "*args/**kwargs: torch2ms.runtime.TorchCompat applies the argument rules at run time"
                )
                return updated.with_changes(func=self.parse_ms(f'torch2ms.runtime.TorchCompat("{entry.torch}")'))
            self.mark(api, "*args/**kwargs in the call: convert by hand", None)
            return updated
        try:
            res = rewrite_call(entry, *split, receiver=receiver)
        except Exception as exc:  # noqa: BLE001 - a bad rule must not cost the whole file
            self.mark(
                api,
                f"rule failed on this call ({type(exc).__name__}: {exc}); convert by hand",
                self._root_of(original.func),
            )
            return updated
        if not res.ok:
            self.mark(api, "; ".join(res.notes) or entry.note, self._root_of(original.func))
            return updated
        if res.notes:
            self.record(api, "review", "; ".join(res.notes))
        elif entry.status == "composite":
            self.record(api, "converted", entry.note)
        else:
            self.record(api)
        return self._build_call(res, updated)

    def _build_call(self, res: CallRewrite, updated: cst.Call) -> cst.BaseExpression:
        if res.func is None or res.args is None:
            return self.parse_ms(res.source)
        # Reuse the original argument nodes whose source is unchanged (keeps comments/format):
        # positional by position first, keywords by name, then any unused argument of the same source.
        srcs = [code(a.value).strip() for a in updated.args]
        used: set[int] = set()

        def take(src: str, keyword: str | None, pos: int | None) -> cst.Arg | None:
            cands = [pos] if pos is not None else []
            cands += [
                i
                for i, a in enumerate(updated.args)
                if keyword and a.keyword is not None and a.keyword.value == keyword
            ]
            cands += range(len(updated.args))
            for i in cands:
                if i is not None and i < len(srcs) and i not in used and srcs[i] == src:
                    used.add(i)
                    return updated.args[i]
            return None

        eq = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
        new_args: list[cst.Arg] = []
        for i, src in enumerate(res.args):
            a = take(src, None, i)
            new_args.append(a if a is not None and a.keyword is None else cst.Arg(self.parse_ms(src)))
        for k, src in res.kwargs or []:
            a = take(src, k, None)
            if a is not None and a.keyword is not None and a.keyword.value == k:
                new_args.append(a)
            elif a is not None:
                new_args.append(a.with_changes(keyword=cst.Name(k), equal=eq, star=""))
            else:
                new_args.append(cst.Arg(self.parse_ms(src), keyword=cst.Name(k), equal=eq))
        new_args = _fix_commas(new_args, list(updated.args))
        return updated.with_changes(func=self.parse_ms(res.func), args=new_args)

    def _root_of(self, node) -> str | None:
        name = dotted(node)
        return name.split(".", 1)[0] if name else None

    def _torch_call(self, full: str, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        special = handlers.call_handler(self, full, original, updated)
        if special is None and self.data:
            special = data_pipeline.convert_call(self, full, original, updated)
        if special is not None:
            return special
        entry = self.kb.get(full)
        if entry is None:
            self.mark(full, "not in the torch2ms knowledge base; port by hand", self._root_of(original.func))
            return updated
        if entry.status == "no-equivalent":
            self.mark(entry.torch, entry.note or "no MindSpore equivalent", self._root_of(original.func))
            return updated
        return self._apply(entry, original, updated, None, entry.torch)

    # ---- methods on tensors, modules, optimizers ----------------------------------------------

    def _method_owner(self, receiver: cst.BaseExpression, attr: str) -> tuple[str | None, str]:
        rtype = self.receiver_type(receiver)
        if rtype in (TENSOR, MODULE, OPTIMIZER, SCHEDULER):
            return rtype, "certain"
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            if self.in_module_class:
                return MODULE, "certain"
            # A class whose base comes from elsewhere in the project is most likely a Module too.
            return (MODULE, "likely") if self._class_has_bases and self._class_has_bases[-1] else (None, "")
        root = receiver
        while isinstance(root, (cst.Attribute, cst.Call, cst.Subscript)):
            root = root.func if isinstance(root, cst.Call) else root.value
        if (
            isinstance(root, cst.Name)
            and root.value in self.imap.names
            and not self.imap.is_framework(self.imap.names[root.value])
        ):
            return None, ""  # a module such as mindspore's `ops` (converted code converted again)
        if rtype is None and attr in TENSOR_ONLY_METHODS:
            return TENSOR, "likely"
        if rtype is None and attr in MODULE_ONLY_METHODS:
            return MODULE, "likely"
        if rtype is None and self.kb.method(attr, MODULE) is not None and self._used_as_module(receiver):
            return MODULE, "likely"  # self.model.train() where self.model.parameters() is called too
        return None, ""

    def _used_as_module(self, receiver: cst.BaseExpression) -> bool:
        text = dotted(receiver)
        if not text:
            return False
        cls = self.class_stack[-1] if self.class_stack else ""
        key = (cls,) if text.startswith("self.") else (cls, self.func_stack[-1] if self.func_stack else "")
        return text in self.facts.module_receivers().get(key, ())

    def _method_call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = original.func
        assert isinstance(func, cst.Attribute)
        attr = func.attr.value
        owner, confidence = self._method_owner(func.value, attr)
        if owner is None and attr == "to" and _device_args(original):
            owner, confidence = TENSOR, "likely"  # .to("cuda") / .to(device): only torch objects move
        if owner is None and attr == "size" and len(original.args) <= 1:
            # numpy's, PIL's and pandas' ``size`` are attributes, never called: x.size(-1) is torch's.
            owner, confidence = TENSOR, "likely"
        if owner is None:
            return updated
        if owner == MODULE and attr == "forward":
            self.record("torch.nn.Module.forward")
            return updated.with_changes(func=updated.func.with_changes(attr=cst.Name("construct")))
        entry = self.kb.method(attr, owner)
        if entry is None:
            return updated
        receiver = code(updated.func.value).strip()
        if entry.status == "no-equivalent":
            self.mark(entry.torch, entry.note or "no MindSpore equivalent")
            return updated
        result = self._apply(entry, original, updated, receiver, entry.torch)
        if confidence == "likely" and result is not updated:
            self.changes[-1].note = (
                self.changes[-1].note + "; " if self.changes[-1].note else ""
            ) + f"receiver assumed to be a {'Tensor' if owner == TENSOR else 'Module'}"
        return result

    def _layer_parameter(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression | None:
        """``bn.weight`` → ``bn.gamma`` when bn is known to be a BatchNorm (the KB's params renames)."""
        classes = self.layer_classes(original.value)
        attr = original.attr.value
        renames = set()
        for cls in classes:
            entry = self.kb.get(cls)
            if entry is None:
                continue
            if attr in entry.params:
                renames.add(entry.params[attr])
            elif attr in entry.attrs:
                renames.add(entry.attrs[attr])
        if not renames:
            return None
        api = f"{classes[0]}.{attr}"
        if len(renames) > 1:
            self.record(
                api, "review", f"'{attr}' is named {sorted(map(str, renames))} in MindSpore depending on the layer"
            )
            return updated
        new = renames.pop()
        if new is None:
            self.mark(api, f"MindSpore's layer has no '{attr}'")
            return updated
        if not new.isidentifier():
            self.record(api, "review", f"MindSpore keeps '{attr}' at '{new}'")
            return updated
        if new != attr:
            self.record(api, "converted", f"parameter renamed {attr} → {new}")
            return updated.with_changes(attr=cst.Name(new))
        return updated

    def _method_attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        """``x.T``, ``x.is_cuda``, ``x.device``: Tensor attributes of receivers known to be tensors."""
        if original in self._call_funcs:
            return updated
        if original.attr.value == "forward" and self._method_owner(original.value, "forward")[0] == MODULE:
            self.record("torch.nn.Module.forward")  # self.forward passed around: construct in MindSpore
            return updated.with_changes(attr=cst.Name("construct"))
        layer = self._layer_parameter(original, updated)
        if layer is not None:
            return layer
        if self.receiver_type(original.value) != TENSOR:
            return updated
        entry = self.kb.method(original.attr.value, TENSOR)
        if entry is None or entry.kind != "attribute":
            return updated
        if entry.status == "no-equivalent":
            self.mark(entry.torch, entry.note or "no MindSpore equivalent")
            return updated
        if entry.template:
            res = rewrite_call(entry, [], [], code(updated.value).strip())
            if res.ok:
                self.record(entry.torch)
                return self.parse_ms(res.source)
            return updated
        ms_attr = entry.ms.rsplit(".", 1)[-1]
        if ms_attr != original.attr.value:
            self.record(entry.torch)
            return updated.with_changes(attr=cst.Name(ms_attr))
        return updated


_DEVICE_STRINGS = ("'cuda", '"cuda', "'cpu", '"cpu', "'mps", '"mps', "'xla", '"xla')


def _device_args(call: cst.Call) -> bool:
    """Is this ``.to(...)`` call clearly a device move (a device string, ``device``, ``torch.device(...)``)?"""
    if len(call.args) != 1 or call.args[0].star:
        return False
    a = call.args[0]
    if a.keyword is not None:
        return a.keyword.value == "device"
    v = a.value
    if isinstance(v, cst.SimpleString):
        return v.value.startswith(_DEVICE_STRINGS)
    if isinstance(v, cst.Name):
        return v.value in ("device", "dev")
    if isinstance(v, cst.Attribute):
        return v.attr.value == "device"
    return isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "device"


def _multiline(ws) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace)


def _fix_commas(args: list[cst.Arg], originals: list[cst.Arg]) -> list[cst.Arg]:
    """Every argument but the last needs a comma; the layout of a multi-line call carries over to
    the arguments the rewrite added (one per line, the original trailing comma kept at the end)."""
    last_orig = originals[-1] if originals else None
    sep: cst.Comma | None = None  # the separator between arguments of a one-per-line call
    if (
        len(originals) >= 2
        and isinstance(originals[-2].comma, cst.Comma)
        and _multiline(originals[-2].comma.whitespace_after)
    ):
        ws = originals[-2].comma.whitespace_after
        sep = originals[-2].comma.with_changes(whitespace_after=ws.with_changes(first_line=cst.TrailingWhitespace()))
    trailing = (
        last_orig is not None
        and isinstance(last_orig.comma, cst.Comma)
        and _multiline(last_orig.comma.whitespace_after)
    )
    default_sep = sep or cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    out = []
    for i, a in enumerate(args):
        if i == len(args) - 1:
            if a is last_orig:
                out.append(a)
            elif trailing:
                ws = last_orig.comma.whitespace_after  # type: ignore[union-attr]
                out.append(
                    a.with_changes(
                        comma=last_orig.comma.with_changes(  # type: ignore[union-attr]
                            whitespace_after=ws.with_changes(first_line=cst.TrailingWhitespace())
                        )
                    )
                )
            elif last_orig is not None and _multiline(last_orig.whitespace_after_arg):
                out.append(
                    a.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=last_orig.whitespace_after_arg)
                )
            else:
                out.append(a.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        elif a is last_orig and trailing and sep is not None:
            # No longer last: its comma (and comment) stays, the next line is indented like the others.
            ws = a.comma.whitespace_after  # type: ignore[union-attr]
            out.append(
                a.with_changes(
                    comma=a.comma.with_changes(  # type: ignore[union-attr]
                        whitespace_after=ws.with_changes(
                            indent=sep.whitespace_after.indent, last_line=sep.whitespace_after.last_line
                        )
                    )
                )
            )
        elif a is last_orig and _multiline(a.whitespace_after_arg):
            out.append(a.with_changes(comma=default_sep, whitespace_after_arg=cst.SimpleWhitespace("")))
        elif isinstance(a.comma, cst.MaybeSentinel):
            out.append(a.with_changes(comma=default_sep))
        else:
            out.append(a)
    return out
