"""Suffix tests on parameter names keep their meaning: ``for pn, p in m.named_parameters(): if
pn.endswith('weight')`` (minGPT's weight-decay groups) sees MindSpore's names, where a LayerNorm's
weight is ``gamma``, an Embedding's ``embedding_table`` and a bias ``beta``. Inside such a loop a
literal torch parameter name in ``pn.endswith('weight')`` also accepts, as the last segment of ``pn``,
every name the knowledge base renames it to, so the same parameters pass the test."""

from __future__ import annotations

from functools import cache
from typing import Any

import libcst as cst

from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..cstutil import code
from ..hooks import leave

CONSTRUCT = Construct("parameter name tests", order=100)


@cache
def _ms_names(kb: Any) -> dict[str, tuple[str, ...]]:
    """torch parameter name → the MindSpore names (last segments) it has across the KB's layers (itself first)."""
    out: dict[str, set[str]] = {}
    for entry in kb:
        for torch_name, ms_name in (getattr(entry, "params", None) or {}).items():
            if ms_name:
                out.setdefault(torch_name, set()).add(ms_name.rsplit(".", 1)[-1])
    return {k: (k, *sorted(v - {k})) for k, v in out.items() if v - {k}}


def _loop_name(loop: cst.For) -> str | None:
    """``pn`` of ``for pn, p in X.named_parameters(...)``."""
    call = loop.iter
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "named_parameters"
        and isinstance(loop.target, cst.Tuple)
        and loop.target.elements
        and isinstance(loop.target.elements[0].value, cst.Name)
    ):
        return None
    return loop.target.elements[0].value.value


class _Suffixes(cst.CSTTransformer):
    def __init__(self, name: str, renames: dict[str, tuple[str, ...]]) -> None:
        self.name, self.renames, self.changed = name, renames, False

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "endswith"
            and isinstance(func.value, cst.Name)
            and func.value.value == self.name
            and len(updated.args) == 1
            and isinstance(updated.args[0].value, cst.SimpleString)
        ):
            return updated
        value = updated.args[0].value.evaluated_value
        names = self.renames.get(value) if isinstance(value, str) else None
        if not names:
            return updated
        self.changed = True
        # the other names as whole segments: PReLU's 'w' must not match every name ending in w
        others = ", ".join(repr(n) for n in names[1:])
        return cst.parse_expression(f"({code(updated)} or {self.name}.rsplit('.', 1)[-1] in ({others},))")


@leave(cst.For)
def parameter_suffix_tests(ctx: RewriteContext, original: cst.For, updated: cst.For) -> cst.For:
    name = _loop_name(original)
    if name is None:
        return updated
    fixer = _Suffixes(name, _ms_names(ctx.kb))
    body = updated.body.visit(fixer)
    if not fixer.changed:
        return updated
    ctx.record(
        "torch.nn.Module.named_parameters", "converted", _("parameter-name suffix tests match MindSpore's names")
    )
    return updated.with_changes(body=body)
