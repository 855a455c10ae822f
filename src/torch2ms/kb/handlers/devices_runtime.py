"""Handlers for torch.autograd.functional and the runtime APIs of kb/data/devices_runtime.toml."""

from __future__ import annotations

import ast

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler


def _tuple_items(src: str) -> list[str] | None:
    """The element sources of a literal tuple/list argument (``(x, y)``), else None (one tensor)."""
    try:
        node = ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, (ast.Tuple, ast.List)):
        return [ast.unparse(e) for e in node.elts]
    return None


def _inputs(bound: dict[str, str], entry: Entry) -> tuple[str, list[str] | None]:
    if "inputs" not in bound:
        raise Unsupported(_("{api}: inputs is required").format(api=entry.short))
    return bound["inputs"], _tuple_items(bound["inputs"])


def _only_defaults(bound: dict[str, str], entry: Entry, names: tuple[str, ...]) -> None:
    """create_graph / strict have no MindSpore switch: refuse values other than the defaults."""
    defaults = entry.sig_defaults()
    for name in names:
        if (
            name in bound
            and literal(bound[name]) is not NOT_LITERAL
            and literal(bound[name]) != literal(defaults[name])
        ):
            raise Unsupported(
                _(
                    "{api}({name}={value}): MindSpore's functional transforms have no such switch "
                    "(gradients of MindSpore functions are always differentiable again: nest ops.grad instead)"
                ).format(api=entry.short, name=name, value=bound[name])
            )


@handler
def jacobian(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``jacobian(f, x)`` → ``ops.jacrev(f)(x)``; a tuple of inputs → grad_position over all, one Jacobian each."""
    _only_defaults(bound, entry, ("create_graph", "strict"))  # vectorize: MindSpore's transforms always vmap
    inputs, items = _inputs(bound, entry)
    strategy = literal(bound.get("strategy", "'reverse-mode'"))
    fn = "jacfwd" if strategy == "forward-mode" else "jacrev"
    func = bound["func"]
    if items is None:
        return f"mindspore.ops.{fn}({func})({inputs})"
    positions = "(" + ", ".join(str(i) for i in range(len(items))) + ("," if len(items) == 1 else "") + ")"
    return f"mindspore.ops.{fn}({func}, grad_position={positions})(*{paren(inputs)})"


@handler
def hessian(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``hessian(f, x)`` → ``ops.jacfwd(ops.jacrev(f))(x)`` (forward over reverse), for one input tensor."""
    _only_defaults(bound, entry, ("create_graph", "strict"))
    inputs, items = _inputs(bound, entry)
    if items is not None:
        raise Unsupported(
            _("hessian of several inputs: take ops.jacfwd(ops.jacrev(f, grad_position=i), grad_position=j) per pair")
        )
    return f"mindspore.ops.jacfwd(mindspore.ops.jacrev({bound['func']}))({inputs})"


@handler
def vjp(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``vjp(f, x, v)`` → ``(out, vjp)`` from ``ops.vjp(f, x)`` and its pullback applied to ``v``.

    ``v`` omitted: ones, as torch allows for a one-element output."""
    _only_defaults(bound, entry, ("create_graph", "strict"))
    inputs, items = _inputs(bound, entry)
    args = inputs if items is None else f"*{paren(inputs)}"
    v = bound.get("v", "None")
    cotangent = "mindspore.ops.ones_like(_r[0])" if literal(v) is None else v
    grads = "_g[0]" if items is None else "_g"
    return f"(lambda _r: (lambda _g: (_r[0], {grads}))(_r[1]({cotangent})))(mindspore.ops.vjp({bound['func']}, {args}))"


@handler
def jvp(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``jvp(f, x, v)`` → ``ops.jvp(f, x, v)``: the same (outputs, jvp) pair."""
    _only_defaults(bound, entry, ("create_graph", "strict"))
    inputs, _names = _inputs(bound, entry)
    if literal(bound.get("v", "None")) is None:
        raise Unsupported(_("jvp without v: pass v = ones_like(inputs) (MindSpore's ops.jvp needs the tangent)"))
    return f"mindspore.ops.jvp({bound['func']}, {inputs}, {bound['v']})"


@handler
def hvp(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``hvp(f, x, v)`` / ``vhp`` → ``(f(x), jvp of ops.grad(f) at x along v)``: forward over reverse.

    The Hessian is symmetric, so v·H and H·v are the same vector."""
    _only_defaults(bound, entry, ("create_graph", "strict"))
    inputs, items = _inputs(bound, entry)
    if items is not None:
        raise Unsupported(
            _("{api} of several inputs: nest ops.grad(f, grad_position=...) in ops.jvp per input").format(
                api=entry.short
            )
        )
    if literal(bound.get("v", "None")) is None:
        raise Unsupported(_("{api} without v: pass v (MindSpore's ops.jvp needs the tangent)").format(api=entry.short))
    func = bound["func"]
    return f"({func}({inputs}), mindspore.ops.jvp(mindspore.ops.grad({func}), {inputs}, {bound['v']})[1])"
