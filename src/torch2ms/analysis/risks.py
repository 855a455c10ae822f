"""Static-graph risks (R3): forward code that MindSpore GRAPH_MODE rejects or runs differently.

Each finding says where, what and what to do, in the language torch2ms speaks.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..i18n import N_, _
from .imports import ImportMap
from .infer import TENSOR, Scope, expr_type


@dataclass(frozen=True, slots=True)
class Risk:
    code: str
    line: int
    col: int
    message: str
    fix: str
    function: str = ""


# code → (message, fix)
RISKS: dict[str, tuple[str, str]] = {
    "try-except": (
        N_("try/except in forward: GRAPH_MODE fails with \"Unsupported statement 'Try'\""),
        N_("move the error handling out of construct, or check the condition with an if"),
    ),
    "size-call": (
        N_("x.size(i): MindSpore's Tensor.size is an int (numel), so calling it fails"),
        N_("use x.shape[i] (torch2ms convert does this)"),
    ),
    "inplace-method": (
        N_("in-place Tensor method: MindSpore PyNative returns the result but does not mutate (GRAPH_MODE does)"),
        N_("assign the out-of-place result: x = x.add(y) (torch2ms convert does this)"),
    ),
    "host-sync": (
        N_(
            "tensor → Python value inside forward (.numpy()/.item()/.tolist()/.cpu()): breaks the graph or forces a sync"
        ),
        N_("keep the value a Tensor inside construct; convert after the forward"),
    ),
    "self-mutation": (
        N_(
            "assignment to a non-Parameter attribute in forward: GRAPH_MODE strict rejects it and lax mode keeps it outside the graph"
        ),
        N_("make it a Parameter(requires_grad=False) updated with ops.assign, or move the state out of construct"),
    ),
    "unsupported-syntax": (
        N_("syntax GRAPH_MODE does not compile"),
        N_("rewrite without it, or run this Cell in PyNative mode"),
    ),
    "del-local": (
        N_("del of a local in forward: GRAPH_MODE fails with \"Unsupported statement 'Delete'\""),
        N_("a graph needs no del: drop it (torch2ms convert does this)"),
    ),
    "map-lambda": (
        N_("map(lambda ...) in forward: GRAPH_MODE's Map cannot compile a lambda with free variables"),
        N_("use a list comprehension (torch2ms convert does this)"),
    ),
    "return-dict": (
        N_("forward returns a dict: GRAPH_MODE strict turns it into a tuple (keys lost)"),
        N_("return a tuple, or keep jit_syntax_level LAX"),
    ),
}


def _risk(code: str, node: ast.AST, function: str, detail: str = "") -> Risk:
    msg, fix = (_(text) for text in RISKS[code])
    if detail:
        msg = f"{msg} ({detail})"
    return Risk(code, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), msg, fix, function)


def _local_names(target: ast.expr) -> bool:
    """``x`` or ``x, y``: a ``del`` of locals only (torch2ms convert drops it)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_local_names(e) for e in target.elts)
    return isinstance(target, ast.Name)


def forward_risks(fn: ast.FunctionDef, imap: ImportMap, scope: Scope, self_attrs: dict[str, str], kb) -> list[Risk]:
    """Risks in one forward method of an nn.Module subclass."""
    out: list[Risk] = []
    name = fn.name
    for node in ast.walk(fn):
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            out.append(_risk("try-except", node, name))
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            out.append(_risk("unsupported-syntax", node, name, "yield"))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.append(_risk("unsupported-syntax", node, name, type(node).__name__.lower()))
        elif isinstance(node, ast.Delete):
            local = all(_local_names(t) for t in node.targets)
            out.append(_risk("del-local", node, name) if local else _risk("unsupported-syntax", node, name, "del"))
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncWith, ast.AsyncFor)):
            out.append(_risk("unsupported-syntax", node, name, "async"))
        elif isinstance(node, ast.Return) and isinstance(node.value, (ast.Dict, ast.DictComp)):
            out.append(_risk("return-dict", node, name))
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out.append(_risk("self-mutation", node, name, f"self.{t.attr}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "map":
            if len(node.args) >= 2 and isinstance(node.args[0], ast.Lambda):
                out.append(_risk("map-lambda", node, name))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            recv_type = expr_type(node.func.value, imap, scope, self_attrs, kb)
            is_tensor = recv_type == TENSOR
            if attr == "size" and node.args and (is_tensor or recv_type is None):
                out.append(_risk("size-call", node, name))
            elif attr in ("numpy", "item", "tolist", "cpu") and (is_tensor or attr in ("numpy", "item")):
                out.append(_risk("host-sync", node, name, f".{attr}()"))
            elif attr.endswith("_") and not attr.startswith("_") and (is_tensor or kb.method(attr) is not None):
                out.append(_risk("inplace-method", node, name, f".{attr}()"))
    return out
