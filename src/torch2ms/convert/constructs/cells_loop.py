"""A loop over a module's sub-modules, written the way MindSpore code loops over cells.

``for m in self.modules():`` converts (KB entry ``torch.nn.Module.modules``) to the expression
``(c for _, c in self.cells_and_names())``, right wherever the call stands. As the iterable of a
``for`` statement that generator is a detour a MindSpore engineer does not write: the loop unpacks the
pairs itself, ``for _, m in self.cells_and_names():`` (mindcv's ``_initialize_weights`` reads so). The same
cells in the same order; a body that reads ``_`` keeps the generator.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ..construct import Construct
from ..context import RewriteContext
from ..cstutil import any_node
from ..facts import ModuleFacts
from ..hooks import leave


def has_modules_loop(facts: ModuleFacts) -> bool:
    return ".modules()" in (facts.source or "")


CONSTRUCT = Construct("cells loop", order=130)

_PAIRS = m.GeneratorExp(
    elt=m.Name(),
    for_in=m.CompFor(
        target=m.Tuple(elements=[m.Element(m.Name("_")), m.Element(m.Name())]),
        iter=m.Call(func=m.Attribute(attr=m.Name("cells_and_names")), args=[]),
        ifs=[],
        inner_for_in=None,
        asynchronous=None,
    ),
)


@leave(cst.For, when=has_modules_loop)
def cells_loop(ctx: RewriteContext, original: cst.For, updated: cst.For) -> cst.For:
    """``for m in (c for _, c in x.cells_and_names()):`` → ``for _, m in x.cells_and_names():``."""
    gen = updated.iter
    if not isinstance(updated.target, cst.Name) or not m.matches(gen, _PAIRS):
        return updated
    assert isinstance(gen, cst.GeneratorExp)
    pair = gen.for_in.target
    assert isinstance(pair, cst.Tuple) and isinstance(gen.elt, cst.Name)
    second = pair.elements[1].value
    if not isinstance(second, cst.Name) or second.value != gen.elt.value:
        return updated
    if _reads_underscore(updated.body) or updated.orelse is not None and _reads_underscore(updated.orelse):
        return updated
    target = cst.Tuple(elements=[cst.Element(cst.Name("_")), cst.Element(updated.target)], lpar=[], rpar=[])
    return updated.with_changes(target=target, iter=gen.for_in.iter)


def _reads_underscore(node: cst.CSTNode) -> bool:
    return any_node(node, _is_underscore)


def _is_underscore(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "_"
