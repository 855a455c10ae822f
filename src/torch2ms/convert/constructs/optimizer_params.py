"""Parameters handed to an optimizer through a function of the project.

``make_optimizer(model.parameters(), ...)`` where ``make_optimizer(params, ...)`` builds
``torch.optim.SGD(params, ...)``: the KB turns ``model.parameters()`` written inside the optimizer
call into ``model.trainable_params()`` (MindSpore keeps BatchNorm's statistics as Parameters, which
an optimizer would decay), but here the call sits at the function's call site. A cheap ``ast`` pass
finds each function whose parameter reaches an optimizer's params; the call sites' ``parameters()``
argument at that position becomes ``trainable_params()`` too.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...analysis.astwalk import nodes
from ...analysis.imports import ImportMap
from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import call

CONSTRUCT = Construct("optimizer parameters", order=90)

_PARAMETER_METHODS = ("get_parameters", "parameters")


def _is_optimizer(full: str | None) -> bool:
    """``torch.optim.SGD``, ``torch.optim.AdamW``, ... (a class of torch.optim itself, not a scheduler)."""
    return full is not None and full.startswith("torch.optim.") and full.count(".") == 2 and full[12:13].isupper()


def optimizer_param_positions(tree: ast.Module, imap: ImportMap) -> dict[str, dict[int | str, str]]:
    """Function name → {position and name of each parameter that reaches an optimizer's params: name}."""
    out: dict[str, dict[int | str, str]] = {}
    if not any(isinstance(n, ast.Call) and _is_optimizer(imap.resolve(n.func)) for n in nodes(tree)):
        return out  # no optimizer built in this file (most files): no function to look into
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if names[:1] in (["self"], ["cls"]):
            continue  # methods: their call sites are not plain names
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and _is_optimizer(imap.resolve(node.func))):
                continue
            params = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "params"), None)
            used = {n.id for n in ast.walk(params) if isinstance(n, ast.Name)} if params is not None else set()
            for i, name in enumerate(names):
                if name in used:
                    out.setdefault(fn.name, {}).update({i: name, name: name})
    return out


def _positions(ctx: RewriteContext) -> dict[str, dict[int | str, str]]:
    facts = ctx.facts
    if facts.optimizer_params is None:
        facts.optimizer_params = optimizer_param_positions(facts.tree, facts.imap) if facts.tree is not None else {}
    return facts.optimizer_params


def _trainable(arg: cst.Arg) -> cst.Arg | None:
    """``model.get_parameters()`` → ``model.trainable_params()``; None when the argument is something else."""
    value = arg.value
    if (
        isinstance(value, cst.Call)
        and not value.args
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in _PARAMETER_METHODS
    ):
        return arg.with_changes(
            value=value.with_changes(func=value.func.with_changes(attr=cst.Name("trainable_params")))
        )
    return None


@call()
def parameters_for_an_optimizer(ctx: RewriteContext, original: cst.Call, updated: cst.Call) -> cst.Call | None:
    """``make_optimizer(model.parameters(), ...)`` → ``make_optimizer(model.trainable_params(), ...)``."""
    if not isinstance(updated.func, cst.Name):
        return None
    positions = _positions(ctx).get(updated.func.value)
    if not positions:
        return None
    args = list(updated.args)
    changed = False
    for i, arg in enumerate(args):
        key: int | str = arg.keyword.value if arg.keyword is not None else i
        if arg.star or key not in positions:
            continue
        new = _trainable(arg)
        if new is not None:
            args[i], changed = new, True
    if not changed:
        return None
    ctx.record(
        "torch.nn.Module.parameters",
        "converted",
        _("an optimizer's params (through {call}()): trainable_params(), without BatchNorm's statistics").format(
            call=updated.func.value
        ),
    )
    return updated.with_changes(args=args)
