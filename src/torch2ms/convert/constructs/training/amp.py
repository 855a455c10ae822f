"""Mixed precision in a training loop (R13): ``with torch.autocast(...)`` blocks.

The blocks of the loop body are inlined (their statements join the body and the forward moves into
``forward_fn``); what they asked for (dtype, an ``enabled=`` flag) becomes MindSpore's O1 mixed
precision on the model: ``amp_model = mindspore.amp.auto_mixed_precision(model, "O1", dtype=...)``,
which shares the model's parameters (emit.py writes it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst

from ....i18n import _
from ...cstutil import Statement, block, code
from .errors import NotConvertible


class Roles(Protocol):
    """What the autocast rules ask of the training loop's roles (analysis.Roles), named here so that
    this module does not import the analysis that imports it."""

    def resolve(self, node: ast.AST) -> str | None: ...

    def ast_of(self, node: cst.CSTNode) -> ast.stmt | None: ...


DTYPES = {"torch.float16": "float16", "torch.half": "float16", "torch.bfloat16": "bfloat16"}


@dataclass
class Amp:
    """What the loop's autocast blocks asked for."""

    blocks: list[cst.With] = field(default_factory=list)
    inside: set[int] = field(default_factory=set)  # ids of the statements inside them
    dtype: str = ""  # "" when every block is disabled
    enabled: str | None = None  # a non-literal enabled= expression
    header: str = ""
    model: str | None = None
    device: str = ""  # "cpu", "cuda", "" (an expression: cuda or cpu when run)


def inline_autocast(roles: Roles, body: list[Statement]) -> tuple[list[Statement], Amp | None]:
    """Inline the loop body's ``with torch.autocast(...)`` blocks; what they asked for goes in Amp."""
    if "autocast" not in "".join(code(s) for s in body if isinstance(s, cst.With)):
        return body, None
    amp, out = Amp(), list[Statement]()
    for s in body:
        a = roles.ast_of(s) if isinstance(s, cst.With) else None
        if (
            not isinstance(a, ast.With)
            or not isinstance(s.body, cst.IndentedBlock)  # type: ignore[attr-defined]
            or len(a.items) != 1
            or a.items[0].optional_vars is not None
            or not isinstance(a.items[0].context_expr, ast.Call)
        ):
            out.append(s)
            continue
        call = a.items[0].context_expr
        full = roles.resolve(call.func) or ""
        if full.rsplit(".", 1)[-1] != "autocast":
            out.append(s)
            continue
        _autocast_args(roles, full, call, amp)
        assert isinstance(s, cst.With) and isinstance(s.body, cst.IndentedBlock)
        amp.blocks.append(s)
        amp.inside |= {id(c) for c in s.body.body}
        out.extend(block(s.body))
    # the model: the first module called, in evaluation order (criterion(model(x), y) → model)
    inside = [a for c in out if id(c) in amp.inside and (a := roles.ast_of(c)) is not None]
    amp.model = next(
        (
            ast.unparse(n.func)
            for a in inside
            for n in _post_order(a)
            if isinstance(n, ast.Call)
            and not roles.resolve(n.func)
            and (
                isinstance(n.func, ast.Name)
                and n.func.id[:1].islower()
                or isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
            )
        ),
        None,
    )
    if amp.dtype and not amp.model:
        raise NotConvertible(_("autocast around a forward that calls no module: port by hand"))
    return out, amp


def _autocast_args(roles: Roles, full: str, call: ast.Call, amp: Amp) -> None:
    names = (
        ["enabled", "dtype", "cache_enabled"]
        if ".cuda." in full or ".cpu." in full
        else ["device_type", "dtype", "enabled", "cache_enabled"]
    )
    got = {names[i]: v for i, v in enumerate(call.args[: len(names)])}
    got.update({k.arg: k.value for k in call.keywords if k.arg})
    device_node = got.get("device_type")
    device = device_node.value if isinstance(device_node, ast.Constant) else ("cpu" if ".cpu." in full else "cuda")
    amp.device = str(device) if device_node is None or isinstance(device_node, ast.Constant) else ""
    dtype = (
        roles.resolve(got["dtype"]) if "dtype" in got else ("torch.bfloat16" if device == "cpu" else "torch.float16")
    )
    if dtype not in DTYPES:
        raise NotConvertible(
            _("autocast dtype {dtype}: MindSpore amp takes float16 or bfloat16").format(dtype=ast.unparse(got["dtype"]))
        )
    enabled = got.get("enabled")
    if isinstance(enabled, ast.Constant) and enabled.value is False:
        return  # a disabled autocast changes nothing
    flag = (
        None if enabled is None or isinstance(enabled, ast.Constant) and enabled.value is True else ast.unparse(enabled)
    )
    if amp.dtype and (amp.dtype, amp.enabled) != (DTYPES[dtype], flag):
        raise NotConvertible(_("several autocast blocks with different settings in one training step"))
    amp.dtype, amp.enabled = DTYPES[dtype], flag
    amp.header = ast.unparse(call)


class RenameCall(cst.CSTTransformer):
    """``model(...)`` / ``self.model(...)`` → ``amp_model(...)``."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if isinstance(updated.func, (cst.Name, cst.Attribute)) and code(updated.func) == self.old:
            return updated.with_changes(func=cst.Name(self.new))
        return updated


def _post_order(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes children first: the order in which calls are evaluated."""
    for child in ast.iter_child_nodes(node):
        yield from _post_order(child)
    yield node
