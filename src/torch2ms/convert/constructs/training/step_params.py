"""``model.parameters()`` in the step's forward (issue 22, class 10): an L2 penalty in the loss,
``loss = criterion(out, y) + 0.01 * sum(p.pow(2).sum() for p in model.parameters())``.

The forward statements move into ``forward_fn``, which the compiled step (``@mindspore.jit``; GRAPH_MODE
compiles every step) differentiates, and MindSpore compiles no ``Cell.get_parameters()`` call there ("the
method or function 'mindspore.nn.cell.Cell.get_parameters' is not supported in 'construct'"). A tuple of the
same Parameters, bound before the loop, compiles in PyNative and GRAPH_MODE alike and is read at each step
(measured on 2.10: a generator, a list comprehension or a ``for`` loop over it). So each
``X.parameters()`` / ``X.named_parameters()`` without arguments in the forward statements (``X`` a name or an
attribute chain: ``model``, ``self.model``) becomes a name bound before the loop to
``torch2ms.runtime.torch_parameters(X)`` (torch's parameters: BatchNorm statistics left out, runtime
module_parameters.py); ``next(X.parameters())`` becomes the tuple's first item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

import libcst as cst

from ... import generated as gen
from ...cstutil import Statement, dotted
from ...generated import GeneratedRefs

HELPERS = {"parameters": "torch_parameters", "named_parameters": "torch_named_parameters"}
T = TypeVar("T", bound=cst.CSTNode)
N = TypeVar("N", bound=cst.CSTNode)
BIND = "{name} = torch2ms.runtime.{helper}({module})\n"


class _Hoist(cst.CSTTransformer):
    """Replaces ``X.parameters()`` calls with names; ``bound`` keeps (method, X) → name, in order."""

    def __init__(self, fresh: Callable[[str], str], bound: dict[tuple[str, str], str]) -> None:
        super().__init__()
        self.fresh, self.bound = fresh, bound

    def on_leave(self, original_node: N, updated_node: N) -> N | cst.RemovalSentinel | cst.FlattenSentinel[N]:
        # libcst rebuilds every node it visits: an unchanged subtree keeps its original nodes, whose ids
        # name what earlier stages generated (GeneratedRefs: ``torch2ms.runtime.input_grads`` in the loss)
        result = super().on_leave(original_node, updated_node)
        before, after = original_node.children, updated_node.children
        if result is updated_node and len(before) == len(after) and all(a is b for a, b in zip(before, after)):
            return original_node
        return result

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Name) and func.value == "next" and len(updated.args) == 1:
            arg = updated.args[0].value
            if isinstance(arg, cst.Name) and arg.value in self.bound.values():
                return cst.Subscript(arg, [cst.SubscriptElement(cst.Index(cst.Integer("0")))])
            return updated
        if not (isinstance(func, cst.Attribute) and func.attr.value in HELPERS) or updated.args:
            return updated
        module = dotted(func.value)
        if module is None:
            return updated
        key = (func.attr.value, module)
        if key not in self.bound:
            stem = module.split(".")[-1]
            self.bound[key] = self.fresh(f"{stem}_{func.attr.value}")
        return cst.Name(self.bound[key])


class ParameterHoist:
    """Applied to the forward's statements and loss (``apply``), then ``binds()``: the statements binding
    the names read, to go before the loop (none where no ``X.parameters()`` is read)."""

    def __init__(self, refs: GeneratedRefs, fresh: Callable[[str], str]) -> None:
        self.refs = refs
        self.bound: dict[tuple[str, str], str] = {}
        self._hoist = _Hoist(fresh, self.bound)

    def apply(self, node: T) -> T:
        return cast(T, node.visit(self._hoist))

    def binds(self) -> list[Statement]:
        return [
            gen.statement(
                BIND.replace("{helper}", HELPERS[method]),
                self.refs,
                name=cst.Name(name),
                module=cst.parse_expression(module),
            )
            for (method, module), name in self.bound.items()
        ]
