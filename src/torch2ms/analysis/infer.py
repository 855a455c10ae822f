"""Light type inference: which local names hold a torch Tensor, Module or Optimizer.

Cheap and local (one function at a time, no whole-program metadata): forward arguments,
values produced by torch calls or by calling layers, ``self.<layer>`` attributes assigned in
``__init__``, annotations. When it cannot tell, callers decide by how unambiguous a method name is.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..kb.results import NOT_TENSOR_METHODS, returns_tensor
from .astwalk import dotted, nodes, walk
from .imports import ImportMap

TENSOR, MODULE, OPTIMIZER = "torch.Tensor", "torch.nn.Module", "torch.optim.Optimizer"
NDARRAY = "numpy.ndarray"  # x.numpy(), np.*(...): known not to be a torch Tensor
SCHEDULER = "torch.optim.lr_scheduler.LRScheduler"
MODULE_CLASS = "class:torch.nn.Module"  # a name bound to a Module subclass (not an instance)
MODULE_RETURNS_SELF = frozenset("to cuda cpu train eval float half double requires_grad_ apply".split())

# Methods that, on a receiver of unknown type, almost surely mean a torch Tensor.
TENSOR_ONLY_METHODS = frozenset(
    "view view_as permute unsqueeze squeeze contiguous detach cuda numpy item flatten transpose "
    "masked_fill masked_fill_ type_as expand expand_as new_zeros new_ones new_full new_empty new_tensor "
    "matmul bmm mm softmax log_softmax sigmoid relu argmax argmin clamp clamp_ zero_ fill_ add_ mul_ "
    "sub_ div_ copy_ normal_ uniform_ bernoulli_ exp_ narrow chunk topk rsqrt repeat_interleave "
    "masked_select index_select gather scatter scatter_ scatter_add unfold nelement numel dim "
    "float double half long int bool to_sparse is_contiguous tolist requires_grad_ backward "
    "cpu t norm std var sum mean clone "
    # in-place methods: a trailing underscore is torch's spelling (numpy, lists and dicts have none of them)
    "erfinv_ erf_ abs_ neg_ sqrt_ rsqrt_ pow_ log_ exp_ sigmoid_ tanh_ relu_ floor_ ceil_ round_ trunc_ "
    "clamp_min_ clamp_max_ addcmul_ addcdiv_ lerp_ masked_scatter_ index_fill_ index_add_ index_copy_ "
    "random_ cauchy_ log_normal_ exponential_ geometric_ tril_ triu_ squeeze_ unsqueeze_ sign_ reciprocal_ "
    "fmod_ remainder_ div_ addmm_ baddbmm_ scatter_add_ cumsum_ nan_to_num_ sin_ cos_".split()
)
# Names that are Tensor methods in torch but also common on builtins (str, list, dict).
# nn.Module methods no Tensor has and other libraries rarely use: an untyped receiver (a function
# parameter ``model``) calling them is most likely a Module. ``train``/``state_dict``/``zero_grad`` are
# left out: trainers and optimizers have them too.
MODULE_ONLY_METHODS = frozenset(
    "eval parameters named_parameters named_modules named_children children modules buffers named_buffers "
    "flatten_parameters".split()
)


def module_receivers(tree: ast.Module) -> dict[tuple[str, ...], set[str]]:
    """Receivers that a MODULE_ONLY method is called on (``self.model.parameters()``, ``models['G'].eval()``),
    by where that evidence holds: a ``self.<attr>`` chain for its whole class (key ``(class,)``), any other
    name or chain for its function (key ``(class, function)``). ``self.model.train()`` in the same trainer
    class is then a Module's ``train``, not some other object's."""
    out: dict[tuple[str, ...], set[str]] = {}
    todo: list[tuple[ast.AST, str, str]] = [(tree, "", "")]
    while todo:
        node, cls, fn = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                todo.append((child, child.name, ""))
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append((child, cls, child.name))
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in MODULE_ONLY_METHODS
            ):
                text = receiver_text(child.func.value)
                if text:
                    out.setdefault((cls,) if text.startswith("self.") else (cls, fn), set()).add(text)
            todo.append((child, cls, fn))
    return out


def receiver_text(node: ast.AST) -> str | None:
    """``a.b.c``, or an element of one by a constant key (``models['G']``, ``nets[0]``, ``self.nets[-1]``),
    in ``ast.unparse``'s spelling; else None."""
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub):
            key = key.operand
        inner = receiver_text(node.value)
        return f"{inner}[{ast.unparse(node.slice)}]" if inner and isinstance(key, ast.Constant) else None
    return dotted(node)


