"""Transforms and handlers for torch.nn layers (kb/data/nn_layers.toml)."""

from __future__ import annotations

from ...i18n import _
from ..schema import Entry
from ..source import NOT_LITERAL, is_int, literal
from ..transforms import Unsupported, handler, transform
from .common import conv_padding, spatial_dims


def _arg(bound: dict[str, str], entry: Entry, name: str) -> str | None:
    """Source of an argument: bound, else the torch default, else None."""
    if name in bound:
        return bound[name]
    return entry.sig_defaults().get(name)


def _kw(parts: list[tuple[str, str | None]]) -> str:
    return ", ".join(f"{k}={v}" if k else str(v) for k, v in parts if v is not None)


@transform
def conv_transpose_padding(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """ConvTranspose padding (+ output_padding for 2-D) → MindSpore pad_mode/padding.

    nn.Conv2dTranspose's own output_padding is numerically wrong on CPU (facts §0 rule 9), but an
    asymmetric padding (p, p - op) per spatial dim crops the same rows torch adds: exact to 1e-7.
    """
    dims = spatial_dims(entry)
    op_src = bound.get("output_padding")
    op = literal(op_src) if op_src is not None else 0
    if dims != 2 or op == 0 or op == (0, 0) or op == [0, 0]:
        return conv_padding(value, bound, entry)
    if op is NOT_LITERAL:
        raise Unsupported(
            _(
                "ConvTranspose2d: a non-literal output_padding cannot be rewritten; MindSpore's output_padding is wrong on CPU"
            )
        )
    pad = literal(value) if value is not None else 0
    if pad is NOT_LITERAL or isinstance(pad, str):
        raise Unsupported(_("ConvTranspose2d with output_padding needs a literal integer padding"))
    ops_ = (op, op) if isinstance(op, int) else tuple(op)
    pads = (pad, pad) if isinstance(pad, int) else tuple(pad)
    if len(ops_) != 2 or len(pads) != 2:
        raise Unsupported(_("ConvTranspose2d: padding/output_padding must be an int or a pair"))
    out: list[int] = []
    for p, o in zip(pads, ops_):
        if o > p:
            raise Unsupported(
                _(
                    "ConvTranspose2d output_padding larger than padding has no exact MindSpore form "
                    "(nn.Conv2dTranspose's output_padding is wrong on CPU): pad the output by hand"
                )
            )
        out += [p, p - o]
    return {"pad_mode": "'pad'", "padding": repr(tuple(out))}


@handler
def local_response_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """LocalResponseNorm(size, alpha, beta, k) → nn.LRN(depth_radius=(size-1)/2, alpha=alpha/size)."""
    size = literal(bound.get("size"))
    if not isinstance(size, int) or size % 2 == 0:
        raise Unsupported(
            _("LocalResponseNorm: only a literal odd size maps to nn.LRN (torch pads an even window asymmetrically)")
        )
    alpha = _arg(bound, entry, "alpha")
    a = literal(alpha)
    alpha_src = repr(a / size) if isinstance(a, (int, float)) else f"({alpha}) / {size}"
    return (
        f"mindspore.nn.LRN(depth_radius={(size - 1) // 2}, bias={_arg(bound, entry, 'k')}, "
        f"alpha={alpha_src}, beta={_arg(bound, entry, 'beta')})"
    )


@handler
def instance_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """InstanceNormNd → nn.GroupNorm(C, C): MindSpore's InstanceNorm kernel is not on CPU."""
    trs = bound.get("track_running_stats")
    if trs is not None and literal(trs) is not False:
        raise Unsupported(
            _(
                "InstanceNorm(track_running_stats=True) has no MindSpore CPU form: running stats are not kept by GroupNorm"
            )
        )
    n = bound.get("num_features")
    if n is None:
        raise Unsupported(_("InstanceNorm needs num_features"))
    return f"mindspore.nn.GroupNorm({n}, {n}, eps={_arg(bound, entry, 'eps')}, affine={_arg(bound, entry, 'affine')})"


@transform
def upsample_scale(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """Upsample scale_factor: MindSpore only takes it with recompute_scale_factor=True and as a float.

    That equals torch only when the scale is a whole number (or torch also recomputes).
    """
    if value is None:
        return {}
    v = literal(value)
    recompute = literal(bound.get("recompute_scale_factor", "None"))
    if v is NOT_LITERAL:
        return {"scale_factor": value, "recompute_scale_factor": "True"}
    vals = v if isinstance(v, (tuple, list)) else (v,)
    if recompute is not True and any(float(s) != int(s) for s in vals):
        raise Unsupported(
            _(
                "Upsample with a fractional scale_factor: MindSpore only supports recompute_scale_factor=True "
                "(a different coordinate map); pass size= instead"
            )
        )
    fv = tuple(float(s) for s in v) if isinstance(v, (tuple, list)) else float(v)
    return {"scale_factor": repr(fv), "recompute_scale_factor": "True"}


@handler
def upsampling_nearest2d(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """UpsamplingNearest2d → nn.Upsample(mode='nearest')."""
    return _upsample_call(bound, entry, "'nearest'", None)


@handler
def upsampling_bilinear2d(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """UpsamplingBilinear2d → nn.Upsample(mode='bilinear', align_corners=True)."""
    return _upsample_call(bound, entry, "'bilinear'", "True")


def _upsample_call(bound: dict[str, str], entry: Entry, mode: str, align: str | None) -> str:
    parts: list[tuple[str, str | None]] = [("size", bound.get("size"))]
    if bound.get("scale_factor") is not None and literal(bound["scale_factor"]) is not None:
        parts += list(upsample_scale(bound["scale_factor"], bound, entry).items())
    parts += [("mode", mode), ("align_corners", align)]
    return f"mindspore.nn.Upsample({_kw(parts)})"


@transform
def layernorm_shape(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """LayerNorm normalized_shape → a tuple; only the last dim normalises with MindSpore's default axes.

    MindSpore needs begin_norm_axis = begin_params_axis = rank − len(shape) as a *positive* axis
    (negative values below -1 are rejected), and the input rank is unknown here.
    """
    v = literal(value)
    if isinstance(v, int):
        return {"normalized_shape": f"({v},)"}
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise Unsupported(
                _(
                    "LayerNorm over several trailing dims: pass begin_norm_axis=begin_params_axis=<rank - len(shape)> "
                    "(a positive axis; MindSpore rejects -2)"
                )
            )
        return {"normalized_shape": repr(tuple(v))}
    if is_int(value):  # a name the source shows is an int (an int-annotated parameter, n = 64): the simple form
        return {"normalized_shape": f"({value},)"}
    return {"normalized_shape": f"(tuple({value}) if isinstance({value}, (list, tuple)) else ({value},))"}


def _unless_true(key: str, value: str | None) -> dict[str, str]:
    v = literal(value)
    return {} if value is None or v is True else {key: value}


@transform
def layernorm_affine(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """LayerNorm elementwise_affine: passed on (to torch2ms.runtime.LayerNorm) unless it is True."""
    return _unless_true("elementwise_affine", value)


@transform
def layernorm_bias(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """LayerNorm bias: passed on (to torch2ms.runtime.LayerNorm) unless it is True."""
    return _unless_true("bias", value)


def _int1(value: str | None, key: str) -> dict[str, str]:
    """A 1-D layer's size argument: MindSpore's Conv1d/Conv1dTranspose take only an int."""
    v = literal(value)
    if isinstance(v, (tuple, list)):
        if len(v) != 1 or not isinstance(v[0], int):
            raise Unsupported(_("{key}={value}: a 1-D convolution takes one value").format(key=key, value=value))
        return {key: repr(v[0])}
    if v is NOT_LITERAL and value is not None:
        return {key: f"({value}[0] if isinstance({value}, (tuple, list)) else {value})"}
    return {key: value} if value is not None else {}


@transform
def int1_kernel_size(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """kernel_size of a 1-D convolution → int."""
    return _int1(value, "kernel_size")


@transform
def int1_stride(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """stride of a 1-D convolution → int."""
    return _int1(value, "stride")


@transform
def int1_dilation(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """dilation of a 1-D convolution → int."""
    return _int1(value, "dilation")


@handler
def module_list(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """``nn.ModuleList([...])`` → ``CellList([...])``; built empty → ``torch2ms.runtime.ModuleList()``.

    Given anything else (``ModuleList(fns)`` of a ``*fns`` tuple, a generator): ``ModuleList(list(...))``.

    Built empty (``ModuleList()``, ``ModuleList([])``), the cells appended later must keep the parent's
    name prefix, which CellList does not give them (``0.w`` for ``layers.0.w``: torch's state dict would
    not load)."""
    modules = bound.get("modules")
    if modules is None or modules.strip() in ("[]", "()", "None"):
        return "torch2ms.runtime.ModuleList()"
    if not modules.strip().startswith("["):  # a tuple, a generator, a name: CellList takes a list only
        return f"torch2ms.runtime.ModuleList(list({modules}))"
    return f"{entry.ms}({modules})"
