"""Handlers for torch.nn.init (→ mindspore.common.initializer + Parameter.set_data) and torch.optim."""

from __future__ import annotations

import ast
import math
import re

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler, registry_name, transform

_INIT = "mindspore.common.initializer"
# Non-linearities MindSpore's _calculate_gain knows (HeUniform/HeNormal raise ValueError on others).
_MS_GAINS = {
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
    "tanh",
    "relu",
    "leaky_relu",
}


def _arg(bound: dict[str, str], entry: Entry, name: str) -> str:
    if name in bound:
        return bound[name]
    default = entry.sig_defaults().get(name)
    if default is None:
        raise Unsupported(_("{api}: argument '{name}' is required").format(api=entry.short, name=name))
    return default


def _parameter(src: str) -> str:
    """The Parameter an init function acts on, ready for ``.set_data``.

    ``init.xxx_(m.weight.data)``: MindSpore's Parameter.data is a plain Tensor without set_data,
    so the initializer is applied to the Parameter itself.
    """
    s = src.strip()
    if s.endswith(".data"):  # any receiver: a name chain, or the BatchNorm guard (m.gamma if ... else m.weight)
        try:
            node = ast.parse(s, mode="eval").body
        except SyntaxError:
            node = None
        if isinstance(node, ast.Attribute) and node.attr == "data":
            s = s[:-5]
    return paren(s)


# torch.nn.init function → the mindspore.common.initializer expression ({arg}: torch argument source).
_INIT_EXPR = {
    "zeros_": "'zeros'",
    "ones_": "'ones'",
    "constant_": f"{_INIT}.Constant({{val}})",
    "normal_": f"{_INIT}.Normal(sigma={{std}}, mean={{mean}})",
    "trunc_normal_": f"{_INIT}.TruncatedNormal(sigma={{std}}, mean={{mean}}, a={{a}}, b={{b}})",
    "xavier_uniform_": f"{_INIT}.XavierUniform(gain={{gain}})",
    "xavier_normal_": f"{_INIT}.XavierNormal(gain={{gain}})",
    "orthogonal_": f"{_INIT}.Orthogonal(gain={{gain}})",
    "eye_": f"{_INIT}.Identity()",
    "dirac_": f"{_INIT}.Dirac(groups={{groups}})",
    "sparse_": f"{_INIT}.Sparse(sparsity={{sparsity}}, sigma={{std}})",
}


