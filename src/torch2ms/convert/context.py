"""``RewriteContext``: what the rewrite stage knows while it walks one file, and what it can do.

Three parts: the traversal state (traversal.py: class/function scopes, the current statement,
isinstance guards), which the main libcst pass (rewriter.py) keeps up to date; the change recorder
(recorder.py); and, here, what the file's facts answer where the traversal is (types, int names,
layer classes) with the per-file caches behind them (the constructs' own: ``caches``, construct.Cache).
The KB call rules (calls.py) and the construct hooks (constructs/) read it and record through it.
Construct modules only ever see this object, never the traversal.
"""

from __future__ import annotations

import ast
import functools
import re

import libcst as cst

from ..analysis.astwalk import nodes
from ..analysis.infer import Scope, expr_type, receiver_text
from ..analysis.int_names import dataclass_int_fields, function_int_names, module_int_names
from ..kb import KB
from .changes import Change
from .cstutil import code, dotted
from .cstutil import resolve as resolve_cst
from .facts import ModuleFacts
from .generated import GeneratedRefs
from .index import StatementIndex
from .names import MindSporeNames
from .recorder import ChangeRecorder
from .traversal import Traversal


@functools.lru_cache(maxsize=4)
def _module_facts(tree: ast.Module) -> tuple[frozenset[str], dict]:
    """The module-level int names and dataclass int fields, once per file (not once per function)."""
    return module_int_names(tree), dataclass_int_fields(tree)