AMBIGUOUS_METHODS = frozenset(
    "to size split copy index count sort max min abs pow exp log sqrt round floor ceil reshape "
    "eq ne lt gt le ge all any flip repeat type append pop update get items keys values join "
    "format replace strip".split()
)


@dataclass
class Scope:
    """Types of names in one function (or the module body)."""

    types: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        return self.types.get(name)


def _call_result_type(
    call: ast.Call, imap: ImportMap, scope: Scope, self_attrs: dict[str, str], kb, memo: dict | None = None
) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("numpy", "asnumpy"):
        return NDARRAY
    full = imap.resolve(func)
    if full and full.split(".", 1)[0] == "numpy":
        return NDARRAY
    if full and full.startswith("mindspore.ops."):
        return TENSOR  # already converted code (converting an output again must change nothing)
    if full and imap.is_framework(full):
        entry = kb.get(full)
        if full.startswith("torch.optim.") and full.count(".") == 2:
            return OPTIMIZER
        if full.startswith("torch.optim.lr_scheduler.") and full.count(".") == 3 and full[-1:] != "_":
            return SCHEDULER
        if not returns_tensor(full):
            return None  # torch.load(...).values() is a dict's, torch.cuda.is_available() a bool
        if entry is not None:
            if entry.kind == "class" and full.startswith("torch.nn."):
                return MODULE
            return TENSOR if entry.kind == "function" else None  # torch.zeros, nn.Parameter, F.relu
        if full.startswith("torch.nn.") and full.split(".")[2][:1].isupper() and "functional" not in full:
            return MODULE
        return TENSOR if full.startswith("torch.") else None
    # self.conv(x) where self.conv is a layer → a Tensor; layer(x) for a local module → a Tensor.
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        if self_attrs.get(func.attr) == MODULE:
            return TENSOR
    if isinstance(func, ast.Name) and scope.get(func.id) == MODULE:
        return TENSOR
    if isinstance(func, ast.Name) and scope.get(func.id) == MODULE_CLASS:
        return MODULE  # an instance of the project's own nn.Module subclass
    # Methods on a tensor mostly return tensors.
    if isinstance(func, ast.Attribute):
        recv = expr_type(func.value, imap, scope, self_attrs, kb, memo)
        if recv == MODULE and func.attr in MODULE_RETURNS_SELF:
            return MODULE
        if recv == TENSOR and func.attr not in NOT_TENSOR_METHODS:
            return TENSOR
    return None


def expr_type(
    node: ast.AST, imap: ImportMap, scope: Scope, self_attrs: dict[str, str], kb, memo: dict | None = None
) -> str | None:
    """The type of an expression. ``memo``: the types found before, by ``id`` of the node (the caller
    keeps the nodes alive and the scope fixed), so that typing each link of a method chain
    ``x.a().b()...`` in turn stays linear in the chain's length."""
    if memo is None:
        return _expr_type(node, imap, scope, self_attrs, kb, None)
    key = id(node)
    if key not in memo:
        memo[key] = _expr_type(node, imap, scope, self_attrs, kb, memo)
    return memo[key]


def _expr_type(
    node: ast.AST, imap: ImportMap, scope: Scope, self_attrs: dict[str, str], kb, memo: dict | None
) -> str | None:
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return self_attrs.get(node.attr)
    if isinstance(node, ast.Call):
        return _call_result_type(node, imap, scope, self_attrs, kb, memo)
    if isinstance(node, ast.BinOp):
        left = expr_type(node.left, imap, scope, self_attrs, kb, memo)
        right = expr_type(node.right, imap, scope, self_attrs, kb, memo)
        return TENSOR if TENSOR in (left, right) else None
    if isinstance(node, ast.Subscript):
        return TENSOR if expr_type(node.value, imap, scope, self_attrs, kb, memo) == TENSOR else None
    return None


def _annotation_type(ann: ast.AST | None, imap: ImportMap) -> str | None:
    if ann is None:
        return None
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # "torch.Tensor"
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):  # Tensor | None
        return _annotation_type(ann.left, imap) or _annotation_type(ann.right, imap)
    if isinstance(ann, ast.Subscript) and (imap.resolve(ann.value) or "").endswith("Optional"):
        return _annotation_type(ann.slice, imap)
    if isinstance(ann, ast.Subscript):
        return None  # dict[str, Tensor], list[Tensor]: a container of tensors, not a Tensor
    full = imap.resolve(ann)
    if full in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
        return TENSOR
    if full == "torch.nn.Module":
        return MODULE
    return None


