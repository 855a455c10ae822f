"""Named custom handlers for constructs no single KB entry can express.

One function per construct: gradient contexts, decorators with no MindSpore meaning, in-place
statements, statements that become no-ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from .transformer import TorchToMindSpore


# Which torch names are gradient contexts or decorators to drop is KB data (entry ``role``).
def grad_contexts(t: TorchToMindSpore) -> frozenset[str]:
    return t.kb.with_role("grad-context")


def drop_decorator_names(t: TorchToMindSpore) -> frozenset[str]:
    return t.kb.with_role("grad-context") | t.kb.with_role("drop-decorator")


def callee(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.func if isinstance(node, cst.Call) else node


def call_handler(t: TorchToMindSpore, full: str, original: cst.Call, updated: cst.Call):
    """Calls handled here rather than by their KB entry; None lets the KB decide."""
    if full in grad_contexts(t):
        return updated  # unwrap_grad_context / drop_decorators deal with the whole construct
    return None


def unwrap_grad_context(t: TorchToMindSpore, original: cst.With, updated: cst.With):
    """``with torch.no_grad(): body`` → ``body``; other context managers of the same with stay."""
    keep = [item for item in updated.items if t.resolve(callee(item.item)) not in grad_contexts(t)]
    if len(keep) == len(updated.items):
        return updated
    dropped = [t.resolve(callee(i.item)) for i in updated.items if i not in keep]
    for name in dropped:
        t.record(
            name or "torch.no_grad",
            "converted",
            "block kept without a context: MindSpore differentiates only inside grad functions",
        )
    if keep:
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated.with_changes(items=keep)
    body = list(updated.body.body) if isinstance(updated.body, cst.IndentedBlock) else [updated.body]
    if body and hasattr(body[0], "leading_lines"):
        body[0] = body[0].with_changes(leading_lines=[*updated.leading_lines, *body[0].leading_lines])
    return cst.FlattenSentinel(body)


def drop_decorators(t: TorchToMindSpore, fn: cst.FunctionDef) -> cst.FunctionDef:
    keep = []
    for d in fn.decorators:
        name = t.resolve(callee(d.decorator))
        if name in drop_decorator_names(t):
            t.record(name, "converted", "decorator has no meaning in MindSpore; removed")
        else:
            keep.append(d)
    if len(keep) == len(fn.decorators):
        return fn
    lines = [line for d in fn.decorators if d not in keep for line in d.leading_lines if line.comment]
    if lines:
        fn = fn.with_changes(leading_lines=[*fn.leading_lines, *lines])
    return fn.with_changes(decorators=keep)


def _is_inplace_rewrite(t: TorchToMindSpore, call: cst.Call) -> bool:
    func = call.func
    if not isinstance(func, cst.Attribute) or not func.attr.value.endswith("_") or func.attr.value.startswith("_"):
        return False
    if t.resolve(func) is not None:
        return False  # torch.nn.init.normal_(w) is a function, not a Tensor method
    entry = t.kb.method(func.attr.value)
    return (
        entry is not None
        and entry.status == "composite"
        and "set_data" not in entry.template
        and "assign" not in entry.template
    )


def after_statement(t: TorchToMindSpore, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """Statement-level fixes after the expressions inside were converted."""
    if len(original.body) != 1:
        return updated
    if isinstance(original.body[0], cst.Assign) and original.body[0] is not updated.body[0]:
        return _self_assignment(original.body[0], updated)
    if not isinstance(original.body[0], cst.Expr):
        return updated
    before, after = original.body[0].value, updated.body[0]
    if not isinstance(after, cst.Expr) or after.value is before:
        return updated
    # x.add_(y) became x.add(y): MindSpore's in-place methods do not mutate in PyNative, so assign.
    if isinstance(before, cst.Call) and _is_inplace_rewrite(t, before) and not _kept_method(before, after.value):
        # x.sub_(a).div_(b) mutates x: the target is the innermost receiver.
        target = before.func.value  # type: ignore[union-attr]
        while isinstance(target, cst.Call) and _is_inplace_rewrite(t, target):
            target = target.func.value  # type: ignore[union-attr]
        if isinstance(target, (cst.Name, cst.Attribute, cst.Subscript)):
            assign = cst.Assign(targets=[cst.AssignTarget(target)], value=after.value)
            return updated.with_changes(body=[assign])
        t.record(
            t.kb.method(before.func.attr.value).torch,
            "review",  # type: ignore[union-attr]
            "in-place result of a temporary: assign it where it is used",
        )
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


def _kept_method(before: cst.Call, after: cst.BaseExpression) -> bool:
    """The in-place method itself was left as it was (its receiver's type is unknown) and only its
    arguments changed: no assignment, or converting the output again would differ."""
    return (
        isinstance(after, cst.Call)
        and isinstance(after.func, cst.Attribute)
        and after.func.attr.value == before.func.attr.value
    )  # type: ignore[union-attr]


def _names(node: cst.BaseExpression) -> list[str] | None:
    """``x`` → ["x"]; ``x, y`` → ["x", "y"]; anything else → None."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, cst.Tuple) and all(isinstance(e.value, cst.Name) for e in node.elements):
        return [e.value.value for e in node.elements]  # type: ignore[union-attr]
    return None


def _self_assignment(before: cst.Assign, updated: cst.SimpleStatementLine):
    """``model = model.cuda()`` became ``model = model`` (``x, y = x.to(d), y.to(d)`` became
    ``x, y = x, y``): a no-op, removed."""
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
