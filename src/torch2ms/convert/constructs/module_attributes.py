"""Objects a Module keeps as plain attributes that MindSpore would register as sub-cells.

``self.opt = torch.optim.Adam(self.parameters(), ...)`` in a Module's ``__init__`` (a layer that
trains itself, as in the forward-forward example): a MindSpore optimizer is a Cell, so the
assignment would register it as a child and rename the parameters it holds (``weight`` →
``opt.weight``). The converted statement stores it with ``torch2ms.runtime.plain_attribute``.
"""

from __future__ import annotations

import libcst as cst

from ...i18n import _
from ..context import RewriteContext
from ..hooks import leave


def _optimizer_class(ctx: RewriteContext, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    full = ctx.resolve(value.func) or ""
    entry = ctx.kb.get(full)
    return (
        entry is not None
        and entry.kind == "class"
        and entry.torch.startswith("torch.optim.")
        and not entry.torch.startswith("torch.optim.lr_scheduler.")
        and entry.status != "no-equivalent"
    )


@leave(cst.SimpleStatementLine)
def optimizer_attribute(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """``self.opt = Adam(...)`` in a Module → ``plain_attribute(self, "opt", optim.Adam(...))``."""
    if not ctx.in_module_class or len(original.body) != 1 or len(updated.body) != 1:
        return updated
    before, after = original.body[0], updated.body[0]
    if not (isinstance(before, cst.Assign) and isinstance(after, cst.Assign) and len(before.targets) == 1):
        return updated
    target = before.targets[0].target
    if not (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
        and _optimizer_class(ctx, before.value)
    ):
        return updated
    ctx.record("torch.optim.Optimizer", "converted", _("kept off the Cell's sub-cells (plain_attribute)"))
    call = cst.Call(
        func=ctx.parse_ms("torch2ms.runtime.plain_attribute"),
        args=[cst.Arg(cst.Name("self")), cst.Arg(cst.SimpleString(f'"{target.attr.value}"')), cst.Arg(after.value)],
    )
    return updated.with_changes(body=[cst.Expr(call)])