def infer_function(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    imap: ImportMap,
    self_attrs: dict[str, str],
    kb,
    is_forward: bool,
    module_classes: dict[str, str] | None = None,
    in_module_class: bool = False,
) -> Scope:
    """Types of the names in one function body (a single forward pass in source order)."""
    scope = Scope(dict(module_classes or {}))
    if in_module_class:
        scope.types["self"] = MODULE
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    for a in args:
        t = _annotation_type(a.annotation, imap)
        if t:
            scope.types[a.arg] = t
        elif is_forward and a.arg != "self" and a.annotation is None:  # forward(self, x: dict[...]): not a Tensor
            scope.types[a.arg] = TENSOR
    # Source order (ast.walk is breadth-first): the last assignment of a name decides its type.
    stmts = [n for n in walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.For))]
    for node in sorted(stmts, key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(node, ast.Assign):
            t = expr_type(node.value, imap, scope, self_attrs, kb)
            for target in node.targets:
                for name in _target_names(target):
                    if t:
                        scope.types[name] = t
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            t = _annotation_type(node.annotation, imap) or (
                expr_type(node.value, imap, scope, self_attrs, kb) if node.value else None
            )
            if t:
                scope.types[node.target.id] = t
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Tuple):
            # for x, y in loader: batches are tensors when the iterable is a DataLoader.
            it = imap.resolve(node.iter.func) if isinstance(node.iter, ast.Call) else None
            if it == "torch.utils.data.DataLoader":
                for name in _target_names(node.target):
                    scope.types[name] = TENSOR
    return scope


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        out = []
        for elt in target.elts:
            out.extend(_target_names(elt))
        return out
    return []


def module_classes(tree: ast.AST, imap: ImportMap, project_modules: frozenset[str] = frozenset()) -> dict[str, str]:
    """Names of nn.Module subclasses usable in this file: its own classes (also through local base
    classes) and the project's Module classes it imports (``project_modules``, by class name)."""
    found: set[str] = {
        local
        for local, full in imap.names.items()
        if not imap.is_framework(full) and full.rsplit(".", 1)[-1] in project_modules
    }
    classes = [n for n in nodes(tree) if isinstance(n, ast.ClassDef)]
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name not in found and is_module_class(cls, imap, found):
                found.add(cls.name)
                changed = True
    return {name: MODULE_CLASS for name in found}


def self_attribute_types(
    cls: ast.ClassDef, imap: ImportMap, kb, module_classes: dict[str, str] | None = None
) -> dict[str, str]:
    """``self.<name>`` types from assignments anywhere in the class (usually ``__init__``)."""
    out: dict[str, str] = {}
    empty = Scope(dict(module_classes or {}))
    for node in walk(cls):
        if isinstance(node, ast.Assign):
            t = expr_type(node.value, imap, empty, out, kb)
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    if t:
                        out[target.attr] = t
    return out


def is_module_class(cls: ast.ClassDef, imap: ImportMap, local_modules: set[str]) -> bool:
    for base in cls.bases:
        full = imap.resolve(base)
        if full and full.startswith("torch.nn.") and full != "torch.nn.functional":
            return True
        if isinstance(base, ast.Name) and base.id in local_modules:
            return True
        if isinstance(base, ast.Attribute) and base.attr in local_modules:
            return True  # misc.MLP
    return False


def project_module_classes(trees: list[ast.AST], local_roots: frozenset[str] = frozenset()) -> frozenset[str]:
    """Class names that subclass nn.Module anywhere in a project, following bases across files by name."""
    pairs: list[tuple[str, list[ast.expr], ImportMap]] = []
    for tree in trees:
        imap = ImportMap.from_tree(tree, local_roots)
        pairs += [(n.name, n.bases, imap) for n in nodes(tree) if isinstance(n, ast.ClassDef)]
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, bases, imap in pairs:
            if name in found:
                continue
            for base in bases:
                full = imap.resolve(base) or ""
                tail = (
                    full.rsplit(".", 1)[-1]
                    if full
                    else (
                        base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
                    )
                )
                if (full.startswith("torch.nn.") and imap.is_framework(full)) or tail in found:
                    found.add(name)
                    changed = True
                    break
    return frozenset(found)
