"""Transforms and handlers for torch.nn activation layers, loss layers and torch.nn.utils."""

from __future__ import annotations

from ...i18n import _
from ..rewrite import render_by_rules
from ..schema import Entry
from ..source import NOT_LITERAL, literal
from ..transforms import Unsupported, handler, transform


@transform
def gelu_approximate(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """torch GELU ``approximate='none'|'tanh'`` → MindSpore ``approximate=False|True``.

    MindSpore's nn.GELU defaults to the tanh approximation; torch's default is the exact erf form,
    so the keyword is always emitted.
    """
    v = literal(value) if value is not None else "none"
    if v == "none":
        return {"approximate": "False"}
    if v == "tanh":
        return {"approximate": "True"}
    if v is NOT_LITERAL:
        return {"approximate": f"({value}) == 'tanh'"}
    raise Unsupported(_("GELU(approximate={value}) is not a torch mode").format(value=value))


@transform
def softmax_dim(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """Softmax/LogSoftmax/Softmin ``dim`` → ``axis``; an omitted dim is torch's legacy implicit dim."""
    if value is None or literal(value) is None:
        raise Unsupported(
            _(
                "{api}() without dim uses torch's deprecated implicit dim (0 for 1-D/3-D input, 1 otherwise); "
                "pass the dim explicitly (MindSpore's default axis is -1)"
            ).format(api=entry.short)
        )
    return {"axis": value}


@handler
def softmax_layer(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """nn.Softmax/LogSoftmax/Softmin(dim) → MindSpore's layer; no dim → torch2ms.runtime's, with torch's implicit dim."""
    dim = bound.get("dim")
    if dim is not None and isinstance(literal(dim), int):
        return render_by_rules(entry, bound)
    name = entry.torch.rsplit(".", 1)[1]
    return f"torch2ms.runtime.{name}({'' if dim is None else dim})"


@transform
def alpha_one(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """nn.ELU on CPU only accepts alpha=1.0 ("In Elu, alpha must be 1.0f")."""
    v = literal(value) if value is not None else 1.0
    if isinstance(v, (int, float)) and not isinstance(v, bool) and float(v) == 1.0:
        return {}
    raise Unsupported(
        _(
            "nn.ELU(alpha={value}): MindSpore's Elu kernel only supports alpha=1.0; "
            "use ops.where(x > 0, x, alpha * (ops.exp(x) - 1)) in construct()"
        ).format(value=value)
    )


def _legacy_reduction(bound: dict[str, str], entry: Entry) -> None:
    for k in ("size_average", "reduce"):
        if k in bound and literal(bound[k]) is not None:
            raise Unsupported(
                _(
                    "{api}({k}=...) is deprecated in torch; convert it to reduction= first "
                    "(size_average=False → 'sum', reduce=False → 'none')"
                ).format(api=entry.short, k=k)
            )


def _kw(bound: dict[str, str], entry: Entry, names: list[str]) -> list[str]:
    """``name=value`` for the bound arguments among ``names`` whose value is not the torch default."""
    defaults = entry.sig_defaults()
    out = []
    for n in names:
        if n in bound and (n not in defaults or bound[n].strip() != defaults[n]):
            out.append(f"{n}={bound[n]}")
    return out


@handler
def cross_entropy(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """nn.CrossEntropyLoss → MindSpore's nn.CrossEntropyLoss taking int64 labels (runtime CrossEntropyLoss).

    MindSpore's nn.CrossEntropyLoss equals torch's (weight, ignore_index, reduction, label_smoothing,
    probability targets, K-dimensional inputs) but rejects int64 class labels, and the criterion's call
    ``criterion(logits, labels)`` is the user's: the runtime subclass casts them to int32 there.
    """
    _legacy_reduction(bound, entry)
    kws = _kw(bound, entry, ["weight", "ignore_index", "reduction", "label_smoothing"])
    return f"torch2ms.runtime.CrossEntropyLoss({', '.join(kws)})"


@handler
def triplet_margin(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """nn.TripletMarginLoss → nn.TripletMarginWithDistanceLoss (default distance = pairwise L2, eps 1e-6).

    MindSpore's own nn.TripletMarginLoss has no CPU kernel ("Unsupported op [TripletMarginLoss] on
    CPU"); with p=2 and eps=1e-6 the distance-function form is the same function and runs everywhere.
    """
    _legacy_reduction(bound, entry)
    p = literal(bound.get("p", "2.0"))
    eps = literal(bound.get("eps", "1e-06"))
    if p != 2 or eps != 1e-6:
        raise Unsupported(
            _(
                "TripletMarginLoss(p != 2 or eps != 1e-6): MindSpore's nn.TripletMarginLoss has no CPU kernel; use "
                "nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: ops.norm(a - b + eps, ord=p, dim=-1)) "
                "or nn.TripletMarginLoss on GPU/Ascend"
            )
        )
    kws = _kw(bound, entry, ["margin", "swap", "reduction"])
    return f"mindspore.nn.TripletMarginWithDistanceLoss({', '.join(kws)})"


def _bool_arg(bound: dict[str, str], name: str, default: bool) -> bool | str:
    v = literal(bound.get(name)) if name in bound else default
    return v if isinstance(v, bool) else bound[name]


@handler
def pad_sequence(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """rnn.pad_sequence → the runtime pad_sequence (ops.pad of every tensor to the longest, then ops.stack).

    MindSpore has no pad_sequence; a padding side other than a literal 'left'/'right' is refused here.
    """
    if "sequences" not in bound:
        raise Unsupported(_("pad_sequence needs sequences"))
    side = literal(bound.get("padding_side", "'right'"))
    if side not in ("right", "left"):
        raise Unsupported(
            _("pad_sequence(padding_side={padding_side}) must be 'left' or 'right'").format(
                padding_side=bound.get("padding_side")
            )
        )
    kws = _kw(bound, entry, ["batch_first", "padding_value"]) + (["padding_side='left'"] if side == "left" else [])
    return f"torch2ms.runtime.pad_sequence({', '.join([bound['sequences'], *kws])})"


@handler
def unpad_sequence(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """rnn.unpad_sequence → a list of slices of the padded batch, one per length."""
    bf = _bool_arg(bound, "batch_first", False)
    padded, lengths = bound["padded_sequences"], bound["lengths"]
    if isinstance(bf, bool):
        idx = "[_i, :int(_l)]" if bf else "[:int(_l), _i]"
        return f"[{padded}{idx} for _i, _l in enumerate({lengths})]"
    return f"[({padded}[_i, :int(_l)] if {bf} else {padded}[:int(_l), _i]) for _i, _l in enumerate({lengths})]"


@handler
def get_total_norm(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """get_total_norm → the vector norm of the per-tensor vector norms (ops.vector_norm)."""
    if literal(bound.get("error_if_nonfinite", "False")) is not False:
        raise Unsupported(_("get_total_norm(error_if_nonfinite=True): check ops.isfinite(norm) yourself"))
    p = bound.get("norm_type", "2.0")
    return (
        f"mindspore.ops.vector_norm(mindspore.ops.stack([mindspore.ops.vector_norm(_t, {p}) "
        f"for _t in {bound['tensors']}]), {p})"
    )
