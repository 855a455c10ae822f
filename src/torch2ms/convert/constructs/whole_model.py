"""Whole-model checkpoints: ``model = torch.load(f)`` where ``f`` holds a pickled ``nn.Module``.

A MindSpore checkpoint holds parameters only, so ``mindspore.load_checkpoint`` gives a dict, never
a Cell. When the name already holds a model the script built (``model = RNNModel(...)`` in the same
scope), the parameters are loaded into it and the name stays a Cell; when the name is used as a
model but only ever comes from the file, a person must build the class first (the checkpoints stage
marks it). Static: ``ast`` only.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ...analysis.astwalk import nodes
from ...analysis.imports import ImportMap
from ...analysis.infer import MODULE, MODULE_ONLY_METHODS, Scope, expr_type
from ...kb import KB

BUILT, USED = "built", "used"  # the name holds a model built here / is used as a model only
_MODEL_METHODS = MODULE_ONLY_METHODS | {"train", "load_state_dict", "state_dict", "zero_grad"}


def whole_model_loads(tree: ast.Module, imap: ImportMap, module_classes: Mapping[str, str], kb: KB) -> dict[int, str]:
    """``id`` of each ``NAME = torch.load(...)`` statement that loads a whole model → BUILT or USED."""
    found: dict[int, str] = {}
    if not any(_loads_into_name(n, imap) for n in nodes(tree)):
        return found  # most files: nothing to type
    top = _scope_facts(tree.body, imap, module_classes, kb)
    scopes: list[tuple[list[ast.stmt], set[str]]] = [(tree.body, set())]
    functions = [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    scopes += [(f.body, _globals(f)) for f in functions if any(_loads_into_name(n, imap) for n in _own_nodes(f.body))]
    for body, global_names in scopes:
        facts = top if body is tree.body else _scope_facts(body, imap, module_classes, kb)
        for stmt, name in facts["loads"]:
            built = facts["built"] | (top["built"] & global_names)
            used = facts["used"] | (top["used"] & global_names)
            if name in built:
                found[id(stmt)] = BUILT
            elif name in used:
                found[id(stmt)] = USED
    return found


def _scope_facts(body: list[ast.stmt], imap: ImportMap, module_classes: Mapping[str, str], kb: KB) -> dict:
    """The scope's torch.load assignments, names bound to a model built here, names used as a model."""
    scope = Scope(dict(module_classes))
    loads: list[tuple[ast.Assign, str]] = []
    built: set[str] = set()
    used: set[str] = set()
    for node in _own_nodes(body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if _loads_into_name(node, imap):
                loads.append((node, name))
            elif expr_type(node.value, imap, scope, {}, kb) == MODULE:
                built.add(name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _MODEL_METHODS and isinstance(node.func.value, ast.Name):
                used.add(node.func.value.id)
    return {"loads": loads, "built": built, "used": used}


def _loads_into_name(node: ast.AST, imap: ImportMap) -> bool:
    """``name = torch.load(...)``."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and imap.resolve(node.value.func) == "torch.load"
    )


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """Every node of a scope's statements, not those of the functions and classes it defines."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _globals(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {n for node in _own_nodes(fn.body) if isinstance(node, ast.Global) for n in node.names}
