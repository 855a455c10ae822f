"""Feature probes on torch: ``hasattr(torch.nn.functional, 'scaled_dot_product_attention')``,
``hasattr(torch, 'compile')``, ``hasattr(torch.backends, 'mps')`` ask whether the installed torch has an
API, to pick a fast path or a fallback. After the port the question is whether the converter maps that
API: the probe becomes the constant ``True`` where the knowledge base converts ``<module>.<name>`` (the
branch it guards then converts as well) and ``False`` where it does not (the fallback branch, usually the
hand-written one, runs). Left alone, the probe kept ``import torch`` in a file that needs only MindSpore
and was marked "not in the knowledge base".

Only ``hasattr`` of a torch name and a string literal is rewritten; ``hasattr(model, 'x')`` and probes
of names the file did not import from torch stay as written.
"""

from __future__ import annotations

import libcst as cst

from ...i18n import _
from ..construct import Construct
from ..context import RewriteContext
from ..hooks import call, skip

CONSTRUCT = Construct("feature probe", order=59)


def _probe(ctx: RewriteContext, node: cst.Call) -> str | None:
    """``<torch name>.<attr>`` probed by ``hasattr(<torch name>, '<attr>')``; None: not such a probe."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "hasattr" and len(node.args) == 2):
        return None
    target, attr = node.args[0], node.args[1]
    if target.star or attr.star or target.keyword is not None or attr.keyword is not None:
        return None
    if not isinstance(target.value, (cst.Name, cst.Attribute)) or not isinstance(attr.value, cst.SimpleString):
        return None
    owner = ctx.resolve(target.value)
    name = attr.value.evaluated_value
    if owner is None or not isinstance(name, str) or not name.isidentifier():
        return None
    return f"{owner}.{name}"


@skip(cst.Call)
def probe_is_no_reference(ctx: RewriteContext, node: cst.Call) -> bool:
    """The probed torch module inside ``hasattr(...)`` is no reference to convert or mark."""
    return _probe(ctx, node) is not None


@call()
def feature_probe(ctx: RewriteContext, original: cst.Call, updated: cst.Call):
    """``hasattr(torch.nn.functional, 'scaled_dot_product_attention')`` → ``True`` (converted API) or
    ``False`` (an API torch2ms does not convert); None: not a probe."""
    full = _probe(ctx, original)
    if full is None:
        return None
    entry = ctx.kb.get(full)
    converts = entry is not None and entry.status != "no-equivalent"
    ctx.record(
        full,
        "converted",
        _("hasattr() probe of torch: True, as torch2ms converts this API")
        if converts
        else _("hasattr() probe of torch: False, as torch2ms does not convert this API"),
    )
    return cst.Name("True" if converts else "False")
