"""Transforms and handlers for ``torch.nn.functional`` (F.*) → ``mindspore.ops``.

Every function here is referenced by name from ``kb/data/nn_functional.toml`` and is proven by
that file's differential cases, as ``nn_functional.<function>``.
"""

from __future__ import annotations

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, literal, paren
from ..transforms import Unsupported, handler, transform

_OPS = "mindspore.ops"


def _get(bound: dict[str, str], entry: Entry, name: str) -> str | None:
    """The source of argument ``name``: as given, else the torch default (``None`` if none)."""
    if name in bound:
        return bound[name]
    return entry.sig_defaults().get(name)


def _is_none(src: str | None) -> bool:
    return src is None or literal(src) is None and src.strip() == "None"


def _reduce(expr: str, reduction: str | None) -> str:
    r = literal(reduction) if reduction is not None else "mean"
    if r == "mean":
        return f"({expr}).mean()"
    if r == "sum":
        return f"({expr}).sum()"
    if r == "none":
        return expr
    raise Unsupported(
        _("reduction={reduction} must be a literal 'mean', 'sum' or 'none' to convert").format(reduction=reduction)
    )


def _ntuple(src: str | None, n: int, what: str) -> tuple:
    v = literal(src)
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * n
    if isinstance(v, (tuple, list)) and len(v) == n and all(isinstance(i, int) for i in v):
        return tuple(v)
    if isinstance(v, (tuple, list)) and len(v) == 1 and isinstance(v[0], int):
        return (v[0],) * n
    raise Unsupported(_("{what}={src} must be a literal int or {n}-tuple to convert").format(what=what, src=src, n=n))


# ---- argument transforms ---------------------------------------------------------------------