@functools.lru_cache(maxsize=4)
def _functions(tree: ast.Module) -> dict[tuple[str, str], list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(class, function name) → the defs of that name, once per file."""
    out: dict[tuple[str, str], list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    stack: list[tuple[ast.AST, str]] = [(node, "") for node in tree.body]
    while stack:
        node, owner = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault((owner, node.name), []).append(node)
        inner = node.name if isinstance(node, ast.ClassDef) else owner
        stack.extend((child, inner) for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
    return out


def _int_names(tree: ast.Module | None, cls: str, fn: str) -> frozenset[str]:
    if tree is None:
        return frozenset()
    module_ints, fields = _module_facts(tree)
    if not fn:
        return module_ints
    found = _functions(tree).get((cls, fn), [])
    # two functions of that name (redefinitions, nested helpers): which one is being converted is not known
    if len(found) != 1:
        return frozenset()
    return function_int_names(found[0], module_ints, fields)


# The line breaks ast counts lines by (str.splitlines knows more, e.g. form feed).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

# Expressions whose code is their ``value`` when they have no parentheses.
_BARE_TOKENS = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString})


class RewriteContext(Traversal, ChangeRecorder):
    """The traversal state (traversal.py), the change recorder (recorder.py) and what the file's facts
    answer where the traversal is; the constructs' own per-file caches are ``caches`` (construct.Cache)."""

    def __init__(self, kb: KB, facts: ModuleFacts, index: StatementIndex, generated: GeneratedRefs) -> None:
        Traversal.__init__(self)
        ChangeRecorder.__init__(self)
        self.kb = kb
        self.facts = facts
        self.imap = facts.imap
        self.index = index
        self.generated = generated
        self.names = MindSporeNames(facts.taken)
        self.caches: dict[object, object] = {}  # the constructs' per-file caches (construct.Cache)
        self._int_names_at: dict[tuple[str, str], frozenset[str]] = {}
        self._sources: dict[int, tuple[cst.CSTNode, str]] = {}
        # _to_ast's shapes by id of the node (the node kept: its id stays its own), and the types found.
        self._asts: dict[int, tuple[cst.CSTNode, ast.expr | None]] = {}
        self._type_memos: dict[tuple[str, str], dict[int, str | None]] = {}
        self._roots: dict[int, tuple[cst.CSTNode, cst.BaseExpression]] = {}
        self._breaks: dict[int, tuple[cst.CSTNode, bool]] = {}
        self._text: tuple[list[str], set[int]] | None = None  # the facts' source lines, ids of its statements

    # ---- the statement being rewritten ---------------------------------------------------------

    def in_one_line_statement(self) -> bool:
        """No comment can sit inside the statement being rewritten: it spans one line of its code, or
        it stands in the file's text as parsed (not written by a stage), its lines hold no ``#`` and
        nothing follows it on its last line."""
        info = self.statement
        if info is None:
            return False
        node = info.node
        if node.end_lineno == node.lineno:
            return True
        return info.fixed_line is None and self._without_hash(node)

    def _without_hash(self, node: ast.stmt) -> bool:
        if self._text is None:
            source, tree = self.facts.source, self.facts.tree
            own = {id(n) for n in nodes(tree) if isinstance(n, ast.stmt)} if tree is not None else set()
            self._text = (_LINE_BREAK.split(source) if source is not None else [], own)
        lines, own = self._text
        end = node.end_lineno or node.lineno
        if id(node) not in own or end > len(lines) or node.end_col_offset is None:
            return False
        if any("#" in line for line in lines[node.lineno - 1 : end]):
            return False  # maybe a comment (or a # in a string): look inside
        return not lines[end - 1].encode()[node.end_col_offset :].strip()  # (another statement after a ;)

    def changes_in_scope(self) -> list[Change]:
        """The changes recorded since the innermost open class or def was entered."""
        return self.changes[self.scope_starts[-1] :] if self.scope_starts else self.changes

    # ---- names and code ------------------------------------------------------------------------

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """Full torch name of a Name/Attribute chain rooted at a torch import (not at code a stage wrote)."""
        if node in self.generated:
            return None
        return resolve_cst(self.imap, node)

    def parse_ms(self, source: str) -> cst.BaseExpression:
        """An expression written with full ``mindspore.``/``torch2ms.runtime.`` names, shortened."""
        return self.names.parse(source)

    def source_of(self, node: cst.CSTNode) -> str:
        """The stripped source text of a node, generated once per node (a method call's arguments are
        read by the Tensor rules, the KB rules and the argument reuse in turn)."""
        kind = type(node)
        if kind in _BARE_TOKENS and not node.lpar:  # type: ignore[attr-defined]
            return node.value.strip()  # type: ignore[attr-defined]  # ``x``, ``3``, ``"s"``: the text is the value
        hit = self._sources.get(id(node))
        if hit is None:
            hit = self._sources[id(node)] = (node, code(node).strip())  # the node kept: its id stays its own
        return hit[1]

    def split_args(self, call: cst.Call) -> tuple[list[str], list[tuple[str, str]]] | None:
        """Positional and keyword argument sources; None when the call has ``*args``/``**kwargs``."""
        args, kwargs = [], []
        for a in call.args:
            if a.star:
                return None
            if a.keyword is not None:
                kwargs.append((a.keyword.value, self.source_of(a.value)))
            else:
                args.append(self.source_of(a.value))
        return args, kwargs

    @staticmethod
    def root_of(node: cst.BaseExpression) -> str | None:
        name = dotted(node)
        return name.split(".", 1)[0] if name else None

    # ---- where we are --------------------------------------------------------------------------

    @property
    def in_module_class(self) -> bool:
        return bool(self.class_stack) and self.class_stack[-1] in self.facts.module_classes

    def scope(self) -> Scope:
        cls = self.class_stack[-1] if self.class_stack else ""
        fn = self.func_stack[-1] if self.func_stack else ""
        return self.facts.scopes.get((cls, fn)) or Scope(dict(self.facts.module_classes))

    def int_names(self) -> frozenset[str]:
        """Names provably int where the converter is (analysis/int_names.py); empty when unsure."""
        cls = self.class_stack[-1] if self.class_stack else ""
        fn = self.func_stack[-1] if self.func_stack else ""
        found = self._int_names_at.get((cls, fn))
        if found is None:
            found = self._int_names_at[(cls, fn)] = _int_names(self.facts.tree, cls, fn)
        return found

    def self_attrs(self) -> dict[str, str]:
        return self.facts.self_attrs.get(self.class_stack[-1], {}) if self.class_stack else {}

    def receiver_type(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name):
            return self.scope().get(node.value)
        tree = _to_ast(node, self._asts)
        if tree is None:
            return None
        # The scope is fixed per (class, function): the types of a chain's inner links are kept there.
        at = (self.class_stack[-1] if self.class_stack else "", self.func_stack[-1] if self.func_stack else "")
        memo = self._type_memos.setdefault(at, {})
        return expr_type(tree, self.imap, self.scope(), self.self_attrs(), self.kb, memo)

    def chain_root(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """What ``a.b(c)[0].d`` is rooted at (``a``): the roots found are kept by node, so that each
        link of a method chain in turn is not a walk down the whole chain."""
        walked: list[cst.BaseExpression] = []
        root = node
        while isinstance(root, (cst.Attribute, cst.Call, cst.Subscript)):
            hit = self._roots.get(id(root))
            if hit is not None:
                root = hit[1]
                break
            walked.append(root)
            root = root.func if isinstance(root, cst.Call) else root.value
        for n in walked:
            self._roots[id(n)] = (n, root)  # the node kept: its id stays its own
        return root

    def breaks_line(self, node: cst.BaseExpression) -> bool:
        """Does ``a\n.b()\n[0]`` break a line outside any bracket of its own (its text would not parse
        alone)? Kept by node, like chain_root: each link of a chain in turn looks at its own link only."""
        hit = self._breaks.get(id(node))
        if hit is not None:
            return hit[1]
        if getattr(node, "lpar", None):
            found = False
        elif isinstance(node, cst.Attribute):
            ws = (node.dot.whitespace_before, node.dot.whitespace_after) if isinstance(node.dot, cst.Dot) else ()
            found = any(isinstance(w, cst.ParenthesizedWhitespace) for w in ws) or self.breaks_line(node.value)
        elif isinstance(node, cst.Call):
            found = isinstance(node.whitespace_after_func, cst.ParenthesizedWhitespace) or self.breaks_line(node.func)
        elif isinstance(node, cst.Subscript):
            found = isinstance(node.whitespace_after_value, cst.ParenthesizedWhitespace) or self.breaks_line(node.value)
        else:
            found = False
        self._breaks[id(node)] = (node, found)  # the node kept: its id stays its own
        return found

    def isinstance_classes(self, test: cst.BaseExpression) -> dict[str, list[str]]:
        """``isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d))`` → {"m": [the torch layer classes]}."""
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
        path = dotted(receiver) if isinstance(receiver, cst.Attribute) else _element_path(receiver)
        if path and path.startswith("self.") and self.class_stack:
            # self.bn, self.transformer.wte inside a ModuleDict, self.visual.attnpool.c_proj
            return self._chain_layers(self.class_stack[-1], path[len("self.") :].split("."), 0)
        return []

    def _chain_layers(self, cls: str, parts: list[str], depth: int) -> list[str]:
        """The torch layer classes ``self.<parts>`` names inside ``cls``, through the file's Module
        classes its attributes hold (every candidate when an attribute may hold several)."""
        layers = self.facts.layer_attrs.get(cls, {})
        layer = layers.get(".".join(parts))
        if not layer and parts[-1].lstrip("-").isdigit():  # an element of a list built by a comprehension
            layer = layers.get(".".join([*parts[:-1], "*"]))
        if layer:
            return [layer]
        out: list[str] = []
        if len(parts) > 1 and depth < 16:  # 16: a class holding itself is no infinite walk
            for sub in self.facts.sub_modules.get(cls, {}).get(parts[0], []):
                out += [c for c in self._chain_layers(sub, parts[1:], depth + 1) if c not in out]
        return out

    def used_as_module(self, receiver: cst.BaseExpression) -> bool:
        """``self.model`` / ``model`` / ``models['G']`` is also called with Module-only methods in this
        class/function."""
        text = dotted(receiver) or _element_text(receiver)
        if not text:
            return False
        cls = self.class_stack[-1] if self.class_stack else ""
        key = (cls,) if text.startswith("self.") else (cls, self.func_stack[-1] if self.func_stack else "")
        return text in self.facts.module_receivers().get(key, ())


def _element_text(receiver: cst.BaseExpression) -> str | None:
    """``models["G"]`` / ``nets[0]`` as infer.receiver_text spells it (the evidence's key)."""
    if not isinstance(receiver, cst.Subscript):
        return None
    try:
        tree = ast.parse(code(receiver).strip(), mode="eval").body
    except SyntaxError:
        return None
    return receiver_text(tree)


def _element_path(receiver: cst.BaseExpression) -> str | None:
    """``self.embs[0]`` → ``self.embs.0``: an element of a ModuleList/Sequential by a constant index."""
    if not (isinstance(receiver, cst.Subscript) and isinstance(receiver.value, cst.Attribute)):
        return None
    if len(receiver.slice) != 1 or not isinstance(receiver.slice[0].slice, cst.Index):
        return None
    index = receiver.slice[0].slice.value
    negative = isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.Minus)
    number = index.expression if negative and isinstance(index, cst.UnaryOperation) else index
    if not isinstance(number, cst.Integer):
        return None
    path = dotted(receiver.value)
    return f"{path}.{'-' if negative else ''}{number.value}" if path else None


def _to_ast(node: cst.BaseExpression, cache: dict[int, tuple[cst.CSTNode, ast.expr | None]]) -> ast.expr | None:
    """The shape of an expression as ``ast``, as far as type inference looks at it (no re-parsing).

    Names, attribute chains, calls (callee only), subscripts and binary operations; anything else
    has no inferable type and gives None. ``cache``: the shapes made before, by id of the node (a
    chain's inner links are shared, not made again for each link).
    """
    hit = cache.get(id(node))
    if hit is None:
        hit = cache[id(node)] = (node, _shape(node, cache))
    return hit[1]


def _shape(node: cst.BaseExpression, cache: dict[int, tuple[cst.CSTNode, ast.expr | None]]) -> ast.expr | None:
    if isinstance(node, cst.Name):
        return ast.Name(node.value, ast.Load())
    if isinstance(node, cst.Attribute):
        value = _to_ast(node.value, cache)
        return None if value is None else ast.Attribute(value, node.attr.value, ast.Load())
    if isinstance(node, cst.Call):
        func = _to_ast(node.func, cache)
        return None if func is None else ast.Call(func, [], [])
    if isinstance(node, cst.Subscript):
        value = _to_ast(node.value, cache)
        return None if value is None else ast.Subscript(value, ast.Constant(0), ast.Load())
    if isinstance(node, cst.BinaryOperation):
        left, right = _to_ast(node.left, cache), _to_ast(node.right, cache)
        if left is None and right is None:
            return None
        return ast.BinOp(left or ast.Constant(0), ast.Add(), right or ast.Constant(0))
    return None
