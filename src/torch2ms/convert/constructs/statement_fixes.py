"""Statement-level fixes once the expressions inside a statement are converted.

- ``x.add_(y)`` became ``x.add(y)``: MindSpore's in-place Tensor methods do not mutate in PyNative
  (they return the result and leave the tensor as it was), so the result is assigned back; to a
  tensor's ``.data`` or a loop's variable through ``torch2ms.runtime.assign_data`` (a Parameter).
- ``F.relu(x, inplace=True)`` (every KB function with an ``inplace=`` argument) became ``ops.relu(x)``:
  torch changed ``x``, so the result is assigned back to it (``y = F.relu(x, inplace=True)`` also
  rebinds ``x = y``); ``inplace=flag`` assigns back only when the flag is true.
- ``model.to(device)`` / ``optimizer.zero_grad()`` became a bare name or nothing: the statement goes.
- ``model = model.cuda()`` became ``model = model`` (also ``self.buf = self.buf``): the statement goes.
"""

from __future__ import annotations

import ast

import libcst as cst

from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import leave

CONSTRUCT = Construct("statement fixes", order=120)


def _is_inplace_rewrite(ctx: RewriteContext, call: cst.Call) -> bool:
    """``x.add_(y)``: a Tensor method the KB rewrites out of place (the proof harness checks the
    rebinding with the same rule, Entry.rebinds_receiver)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or ctx.resolve(func) is not None:
        return False  # torch.nn.init.normal_(w) is a function, not a Tensor method
    entry = ctx.kb.method(func.attr.value)
    return entry is not None and entry.rebinds_receiver


@leave(cst.SimpleStatementLine)
def after_statement(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """Statement-level fixes after the expressions inside were converted."""
    if len(original.body) != 1:
        return updated
    inplace = _inplace_statement(ctx, original.body[0], updated)
    if inplace is not None:
        return inplace
    if isinstance(original.body[0], cst.Assign) and original.body[0] is not updated.body[0]:
        return _self_assignment(original.body[0], updated)
    if not isinstance(original.body[0], cst.Expr):
        return updated
    before, after = original.body[0].value, updated.body[0]
    if not isinstance(after, cst.Expr) or after.value is before:
        return updated
    # x.add_(y) became x.add(y): MindSpore's in-place methods do not mutate in PyNative, so assign.
    if isinstance(before, cst.Call) and _is_inplace_rewrite(ctx, before) and not _kept_method(before, after.value):
        # x.sub_(a).div_(b) mutates x: the target is the innermost receiver.
        target = _receiver(before)
        while isinstance(target, cst.Call) and _is_inplace_rewrite(ctx, target):
            target = _receiver(target)
        # as converted: ``m.bias.data.zero_()`` on a LayerNorm assigns to ``m.beta.data``
        target = ctx.converted_receivers.get(id(target), target)
        data = _data_update(ctx, target, after.value)
        if data is not None:
            return updated.with_changes(body=[data])
        if isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
            assign = cst.Assign(targets=[cst.AssignTarget(target)], value=after.value)
            return updated.with_changes(body=[assign])
        entry = ctx.kb.method(_method(before))
        api = entry.torch if entry is not None else f"torch.Tensor.{_method(before)}"
        ctx.record(api, "review", _("in-place result of a temporary: assign it where it is used"))
        return updated
    # model.to(device) became model; optimizer.zero_grad() became None: nothing left to do.
    if (
        isinstance(before, cst.Call)
        and isinstance(after.value, (cst.Name, cst.Attribute))
        and not isinstance(after.value, cst.Call)
    ):
        if updated.leading_lines and any(line.comment for line in updated.leading_lines):
            return updated.with_changes(body=[cst.Pass()])
        return cst.RemovalSentinel.REMOVE
    return updated


def _data_update(ctx: RewriteContext, target: cst.BaseExpression, value: cst.BaseExpression):
    """``p.data.clamp_(-c, c)`` (WGAN weight clipping, manual SGD) or ``p.clamp_(...)`` on a loop's
    variable: the tensor itself changes in torch, so ``torch2ms.runtime.assign_data(p, value)`` updates
    the Parameter where a compiled step sees it (``p.data = v`` would not; ``p = v`` rebinds a name).
    None: another target, rebound as before, and inside ``forward`` (compiled code calls no such helper)."""
    nodes = [getattr(info, "node", None) for info in ctx.statements]
    if any(isinstance(node, ast.FunctionDef) and node.name == "forward" for node in nodes):
        return None
    if isinstance(target, cst.Attribute) and target.attr.value == "data":
        call = cst.Call(ctx.parse_ms("torch2ms.runtime.assign_data"), [cst.Arg(target.value), cst.Arg(value)])
        return cst.Expr(call)
    if isinstance(target, cst.Name) and _loop_variable(ctx, target):
        call = cst.Call(ctx.parse_ms("torch2ms.runtime.assign_data"), [cst.Arg(target), cst.Arg(value)])
        return cst.Assign(targets=[cst.AssignTarget(target)], value=call)
    return None


def _inplace_args(ctx: RewriteContext, call: cst.Call) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``F.relu(x, inplace=True)``: (the input, the inplace value) for a KB function whose signature
    takes ``input`` first and has ``inplace`` (keyword or positional, as torch allows); None otherwise,
    and when inplace is absent or the literal False."""
    name = ctx.resolve(call.func)
    entry = None if name is None else ctx.kb.get(name)
    if entry is None or entry.kind != "function":
        return None
    names = entry.sig_names()
    if not names or names[0] != "input" or "inplace" not in names:
        return None
    found: dict[str, cst.BaseExpression] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        key = arg.keyword.value if arg.keyword is not None else (names[i] if i < len(names) else "")
        found[key] = arg.value
    inp, flag = found.get("input"), found.get("inplace")
    if inp is None or flag is None or (isinstance(flag, cst.Name) and flag.value == "False"):
        return None
    return inp, flag