@transform
def softmax_dim(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch softmax-family ``dim`` → MindSpore ``axis``.

    An omitted dim makes torch pick a legacy implicit axis (0 for 0-, 1- and 3-D input, else 1),
    while MindSpore uses -1; the implicit choice is spelled out.
    """
    if value is None or literal(value) is None and value.strip() == "None":
        x = paren(bound["input"])
        return {"axis": f"(0 if {x}.ndim in (0, 1, 3) else 1)"}
    return {"axis": value}


@transform
def fold_output_size(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """F.fold output_size (int or pair) → the int32 Tensor MindSpore's fold requires."""
    v = literal(value)
    if isinstance(v, int):
        v = (v, v)
    if isinstance(v, (tuple, list)):
        return {"output_size": f"mindspore.Tensor({tuple(v)!r}, mindspore.int32)"}
    return {"output_size": f"mindspore.Tensor(tuple({value}), mindspore.int32)"}


# ---- whole-call handlers -------------------------------------------------------------------


@handler
def interpolate(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.interpolate / F.upsample* → ops.interpolate, with scale_factor turned into a size.

    MindSpore 2.10 refuses scale_factor for 3-D/4-D nearest, linear and bilinear; the output size
    torch would compute (floor(in * scale)) is passed instead. Where that cannot agree (a scale
    known only at run time or fractional, bicubic, a mode chosen at run time) the call goes to
    torch2ms.runtime.interpolate, which resamples with torch's own formulas.
    """
    x = bound["input"]
    name = entry.torch.rsplit(".", 1)[-1]
    if name == "upsample_bilinear":
        mode_src, align = "'bilinear'", "True"
    elif name == "upsample_nearest":
        mode_src, align = "'nearest'", None
    else:
        mode_src, align = _get(bound, entry, "mode"), bound.get("align_corners")
    mode = literal(mode_src)
    if literal(bound.get("antialias", "False")) is not False:
        raise Unsupported(_("antialias=True has no MindSpore interpolate equivalent"))
    size = bound.get("size")
    sf = bound.get("scale_factor")
    if _is_none(size) and _is_none(sf):
        raise Unsupported(_("interpolate needs size or scale_factor"))
    if mode == "bicubic" or not isinstance(mode, str) or (_is_none(size) and not _static_scale(bound, sf)):
        return _runtime_interpolate(x, size, sf, mode_src, align, bound.get("recompute_scale_factor"))
    if _is_none(size):
        size = _scaled_size(x, sf, mode)
    parts = [x, f"size={size}", f"mode={mode_src}"]
    if align is not None and not _is_none(align):
        parts.append(f"align_corners={align}")
    return f"{_OPS}.interpolate({', '.join(parts)})"


def _static_scale(bound: dict[str, str], sf: str | None) -> bool:
    """A literal scale whose size-based MindSpore call samples as torch does: whole numbers, or any
    number with recompute_scale_factor=True (torch then samples with in/out too)."""
    v = literal(sf)
    factors = v if isinstance(v, (tuple, list)) else (v,)
    if not all(isinstance(f, (int, float)) and not isinstance(f, bool) for f in factors):
        return False
    return all(float(f).is_integer() for f in factors) or literal(bound.get("recompute_scale_factor", "None")) is True


def _scaled_size(x: str, sf: str | None, mode: object) -> str:
    """torch's output size floor(in * scale) as MindSpore source."""
    dims = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}.get(mode) if isinstance(mode, str) else None
    v = literal(sf)
    xs = paren(x)
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(f"int({xs}.shape[{i + 2}] * {f!r})" for i, f in enumerate(v)) + ",)"
    if dims is not None:
        return "(" + ", ".join(f"int({xs}.shape[{i + 2}] * {paren(sf or '1')})" for i in range(dims)) + ",)"
    return f"tuple(int(_d * {paren(sf or '1')}) for _d in {xs}.shape[2:])"


def _runtime_interpolate(
    x: str, size: str | None, sf: str | None, mode_src: str | None, align: str | None, recompute: str | None
) -> str:
    parts = [x]
    for key, src in (
        ("size", size),
        ("scale_factor", sf),
        ("mode", mode_src),
        ("align_corners", align),
        ("recompute_scale_factor", recompute),
    ):
        if src is not None and not _is_none(src):
            parts.append(f"{key}={src}")
    return f"torch2ms.runtime.interpolate({', '.join(parts)})"


@handler
def one_hot(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.one_hot(t, num_classes=-1) → ops.one_hot(t, depth); -1 means max(t) + 1, as in torch."""
    t = bound["tensor"]
    n = bound.get("num_classes")
    if n is None or literal(n) == -1:
        n = f"int({paren(t)}.max()) + 1"
    return f"{_OPS}.one_hot({t}, {n})"


def _norm_shape(ns: str) -> tuple[tuple[int, ...] | None, int | None]:
    v = literal(ns)
    if isinstance(v, int):
        return (v,), 1
    if isinstance(v, (tuple, list)) and all(isinstance(i, int) for i in v):
        return tuple(v), len(v)
    return None, None


def _or_default(src: str | None, default: str) -> str:
    """A name or attribute that may hold None at run time (nanoGPT's ``self.bias = ... if bias else None``):
    the primitive takes tensors only, so None stands for the default tensor."""
    if src is None or _is_none(src):
        return default
    if not src.replace(".", "").replace("_", "").isalnum():
        return src
    return f"({src} if {src} is not None else {default})"


@handler
def layer_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.layer_norm → the ops.LayerNorm primitive (ops.layer_norm's LayerNormExt has no CPU kernel).

    The primitive needs a positive begin axis and explicit gamma/beta.
    """
    x, ns = bound["input"], bound["normalized_shape"]
    w, b = bound.get("weight"), bound.get("bias")
    eps = _get(bound, entry, "eps")
    shape, k = _norm_shape(ns)
    xs = paren(x)
    if k is None:
        if _is_none(w):
            raise Unsupported(
                _("F.layer_norm with a non-literal normalized_shape and no weight: pass the shape as a literal")
            )
        axis = f"{xs}.ndim - {paren(w)}.ndim"
        shape_src = f"{paren(w)}.shape"
    else:
        axis = f"{xs}.ndim - {k}"
        shape_src = repr(shape)
    ones, zeros = f"{_OPS}.ones({shape_src}, {xs}.dtype)", f"{_OPS}.zeros({shape_src}, {xs}.dtype)"
    w, b = _or_default(w, ones), _or_default(b, zeros)
    return f"{_OPS}.LayerNorm(begin_norm_axis={axis}, begin_params_axis={axis}, epsilon={eps})({x}, {w}, {b})[0]"


@handler
def rms_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.rms_norm → x * rsqrt(mean(x², last dims) + eps) * weight (MindSpore's RmsNorm has no CPU kernel)."""
    x, ns = bound["input"], bound["normalized_shape"]
    w = bound.get("weight")
    eps = bound.get("eps")
    if _is_none(eps):
        eps = "1.1920928955078125e-07"  # torch: finfo(float32).eps
    _shape, k = _norm_shape(ns)
    if k is None:
        raise Unsupported(_("F.rms_norm: normalized_shape must be a literal to convert"))
    xs = paren(x)
    axes = tuple(range(-k, 0))
    out = f"{xs} * {_OPS}.rsqrt(({xs} * {xs}).mean(axis={axes!r}, keep_dims=True) + {eps})"
    if not _is_none(w):
        out = f"{out} * {paren(w)}"
    return out


@handler
def scaled_dot_product_attention(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.scaled_dot_product_attention → softmax(q·kᵀ·scale + mask)·v, spelled out with ops."""
    q, k, v = bound["query"], bound["key"], bound["value"]
    if literal(bound.get("enable_gqa", "False")) is not False:
        raise Unsupported(_("enable_gqa=True: repeat key/value heads by hand before the attention"))
    qs, ks = paren(q), paren(k)
    scale = bound.get("scale")
    if _is_none(scale):
        scale = f"{qs}.shape[-1] ** -0.5"
    s = f"{_OPS}.matmul({q}, {_OPS}.swapaxes({k}, -2, -1)) * {paren(scale)}"
    is_causal = bound.get("is_causal", "False")
    if literal(is_causal) not in (False, 0):
        causal = (
            f"{_OPS}.triu({_OPS}.ones(({qs}.shape[-2], {ks}.shape[-2]), mindspore.float32), 1).astype(mindspore.bool_)"
        )
        masked = f"{_OPS}.masked_fill({s}, {causal}, float('-inf'))"
        # is_causal=mask is not None and n_ctx > 1: decided when the call runs (a constant in GRAPH_MODE)
        s = masked if literal(is_causal) is not NOT_LITERAL else f"({masked} if {is_causal} else {s})"
    m = bound.get("attn_mask")
    if not _is_none(m):
        ms_ = paren(m)
        s = (
            f"({_OPS}.masked_fill({s}, {_OPS}.logical_not({m}), float('-inf')) "
            f"if {ms_}.dtype == mindspore.bool_ else {s} + {ms_})"
        )
    attn = f"{_OPS}.softmax({s}, -1)"
    p = bound.get("dropout_p")
    if p is not None and literal(p) not in (0, 0.0):
        # p=self.dropout_p if self.training else 0: ops.dropout takes a float only
        attn = f"{_OPS}.dropout({attn}, p={p if literal(p) is not NOT_LITERAL else f'float({p})'})"
    return f"{_OPS}.matmul({attn}, {v})"


@handler
def embedding(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.embedding → ops.gather(weight, idx, 0): ops.embedding's kernel is not registered on CPU."""
    if not _is_none(bound.get("max_norm")):
        raise Unsupported(_("max_norm renormalises the weight in place; no MindSpore equivalent"))
    return f"{_OPS}.gather({bound['weight']}, {bound['input']}, 0)"


@handler
def triplet_margin_loss(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.triplet_margin_loss spelled out (the TripletMarginLoss kernel is not on CPU)."""
    a, pos, neg = (paren(bound[n]) for n in ("anchor", "positive", "negative"))
    margin, p, eps = (_get(bound, entry, n) for n in ("margin", "p", "eps"))
    swap = literal(_get(bound, entry, "swap"))
    if swap is NOT_LITERAL:
        raise Unsupported(_("swap must be a literal True/False to convert"))

    def dist(u, w):
        return f"{_OPS}.norm({u} - {w} + {eps}, {p}, -1)"

    d_an = dist(a, neg)
    if swap:
        d_an = f"{_OPS}.minimum({d_an}, {dist(pos, neg)})"
    expr = f"{_OPS}.relu({dist(a, pos)} - {d_an} + {paren(margin)})"
    return _reduce(expr, _get(bound, entry, "reduction"))


@handler
def soft_margin_loss(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.soft_margin_loss = mean(log(1 + exp(-y·x))) (the SoftMarginLoss kernel is not on CPU)."""
    x, y = paren(bound["input"]), paren(bound["target"])
    expr = f"{_OPS}.log1p({_OPS}.exp(-{y} * {x}))"
    return _reduce(expr, _get(bound, entry, "reduction"))


@handler
def poisson_nll_loss(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.poisson_nll_loss spelled out (MindSpore has no functional form)."""
    x, t = paren(bound["input"]), paren(bound["target"])
    log_input = literal(_get(bound, entry, "log_input"))
    full = literal(_get(bound, entry, "full"))
    eps = _get(bound, entry, "eps")
    if log_input is NOT_LITERAL or full is NOT_LITERAL:
        raise Unsupported(_("log_input and full must be literal True/False to convert"))
    if log_input:
        expr = f"{_OPS}.exp({x}) - {t} * {x}"
    else:
        expr = f"{x} - {t} * {_OPS}.log({x} + {eps})"
    if full:
        stirling = (
            f"{_OPS}.where({t} > 1, {t} * {_OPS}.log({t}) - {t} "
            f"+ 0.5 * {_OPS}.log(2 * 3.141592653589793 * {t}), {_OPS}.zeros_like({t}))"
        )
        expr = f"{expr} + {stirling}"
    return _reduce(expr, _get(bound, entry, "reduction"))


@handler
def bilinear(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.bilinear(x1, x2, W, b): y[n, o] = x1[n]·W[o]·x2[n] + b[o], for 2-D inputs."""
    x1, x2, w = paren(bound["input1"]), paren(bound["input2"]), bound["weight"]
    out = f"({_OPS}.matmul({x1}[:, None, None, :], {w}).squeeze(-2) * {x2}[:, None, :]).sum(-1)"
    b = bound.get("bias")
    if not _is_none(b):
        out = f"{out} + {paren(b)}"
    return out


@handler
def local_response_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.local_response_norm(size odd) → ops.lrn(depth_radius=(size-1)//2, alpha=alpha/size)."""
    size = literal(bound["size"])
    if not isinstance(size, int) or size % 2 == 0:
        raise Unsupported(
            _("local_response_norm: only a literal odd size converts (torch pads an even window asymmetrically)")
        )
    alpha, beta, k = (_get(bound, entry, n) for n in ("alpha", "beta", "k"))
    return (
        f"{_OPS}.lrn({bound['input']}, depth_radius={(size - 1) // 2}, bias={k}, "
        f"alpha={paren(alpha)} / {size}, beta={beta})"
    )


@handler
def instance_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.instance_norm (batch statistics) = group_norm with one group per channel."""
    if not _is_none(bound.get("running_mean")) or not _is_none(bound.get("running_var")):
        raise Unsupported(_("instance_norm with running stats: no MindSpore functional form; use nn.InstanceNorm2d"))
    if literal(_get(bound, entry, "use_input_stats")) is not True:
        raise Unsupported(_("use_input_stats=False needs running stats; no MindSpore functional form"))
    x = bound["input"]
    parts = [x, f"{paren(x)}.shape[1]"]
    for n in ("weight", "bias"):
        if not _is_none(bound.get(n)):
            parts.append(f"{n}={bound[n]}")
    parts.append(f"eps={_get(bound, entry, 'eps')}")
    return f"{_OPS}.group_norm({', '.join(parts)})"


@handler
def rrelu(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.rrelu: eval (torch default training=False) is leaky_relu with slope (lower+upper)/2."""
    lower, upper = _get(bound, entry, "lower"), _get(bound, entry, "upper")
    training = literal(_get(bound, entry, "training"))
    if training is NOT_LITERAL:
        raise Unsupported(_("rrelu training= must be a literal to convert"))
    if training:
        return f"{_OPS}.rrelu({bound['input']}, {lower}, {upper})"
    return f"{_OPS}.leaky_relu({bound['input']}, ({lower} + {upper}) / 2)"


@handler
def alpha_dropout(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.alpha_dropout / feature_alpha_dropout: identity when not training (torch default)."""
    training = literal(_get(bound, entry, "training"))
    if training is not False:
        raise Unsupported(_("{api} in training mode has no MindSpore equivalent").format(api=entry.short))
    return bound["input"]


@handler
def max_pool1d(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.max_pool1d → ops.max_pool2d on an (N, C, 1, L) view (MindSpore has no max_pool1d)."""
    if literal(bound.get("return_indices", "False")) is not False:
        raise Unsupported(_("max_pool1d(return_indices=True) does not convert"))
    x = bound["input"]
    k = _ntuple(bound["kernel_size"], 1, "kernel_size")[0]
    stride = bound.get("stride")
    s = k if _is_none(stride) else _ntuple(stride, 1, "stride")[0]
    p = _ntuple(_get(bound, entry, "padding"), 1, "padding")[0]
    d = _ntuple(_get(bound, entry, "dilation"), 1, "dilation")[0]
    ceil = _get(bound, entry, "ceil_mode")
    return (
        f"{_OPS}.max_pool2d({paren(x)}.expand_dims(-2), (1, {k}), (1, {s}), (0, {p}), (1, {d}), "
        f"ceil_mode={ceil}).squeeze(-2)"
    )


@handler
def conv_transpose(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.conv_transpose1d/2d → the Conv2DTranspose primitive with an explicit output size.

    ops.conv_transpose2d's kernel is not registered on CPU in 2.10; 1-D runs as 2-D with height 1.
    """
    one_d = "1d" in entry.torch
    x, w = bound["input"], bound["weight"]
    if one_d:
        x, w = f"{paren(x)}.expand_dims(2)", f"{paren(w)}.expand_dims(2)"
        s = (1,) + _ntuple(_get(bound, entry, "stride"), 1, "stride")
        p = (0,) + _ntuple(_get(bound, entry, "padding"), 1, "padding")
        op = (0,) + _ntuple(_get(bound, entry, "output_padding"), 1, "output_padding")
        d = (1,) + _ntuple(_get(bound, entry, "dilation"), 1, "dilation")
    else:
        s = _ntuple(_get(bound, entry, "stride"), 2, "stride")
        p = _ntuple(_get(bound, entry, "padding"), 2, "padding")
        op = _ntuple(_get(bound, entry, "output_padding"), 2, "output_padding")
        d = _ntuple(_get(bound, entry, "dilation"), 2, "dilation")
    g = literal(_get(bound, entry, "groups"))
    if not isinstance(g, int):
        raise Unsupported(_("groups must be a literal int to convert"))
    xs, ws = paren(x), paren(w)
    out_c = f"{ws}.shape[1] * {g}" if g != 1 else f"{ws}.shape[1]"
    hw = [
        f"({xs}.shape[{i + 2}] - 1) * {s[i]} - {2 * p[i]} + {d[i]} * ({ws}.shape[{i + 2}] - 1) + {op[i] + 1}"
        for i in range(2)
    ]
    out = (
        f"{_OPS}.Conv2DTranspose({out_c}, {ws}.shape[2:], pad_mode='pad', pad={(p[0], p[0], p[1], p[1])!r}, "
        f"stride={s!r}, dilation={d!r}, group={g})({x}, {w}, ({xs}.shape[0], {out_c}, {hw[0]}, {hw[1]}))"
    )
    b = bound.get("bias")
    if not _is_none(b):
        out = f"{out} + {paren(b)}.reshape(1, -1, 1, 1)"
    if one_d:
        out = f"({out}).squeeze(2)"
    return out


@handler
def batch_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.batch_norm → ops.batch_norm, which needs weight and bias tensors (torch allows None)."""
    x, rm, rv = bound["input"], bound["running_mean"], bound["running_var"]
    if _is_none(rm) or _is_none(rv):
        raise Unsupported(
            _(
                "F.batch_norm without running stats has no ops.batch_norm form; normalise with the batch mean/var by hand"
            )
        )
    w, b = bound.get("weight"), bound.get("bias")
    if _is_none(w):
        w = f"{_OPS}.ones_like({rm})"
    if _is_none(b):
        b = f"{_OPS}.zeros_like({rm})"
    rest = [f"{n}={_get(bound, entry, n)}" for n in ("training", "momentum", "eps")]
    return f"{_OPS}.batch_norm({x}, {rm}, {rv}, {w}, {b}, {', '.join(rest)})"


@transform
def conv_padding(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """F.conv*d padding → ops.conv*d ``pad_mode`` + ``padding``.

    Unlike nn.Conv2d, ops.conv2d/conv3d take torch's per-dimension tuple unchanged; its pad_mode
    defaults to 'valid', so 'pad' is emitted for any numeric padding.
    """
    v = literal(value) if value is not None else 0
    if v is NOT_LITERAL:
        return {"pad_mode": "'pad'", "padding": value}  # type: ignore[dict-item]
    if isinstance(v, str):
        if v not in ("same", "valid"):
            raise Unsupported(_("padding={v!r} is not a torch padding mode").format(v=v))
        return {"pad_mode": repr(v)}
    if isinstance(v, (list, tuple)):
        v = tuple(v)
        if "1d" in entry.torch and len(v) == 1:
            v = v[0]
    return {"pad_mode": "'pad'", "padding": repr(v)}


@transform
def int_margin(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """multi_margin_loss margin: MindSpore accepts only an int (torch: any float)."""
    v = literal(value)
    if isinstance(v, float) and v.is_integer():
        return {"margin": repr(int(v))}
    if isinstance(v, int):
        return {"margin": repr(v)}
    raise Unsupported(
        _("multi_margin_loss(margin={value}): MindSpore only takes an integer margin").format(value=value)
    )


@handler
def conv_transpose3d(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """F.conv_transpose3d → the Conv3DTranspose primitive (no functional CPU kernel otherwise)."""
    x, w = bound["input"], bound["weight"]
    s = _ntuple(_get(bound, entry, "stride"), 3, "stride")
    p = _ntuple(_get(bound, entry, "padding"), 3, "padding")
    op = _ntuple(_get(bound, entry, "output_padding"), 3, "output_padding")
    d = _ntuple(_get(bound, entry, "dilation"), 3, "dilation")
    g = literal(_get(bound, entry, "groups"))
    if g != 1:
        raise Unsupported(
            _("conv_transpose3d with groups != 1 does not convert (Conv3DTranspose on CPU takes group=1)")
        )
    ws = paren(w)
    pad = tuple(v for v in p for _ in (0, 1))
    out = (
        f"{_OPS}.Conv3DTranspose({ws}.shape[0], {ws}.shape[1], {ws}.shape[2:], pad_mode='pad', pad={pad!r}, "
        f"stride={s!r}, dilation={d!r}, output_padding={op!r})({x}, {w})"
    )
    b = bound.get("bias")
    if not _is_none(b):
        out = f"{out} + {paren(b)}.reshape(1, -1, 1, 1, 1)"
    return out
