"""Names that are provably ``int`` where a call is made, so that a rule can write the simple form
(``nn.LayerNorm(n_embd)`` → ``nn.LayerNorm((n_embd,), ...)``) instead of a run-time ``isinstance`` test.

A name counts only when the source shows it: a parameter annotated ``int``, or a name assigned once from
an int literal or int arithmetic of such names (``hidden = 4 * width``), in the function or at module
level, and bound nowhere else (no loop target, augmented assignment, ``global``, second assignment); and
``config.n_embd`` where the parameter is annotated with a dataclass of this file that declares
``n_embd: int`` (and the function does not assign to it). Anything else keeps the run-time form.
"""

from __future__ import annotations

import ast
from collections import Counter

# int op int is an int for these (not /, not **: 2 ** -1 is a float)
_INT_OPS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.FloorDiv,
    ast.Mod,
    ast.LShift,
    ast.RShift,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
)
_INT_BUILTINS = ("int", "len")


def _stores(root: ast.AST) -> Counter[str]:
    """How often each name is bound anywhere under ``root`` (a ``global``/``nonlocal`` counts as unknown)."""
    seen: Counter[str] = Counter()
    for node in ast.walk(root):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            seen[node.id] += 1
        elif isinstance(node, ast.arg):
            seen[node.arg] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            seen[node.name] += 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            seen.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            seen.update({name: 2 for name in node.names})
        elif isinstance(node, ast.ExceptHandler) and node.name:
            seen[node.name] += 1
    return seen


def _is_int(node: ast.expr, known: set[str], shadowed: Counter[str]) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in known
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        return _is_int(node.operand, known, shadowed)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _INT_OPS):
        return _is_int(node.left, known, shadowed) and _is_int(node.right, known, shadowed)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _INT_BUILTINS:
        return not shadowed[node.func.id] and len(node.args) == 1 and not node.keywords
    return False


def _assigned_once(body: list[ast.stmt], stores: Counter[str], known: set[str], shadowed: Counter[str]) -> set[str]:
    """``known`` grown by the names of ``body`` (top-level statements) bound once to an int expression."""
    known = set(known)
    for stmt in body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if value is None or not isinstance(target, ast.Name):
            continue
        if stores[target.id] == 1 and _is_int(value, known, shadowed):
            known.add(target.id)
    return known


def module_int_names(tree: ast.Module) -> frozenset[str]:
    """Module-level names provably int everywhere in the file."""
    stores = _stores(tree)
    return frozenset(_assigned_once(tree.body, stores, set(), stores))


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (isinstance(target, ast.Name) and target.id == "dataclass") or (
            isinstance(target, ast.Attribute) and target.attr == "dataclass"
        ):
            return True
    return False


def dataclass_int_fields(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Module-level dataclasses → their fields declared ``int`` (``n_embd: int = 64``)."""
    out = {}
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and _is_dataclass(cls):
            out[cls.name] = frozenset(
                stmt.target.id
                for stmt in cls.body
                if isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(stmt.annotation, ast.Name)
                and stmt.annotation.id == "int"
            )
    return out


def _assigned_attributes(fn: ast.AST) -> set[str]:
    return {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
    }


def function_int_names(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    module_ints: frozenset[str],
    int_fields: dict[str, frozenset[str]] | None = None,
) -> frozenset[str]:
    """Names provably int inside ``fn``: module ints it does not rebind, ``int``-annotated parameters
    it never rebinds, ``param.field`` for a parameter annotated with a dataclass whose field is declared
    ``int`` (``int_fields``), and its own names assigned once (at the top level of its body) from int expressions."""
    stores = _stores(fn)
    known = {name for name in module_ints if not stores[name]}
    assigned = _assigned_attributes(fn)
    for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
        annotation = a.annotation
        if not isinstance(annotation, ast.Name) or stores[a.arg] != 1:
            continue
        if annotation.id == "int":
            known.add(a.arg)
        fields = (int_fields or {}).get(annotation.id, frozenset())
        known |= {f"{a.arg}.{field}" for field in fields} - assigned
    return frozenset(_assigned_once(fn.body, stores, known, stores))
