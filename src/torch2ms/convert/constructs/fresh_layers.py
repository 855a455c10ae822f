"""A torch layer with parameters built where it is used (issue 22, class 10): graykode's BERT writes
``nn.Linear(n_heads * d_v, d_model)(context)`` and ``nn.LayerNorm(d_model)(output + residual)`` in forward.

torch builds that layer at every call, draws its weights afresh from its global stream and never trains
them (no optimizer holds them). Converted to a Cell built in ``construct``, MindSpore's compiled step fails
("its name 'weight' already exists") and an eager one draws other weights (MindSpore's initialisers). So a
Linear / Conv1d / Conv2d / Embedding / LayerNorm that is called at once (``nn.Linear(a, b)(x)``) or bound
to a local of a function other than ``__init__`` that is only ever called (``fc = nn.Linear(a, b)`` …
``fc(x)``) becomes the runtime's ``fresh_linear(a, b)`` (runtime/fresh_layers.py): torch's arguments, the
weights drawn as torch draws them with ``ops.rand`` / ``ops.randn`` (the stream compare-train aligns),
returned as a function of the input, which GRAPH_MODE compiles. Arguments the runtime does not take
(``padding_mode='reflect'``, ``max_norm=``) leave the call to the KB.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes
from ...analysis.imports import ImportMap
from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext, _functions
from ..hooks import torch_call

CONSTRUCT = Construct("layers built where they are used", order=66)

# torch layer → the runtime function that builds it where it is used
FRESH = {
    "torch.nn.Linear": "fresh_linear",
    "torch.nn.Conv1d": "fresh_conv1d",
    "torch.nn.Conv2d": "fresh_conv2d",
    "torch.nn.Embedding": "fresh_embedding",
    "torch.nn.LayerNorm": "fresh_layer_norm",
}
# keyword arguments the runtime functions take only at torch's default value (source text)
_DEFAULT_ONLY = {
    "padding_mode": ("'zeros'", '"zeros"'),
    "max_norm": ("None",),
    "scale_grad_by_freq": ("False",),
    "sparse": ("False",),
    "_weight": ("None",),
}


def _only_called(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``name`` is assigned once in ``fn`` and every other use of it is ``name(...)``."""
    stores = loads = calls = 0
    for n in nodes(fn):
        if isinstance(n, ast.Name) and n.id == name:
            if isinstance(n.ctx, ast.Store):
                stores += 1
            else:
                loads += 1
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name:
            calls += 1
        elif isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            return False
    return stores == 1 and loads == calls > 0


def _fresh_local(ctx: RewriteContext, full: str) -> bool:
    """The statement is ``name = nn.X(...)`` in a function other than ``__init__`` that only calls ``name``."""
    info = ctx.statement
    node = info.node if info is not None else None
    if not (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and ctx.imap.resolve(node.value.func) == full
    ):
        return False
    fn = ctx.func_stack[-1] if ctx.func_stack else ""
    tree = ctx.facts.tree
    if not fn or fn == "__init__" or tree is None:
        return False
    found = _functions(tree).get((ctx.class_stack[-1] if ctx.class_stack else "", fn), [])
    return len(found) == 1 and _only_called(found[0], node.targets[0].id)


def _supported(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is not None and arg.keyword.value in _DEFAULT_ONLY:
            value = cst.Module([]).code_for_node(arg.value).strip()
            if value not in _DEFAULT_ONLY[arg.keyword.value]:
                return False
    return True


@torch_call()
def layer_built_where_used(ctx: RewriteContext, full: str, original: cst.Call, updated: cst.Call):
    """``nn.Linear(a, b)(x)`` → ``fresh_linear(a, b)(x)``; None leaves the call to the KB."""
    entry = ctx.kb.get(full)
    name = FRESH.get(entry.torch if entry is not None else full)
    if name is None or not _supported(updated):
        return None
    if not (ctx.is_call_func(original) or _fresh_local(ctx, full)):
        return None
    ctx.record(
        entry.torch if entry is not None else full,
        "converted",
        _("a layer built where it is used (torch re-initialises it at each call, never trains it): {name}").format(
            name=name
        ),
    )
    return updated.with_changes(func=ctx.parse_ms(f"torch2ms.runtime.{name}"))


def _supported_ast(call: ast.Call) -> bool:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    for k in call.keywords:
        if k.arg is None or (k.arg in _DEFAULT_ONLY and ast.unparse(k.value) not in _DEFAULT_ONLY[k.arg]):
            return False
    return True


def fresh_calls(place: ast.AST, imap: ImportMap) -> set[int]:
    """Ids of the layer constructions in ``place`` (a def, or a statement) that become a runtime ``fresh_*``
    call: called at once, or, in a def other than ``__init__``, bound to a local that is only called."""
    found: set[int] = set()
    for n in nodes(place):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Call):
            inner = n.func
            if imap.resolve(inner.func) in FRESH and _supported_ast(inner):
                found.add(id(inner))
    if isinstance(place, (ast.FunctionDef, ast.AsyncFunctionDef)) and place.name != "__init__":
        for n in nodes(place):
            if (
                isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name)
                and isinstance(n.value, ast.Call)
                and imap.resolve(n.value.func) in FRESH
                and _supported_ast(n.value)
                and _only_called(place, n.targets[0].id)
            ):
                found.add(id(n.value))
    return found
