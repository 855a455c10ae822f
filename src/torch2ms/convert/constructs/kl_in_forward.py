"""``torch.distributions.kl_divergence(p, q)`` where GRAPH_MODE compiles (a VAE's KL term in forward): the
runtime's kl_divergence picks the closed form by the distributions' Python classes through a registry at call
time, which GRAPH_MODE cannot compile inside construct (a TypeError inside the compiler). The statement is
marked, and the report names the line and the reason, before the user runs anything; the closed form of the
pair (``Normal``/``Normal``: ``log(s2/s1) + (s1² + (m1-m2)²) / (2 s2²) - 1/2``) written out compiles.
"""

from __future__ import annotations

import libcst as cst

from ...i18n import N_, _
from ..construct import Construct
from ..context import RewriteContext
from ..facts import ModuleFacts
from ..hooks import leave
from .graph_mode import _in_forward, _marked

CONSTRUCT = Construct("kl_divergence in forward", order=62)

_KL = frozenset({"torch.distributions.kl_divergence", "torch.distributions.kl.kl_divergence"})
_KL_NOTE = N_(
    "GRAPH_MODE — torch2ms.runtime.kl_divergence dispatches on the distributions' classes at run time and does "
    "not compile inside construct: there, write the closed form of the pair out"
)


class _FindKL(cst.CSTVisitor):
    def __init__(self, ctx: RewriteContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        if not self.found and self.ctx.resolve(node.func) in _KL:
            self.found = True


def _may_call_kl(facts: ModuleFacts) -> bool:
    """Only a file that spells ``kl_divergence`` (or imports it under another name) can call it."""
    source = facts.source
    return source is None or "kl_divergence" in source or any(full in _KL for full in facts.imap.names.values())


@leave(cst.SimpleStatementLine, when=_may_call_kl)
def mark_kl_divergence(ctx: RewriteContext, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
    """A kl_divergence call in a method GRAPH_MODE compiles (forward, what it calls): marked."""
    if not _in_forward(ctx):
        return updated
    finder = _FindKL(ctx)
    original.visit(finder)
    if not finder.found:
        return updated
    return _marked(ctx, updated, _KL_NOTE, _("kl_divergence in construct: GRAPH_MODE does not compile it"))
