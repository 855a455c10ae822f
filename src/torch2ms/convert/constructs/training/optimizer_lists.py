"""Several optimizers kept in a list and stepped in a loop (issue 22: ``two-optimizers-one-loss``):

    opts = [torch.optim.SGD(model.features.parameters(), lr=0.1), torch.optim.Adam(model.head.parameters())]
    for o in opts:
        o.zero_grad()
    loss.backward()
    for o in opts:          # or [o.step() for o in opts], or for o in (opt1, opt2): o.step()
        o.step()

The general step (flow.py) follows the gradients per optimizer; a loop over the optimizers is one event per
optimizer, each under the name the list gives it: an element bound elsewhere (``opt1``), or the list's
item (``opts[0]``) for an optimizer built inside the list. The list is a literal in the loop's header or the
one literal a name of the block's function (or the module) is bound to.
"""

from __future__ import annotations

import ast

_METHODS = ("step", "zero_grad")


def _loop_call(a: ast.stmt) -> tuple[str, str, ast.expr] | None:
    """(method, loop variable, what it iterates) for ``for o in X: o.step()`` and ``[o.step() for o in X]``."""
    if isinstance(a, ast.For) and not a.orelse and len(a.body) == 1 and isinstance(a.target, ast.Name):
        call, var, it = a.body[0].value if isinstance(a.body[0], ast.Expr) else None, a.target.id, a.iter
    elif isinstance(a, ast.Expr) and isinstance(a.value, (ast.ListComp, ast.GeneratorExp)):
        comp = a.value
        gens = comp.generators
        if len(gens) != 1 or gens[0].ifs or not isinstance(gens[0].target, ast.Name):
            return None
        call, var, it = comp.elt, gens[0].target.id, gens[0].iter
    else:
        return None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in _METHODS):
        return None
    if call.args or call.keywords or not (isinstance(call.func.value, ast.Name) and call.func.value.id == var):
        return None
    return call.func.attr, var, it


def _is_optimizer_call(node: ast.expr, resolve) -> bool:
    full = (resolve(node.func) or "") if isinstance(node, ast.Call) else ""
    return full.startswith("torch.optim.") and full.count(".") == 2


def _literal(it: ast.expr, scopes: list[ast.AST]) -> tuple[str, list[ast.expr]] | None:
    """(the list's name, its elements): ``X`` a list/tuple literal, or a name (``self.x`` too) bound once to one
    in a scope."""
    if isinstance(it, (ast.List, ast.Tuple)):
        return "", list(it.elts)
    if not isinstance(it, (ast.Name, ast.Attribute)):
        return None
    name = ast.unparse(it)  # opts, or self.opts (bound in __init__)
    for scope in scopes:
        bound = [
            n.value
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], (ast.Name, ast.Attribute))
            and ast.unparse(n.targets[0]) == name
        ]
        if len(bound) == 1 and isinstance(bound[0], (ast.List, ast.Tuple)):
            return name, list(bound[0].elts)
        if bound:
            return None
    return None


def optimizer_loop(a: ast.stmt, scopes: list[ast.AST], resolve) -> tuple[str, list[str]] | None:
    """(``step`` or ``zero_grad``, the optimizers in order) for a loop over a list of optimizers; None for any
    other statement. ``scopes``: the block's function then the module; ``resolve``: a torch name of a node."""
    found = _loop_call(a)
    if found is None:
        return None
    method, _var, it = found
    listed = _literal(it, scopes)
    if listed is None or not listed[1]:
        return None
    name, elts = listed
    receivers = []
    for k, e in enumerate(elts):
        if isinstance(e, (ast.Name, ast.Attribute)):
            receivers.append(ast.unparse(e))
        elif name and _is_optimizer_call(e, resolve):
            receivers.append(f"{name}[{k}]")
        else:
            return None
    return method, receivers


def listed_name(recv: str, scopes: list[ast.AST]) -> str:
    """``opts[1]`` where ``opts = [opt1, opt2]`` (or a tuple): ``opt2``, the name the optimizer has elsewhere,
    so that ``opts[0].zero_grad()`` and ``opt1.step()`` meet on one gradient; any other receiver as it is."""
    try:
        node = ast.parse(recv, mode="eval").body
    except SyntaxError:
        return recv
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)):
        return recv
    k = node.slice.value
    listed = _literal(node.value, scopes)
    if listed is None or not isinstance(k, int) or not -len(listed[1]) <= k < len(listed[1]):
        return recv
    e = listed[1][k]
    return ast.unparse(e) if isinstance(e, (ast.Name, ast.Attribute)) else recv
