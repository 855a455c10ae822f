"""Manual updates in a helper function (issue 22, class 7): ``sgd_step(model, lr)`` called from the training
loop, where the file defines

    def sgd_step(model, lr):
        for p in model.parameters():
            p.data -= lr * p.grad

MindSpore keeps no ``p.grad``: the gradients are the tuple the converted step computes. The call reads the
gradients as the loop would written inline, so the flow (flow.py) sees the helper's loop with the call's
arguments in place of its parameters, and the writer (general.py) puts that loop, reading the gradient tuple,
where the call was. The helper may wrap its loop in ``with torch.no_grad():`` (nothing to track in MindSpore
outside the differentiated function) and may take the parameters themselves (``sgd_step(model.parameters(),
lr)`` with ``for p in params``). The helper's definition stays (converted like any function); another caller
of it keeps reading ``p.grad``.
"""

from __future__ import annotations

import ast
import copy

from .analysis import Roles


class _Substitute(ast.NodeTransformer):
    def __init__(self, binding: dict[str, ast.expr]) -> None:
        self.binding = binding

    def visit_Name(self, node: ast.Name) -> ast.expr:
        value = self.binding.get(node.id)
        return copy.deepcopy(value) if value is not None and isinstance(node.ctx, ast.Load) else node


def _helper(roles: Roles, call: ast.Call) -> tuple[ast.FunctionDef, bool] | None:
    """The file's one function (or method called on ``self``) of the call's name, and whether it is a method."""
    func = call.func
    if isinstance(func, ast.Name):
        name, method = func.id, False
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        name, method = func.attr, True
    else:
        return None
    defs = [n for n in ast.walk(roles.tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(defs) != 1:
        return None
    args = defs[0].args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or (method and not args.args):
        return None
    return defs[0], method


def _bind(fn: ast.FunctionDef, method: bool, call: ast.Call) -> dict[str, ast.expr] | None:
    params = [a.arg for a in fn.args.args][int(method) :]
    if len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    binding: dict[str, ast.expr] = dict(zip(params, call.args))
    for k in call.keywords:
        if k.arg is None or k.arg not in params or k.arg in binding:
            return None
        binding[k.arg] = k.value
    defaults = fn.args.defaults
    for p, default in zip(params[len(params) - len(defaults) :], defaults):
        binding.setdefault(p, default)
    return binding if set(binding) == set(params) else None


def _loop_of(fn: ast.FunctionDef) -> ast.For | None:
    """The helper's body when it is one ``for`` loop (after a docstring), maybe under ``with torch.no_grad():``."""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.With) and len(body[0].items) == 1:
        ctx = body[0].items[0]
        if ctx.optional_vars is None and ast.unparse(ctx.context_expr).endswith("no_grad()"):
            body = body[0].body
    if len(body) != 1 or not isinstance(body[0], ast.For) or body[0].orelse:
        return None
    return body[0]


def helper_read_loop(roles: Roles, a: ast.stmt) -> ast.For | None:
    """``helper(args)`` as a statement, where the helper is a loop over parameters that reads ``.grad``: that
    loop with the helper's parameters replaced by the call's arguments (the caller checks it reads
    ``.grad``), else None. A helper that rebinds one of its parameters is not inlined."""
    if not (isinstance(a, ast.Expr) and isinstance(a.value, ast.Call)) or "grad" not in ast.dump(roles.tree):
        return None
    found = _helper(roles, a.value)
    if found is None:
        return None
    fn, method = found
    loop = _loop_of(fn)
    binding = _bind(fn, method, a.value)
    if loop is None or binding is None or "grad" not in ast.dump(loop):
        return None
    if any(isinstance(n, ast.Name) and n.id in binding and not isinstance(n.ctx, ast.Load) for n in ast.walk(loop)):
        return None
    inlined = _Substitute(binding).visit(copy.deepcopy(loop))
    return ast.fix_missing_locations(inlined)