@handler
def set_data_initializer(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch.nn.init.X_(t, ...) → t.set_data(initializer(<MindSpore initializer>, t.shape, t.dtype)).

    set_data returns the Parameter, as the torch function returns its tensor.
    """
    expr = _INIT_EXPR[entry.torch.rsplit(".", 1)[-1]]
    init = re.sub(r"\{(\w+)\}", lambda m: _arg(bound, entry, m.group(1)), expr)
    return _set_data(bound["tensor"], init)


def _set_data(tensor: str, init: str) -> str:
    t = _parameter(tensor)
    return f"{t}.set_data({_INIT}.initializer({init}, {t}.shape, {t}.dtype))"


@handler
def kaiming(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """kaiming_{uniform,normal}_ → HeUniform/HeNormal(negative_slope=a, mode, nonlinearity).

    The defaults happen to agree (a=0, 'fan_in', 'leaky_relu'); they are emitted anyway so the
    converted call does not depend on that. 'selu' is not a MindSpore non-linearity.
    """
    nl = _arg(bound, entry, "nonlinearity")
    v = literal(nl)
    if v is not NOT_LITERAL and v not in _MS_GAINS:
        raise Unsupported(
            _(
                "{api}(nonlinearity={nl}): MindSpore's He initializers only know {known}; "
                "use Normal/Uniform with the gain computed by hand"
            ).format(api=entry.short, nl=nl, known=sorted(_MS_GAINS))
        )
    cls = "HeUniform" if "uniform" in entry.torch else "HeNormal"
    init = (
        f"{_INIT}.{cls}(negative_slope={_arg(bound, entry, 'a')}, mode={_arg(bound, entry, 'mode')}, nonlinearity={nl})"
    )
    return _set_data(bound["tensor"], init)


def _fold(expr: str, a: str, b: str, op: str) -> str:
    va, vb = literal(a), literal(b)
    if isinstance(va, (int, float)) and isinstance(vb, (int, float)):
        return repr(float((vb - va) / 2 if op == "half" else (va + vb) / 2))
    return expr


@handler
def uniform(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """uniform_(t, a, b) → Uniform(scale) draws U(-scale, scale): scale (b-a)/2, shifted by (a+b)/2."""
    a, b = _arg(bound, entry, "a"), _arg(bound, entry, "b")
    t = _parameter(bound["tensor"])
    if ast.dump(ast.parse(a, mode="eval")) == ast.dump(ast.parse(f"-({b})", mode="eval")):
        # The usual symmetric bound uniform_(w, -k, k) is exactly Uniform(k).
        return f"{t}.set_data({_INIT}.initializer({_INIT}.Uniform({b}), {t}.shape, {t}.dtype))"
    scale = _fold(f"(({b}) - ({a})) / 2", a, b, "half")
    shift = _fold(f"(({a}) + ({b})) / 2", a, b, "mid")
    t = _parameter(bound["tensor"])
    init = f"{_INIT}.initializer({_INIT}.Uniform({scale}), {t}.shape, {t}.dtype)"
    if literal(shift) == 0.0:
        return f"{t}.set_data({init})"
    return f"{t}.set_data({init}.init_data() + {shift})"


def _gain(nl: str, param) -> float:
    if nl in (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    ):
        return 1.0
    if nl == "tanh":
        return 5.0 / 3
    if nl == "relu":
        return math.sqrt(2.0)
    if nl == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nl == "selu":
        return 3.0 / 4
    raise Unsupported(_("calculate_gain: unknown nonlinearity {nl!r}").format(nl=nl))


@handler
def calculate_gain(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """calculate_gain with literal arguments is a constant; MindSpore has no public equivalent."""
    nl = literal(bound.get("nonlinearity"))
    param = literal(bound.get("param", "None"))
    if not isinstance(nl, str) or param is NOT_LITERAL:
        raise Unsupported(
            _(
                "calculate_gain with non-literal arguments: MindSpore has no public function; "
                "compute the gain in Python (math.sqrt(2.0) for relu, 5/3 for tanh, ...)"
            )
        )
    return repr(_gain(nl, param))


@transform
def cyclic_lr_cycle_momentum(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch CyclicLR cycles the optimizer momentum by default; MindSpore's CyclicLR never does.

    Only ``cycle_momentum=False`` converts (the momentum bounds are then unused and dropped).
    """
    if literal(value) is False:
        return {}
    raise Unsupported(
        _(
            "CyclicLR(cycle_momentum=True) is torch's default and also cycles the momentum between "
            "base_momentum and max_momentum; MindSpore's CyclicLR only cycles the lr. Pass cycle_momentum=False "
            "(or set momentum by hand each step)"
        )
    )


def _float_src(value: str) -> str:
    v = literal(value)
    if isinstance(v, bool):
        raise Unsupported(_("expected a number, got {value}").format(value=value))
    if isinstance(v, (int, float)):
        return repr(float(v))
    return f"float({value})"


@transform
def float_hyperparameter(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """An optimizer hyper-parameter MindSpore type-checks as float (ASGD t0/lambd, Adadelta rho): 2 → 2.0."""
    if value is None:
        return {}
    names = [r.ms or r.torch for r in entry.args.values() if r.transform == registry_name(float_hyperparameter)]
    # A transform is called once per argument: find which one this value belongs to.
    # (Arguments with the same source get the same conversion, so emitting all matches is safe.)
    out = {name: _float_src(value) for name in names if bound.get(name) == value}
    if not out:
        raise Unsupported(_("float_hyperparameter: cannot tell which argument {value} is").format(value=value))
    return out


_MODULE_PARAMETERS = re.compile(r"\.(?:get_)?parameters\(\s*\)")


@transform
def trainable_params(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """The parameters an optimizer is built on: ``model.parameters()`` → ``model.trainable_params()``.

    torch's parameters() holds no buffers, but MindSpore keeps BatchNorm's moving mean and variance as
    (non-trainable) Parameters that get_parameters() returns: an optimizer given them applies weight
    decay to the statistics every step (measured: AdamW(weight_decay=0.5) moved moving_variance 1.0 →
    0.857 in one step) and the compiled step differentiates them for nothing. torch optimizers skip
    parameters without a gradient, so only the trainable ones take part, as here."""
    if value is None:
        return {}
    params = _MODULE_PARAMETERS.sub(".trainable_params()", value)
    if _is_iterator(params):  # (a generator expression keeps its own parentheses)
        params = f"list{params}" if params.startswith("(") and params.endswith(")") else f"list({params})"
    owners = list(dict.fromkeys(_OWNER.findall(params)))
    if len(owners) > 1:  # several models' parameters: their MindSpore names may meet (two instances of a class)
        pairs = ", ".join(f"({o.rsplit('.', 1)[-1]!r}, {o})" for o in owners)
        params = f"torch2ms.runtime.distinct_names({params}, {pairs})"
    return {"params": params}


_OWNER = re.compile(r"([A-Za-z_][\w.]*)\.trainable_params\(\)")


# Calls that hand an optimizer a one-pass iterator: torch takes it (it makes a list), MindSpore's optimizers
# want a list or tuple (ValueError otherwise).
_ITERATOR_CALLS = frozenset({"chain", "filter", "map", "iter", "islice", "from_iterable"})


def _is_iterator(text: str) -> bool:
    """``itertools.chain(a.parameters(), b.parameters())``, ``filter(...)``, ``(p for p in ...)``: an iterator."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.GeneratorExp):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in _ITERATOR_CALLS
    return False


@handler
def adam(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """torch Adam → experimental AdamW(weight_decay=0.0) when there is no weight decay.

    MindSpore's experimental Adam (a fused kernel) adds eps before the bias correction: with
    gradients near eps it drifts from torch (0.21 after 50 steps, measured), while AdamW with
    weight_decay=0.0 is exactly torch's Adam (2.4e-7). Coupled (L2) weight decay: the runtime's
    CoupledAdam (the decay added to the gradients, then that same AdamW step; experimental Adam was
    2.5% off torch's parameters in 10 steps with weight_decay=5e-4).
    """
    wd = bound.get("weight_decay", "0")
    if literal(bound.get("decoupled_weight_decay", "False")) is not False:
        raise Unsupported(
            _("Adam(decoupled_weight_decay=True) is AdamW: convert it to mindspore.experimental.optim.AdamW.")
        )
    # A param group may set its own weight_decay: then it must stay coupled (Adam).
    use_adamw = literal(wd) in (0, 0.0) and "weight_decay" not in bound["params"]
    target = "mindspore.experimental.optim.AdamW" if use_adamw else "torch2ms.runtime.CoupledAdam"
    parts = [trainable_params(bound["params"], bound, entry)["params"]]
    for name in ("lr", "betas", "eps"):
        if name in bound:
            parts.append(f"{name}={bound[name]}")
    parts.append("weight_decay=0.0" if use_adamw else f"weight_decay={wd}")
    for name in ("amsgrad", "maximize"):
        if name in bound:
            parts.append(f"{name}={bound[name]}")
    return f"{target}({', '.join(parts)})"