def _rebind(target: cst.BaseAssignTargetExpression, value: cst.BaseExpression, flag: cst.BaseExpression) -> cst.Assign:
    """``target = value``; ``target = value if flag else target`` when inplace= is not the literal True."""
    if not (isinstance(flag, cst.Name) and flag.value == "True"):
        value = cst.IfExp(test=flag, body=value, orelse=target)
    return cst.Assign(targets=[cst.AssignTarget(target)], value=value)


def _loop_variable(ctx: RewriteContext, target: cst.BaseExpression) -> bool:
    """``for t in xs: F.relu(t, inplace=True)``: rebinding ``t`` leaves the tensors in ``xs`` as they were."""
    if not isinstance(target, cst.Name):
        return False
    for info in ctx.statements:
        node = None if info is None else info.node
        if isinstance(node, (ast.For, ast.AsyncFor)) and any(
            isinstance(n, ast.Name) and n.id == target.value for n in ast.walk(node.target)
        ):
            return True
    return False


def _inplace_statement(ctx: RewriteContext, before: cst.BaseSmallStatement, updated: cst.SimpleStatementLine):
    """``F.relu(x, inplace=True)`` alone became ``ops.relu(x)``: ``x = ops.relu(x)``. ``y = F.relu(x,
    inplace=True)`` became ``y = ops.relu(x)``: ``x = y`` follows. None: not such a statement."""
    call = before.value if isinstance(before, (cst.Expr, cst.Assign)) else None
    found = _inplace_args(ctx, call) if isinstance(call, cst.Call) else None
    after = updated.body[0]
    if found is None or not isinstance(after, (cst.Expr, cst.Assign)) or after.value is call:
        return None
    target, flag = found
    api = ctx.resolve(call.func) or ""  # type: ignore[union-attr]
    if not isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
        if isinstance(after, cst.Assign):
            return None  # F.relu(self.bn(x), inplace=True): a fresh tensor nothing else sees
        ctx.record(
            api, "review", _("inplace=True changes a temporary input in torch: assign the result where it is used")
        )
        return updated
    if _loop_variable(ctx, target):
        ctx.record(
            api, "review", _("inplace=True on a loop variable: it is assigned back, the sequence it came from is not")
        )
    if isinstance(after, cst.Expr):
        if after.value.deep_equals(target):
            return None  # nothing left of the call (x): the statement goes below
        return updated.with_changes(body=[_rebind(target, after.value, flag)])
    if len(after.targets) != 1 or not isinstance(after.targets[0].target, (cst.Name, cst.Attribute, cst.Subscript)):
        return None
    result = after.targets[0].target
    if result.deep_equals(target):
        return None  # x = F.relu(x, inplace=True): x is the result already
    again = cst.SimpleStatementLine(body=[_rebind(target, result, flag)])
    return cst.FlattenSentinel([updated, again])


def _kept_method(before: cst.Call, after: cst.BaseExpression) -> bool:
    """The in-place method itself was left as it was (its receiver's type is unknown) and only its
    arguments changed: no assignment, or converting the output again would differ."""
    return (
        isinstance(after, cst.Call)
        and isinstance(after.func, cst.Attribute)
        and after.func.attr.value == _method(before)
    )


def _receiver(call: cst.Call) -> cst.BaseExpression:
    assert isinstance(call.func, cst.Attribute)
    return call.func.value


def _method(call: cst.Call) -> str:
    assert isinstance(call.func, cst.Attribute)
    return call.func.attr.value


def _dotted(node: cst.BaseExpression) -> str | None:
    """``x`` → "x"; ``self.cache`` → "self.cache"; anything else → None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        owner = _dotted(node.value)
        return None if owner is None else f"{owner}.{node.attr.value}"
    return None


def _names(node: cst.BaseExpression) -> list[str] | None:
    """``x`` → ["x"]; ``x, self.y`` → ["x", "self.y"]; anything else → None."""
    if isinstance(node, cst.Tuple):
        names = [_dotted(e.value) for e in node.elements]
        return None if None in names else names  # type: ignore[return-value]
    name = _dotted(node)
    return None if name is None else [name]


def _self_assignment(before: cst.Assign, updated: cst.SimpleStatementLine):
    """``model = model.cuda()`` became ``model = model`` (``x, y = x.to(d), y.to(d)`` became
    ``x, y = x, y``; ``self.freqs = self.freqs.to(x.device)`` became ``self.freqs = self.freqs``, which
    MindSpore refuses for a buffer): a no-op, removed."""
    after = updated.body[0]
    if (
        isinstance(after, cst.Assign)
        and len(after.targets) == 1
        and _names(after.value) is not None
        and _names(after.targets[0].target) == _names(after.value)
        and isinstance(before.value, (cst.Call, cst.Tuple))
    ):
        if any(line.comment for line in updated.leading_lines) or updated.trailing_whitespace.comment:
            return updated.with_changes(body=[cst.Pass()])
        return cst.RemovalSentinel.REMOVE
    return updated
