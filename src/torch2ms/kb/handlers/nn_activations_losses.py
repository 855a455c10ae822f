"""Transforms and handlers for torch.nn activation layers, loss layers and torch.nn.utils."""

from __future__ import annotations

from ..schema import Entry
from ..transforms import NOT_LITERAL, Unsupported, handler, literal, transform
from .common import rule_key


@transform
def act_gelu_approximate(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
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
    raise Unsupported(f"GELU(approximate={value}) is not a torch mode")


@transform
def act_softmax_dim(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """Softmax/LogSoftmax/Softmin ``dim`` → ``axis``; an omitted dim is torch's legacy implicit dim."""
    if value is None or literal(value) is None:
        raise Unsupported(
            f"{entry.short}() without dim uses torch's deprecated implicit dim (0 for 1-D/3-D input, 1 otherwise); "
            "pass the dim explicitly (MindSpore's default axis is -1)"
        )
    return {"axis": value}


@transform
def act_alpha_one(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """nn.ELU on CPU only accepts alpha=1.0 ("In Elu, alpha must be 1.0f")."""
    v = literal(value) if value is not None else 1.0
    if isinstance(v, (int, float)) and not isinstance(v, bool) and float(v) == 1.0:
        return {}
    raise Unsupported(
        f"nn.ELU(alpha={value}): MindSpore's Elu kernel only supports alpha=1.0; "
        "use ops.where(x > 0, x, alpha * (ops.exp(x) - 1)) in construct()"
    )


@transform
def loss_reduction(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """``reduction`` emitted explicitly (several MindSpore losses default to 'none')."""
    src = value if value is not None else entry.sig_defaults().get("reduction", "'mean'")
    return {rule_key(entry, "loss_reduction"): src}


@transform
def loss_kl_reduction(value: str | None, bound: dict[str, str], entry: Entry) -> dict[str, str]:
    """KLDivLoss reduction; torch's default 'mean' averages over every element."""
    src = value if value is not None else "'mean'"
    return {"reduction": src}


def _legacy_reduction(bound: dict[str, str], entry: Entry) -> None:
    for k in ("size_average", "reduce"):
        if k in bound and literal(bound[k]) is not None:
            raise Unsupported(
                f"{entry.short}({k}=...) is deprecated in torch; convert it to reduction= first "
                "(size_average=False → 'sum', reduce=False → 'none')"
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
def loss_cross_entropy(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """nn.CrossEntropyLoss → WithLossCell(LogSoftmax(axis=1), NLLLoss(...)).

    MindSpore's nn.CrossEntropyLoss rejects int64 class labels (``the 'labels' should be Int32``) and
    the module call ``criterion(logits, labels)`` is not rewritten, so the target must take torch's
    int64 labels as they are: log-softmax over the class axis followed by nn.NLLLoss (which accepts
    int64) is the same function, keeps weight/ignore_index (default -100) and K-dimensional inputs.
    """
    _legacy_reduction(bound, entry)
    ls = bound.get("label_smoothing")
    if ls is not None and literal(ls) not in (0, 0.0):
        raise Unsupported(
            "CrossEntropyLoss(label_smoothing=...): call mindspore.ops.cross_entropy(logits, labels, weight, "
            "ignore_index, reduction, label_smoothing) in construct() (it accepts int64 labels), or use "
            "nn.CrossEntropyLoss(label_smoothing=...) with labels.astype(mindspore.int32) at the call"
        )
    kws = _kw(bound, entry, ["weight", "ignore_index", "reduction"])
    return f"mindspore.nn.WithLossCell(mindspore.nn.LogSoftmax(axis=1), mindspore.nn.NLLLoss({', '.join(kws)}))"


@handler
def loss_nll(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """nn.NLLLoss: same keywords; the deprecated size_average/reduce are refused."""
    _legacy_reduction(bound, entry)
    kws = _kw(bound, entry, ["weight", "ignore_index", "reduction"])
    return f"mindspore.nn.NLLLoss({', '.join(kws)})"


@handler
def loss_kl_div(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """nn.KLDivLoss: MindSpore has no log_target; for log-space targets feed exp(target)."""
    _legacy_reduction(bound, entry)
    lt = bound.get("log_target")
    if lt is not None and literal(lt) not in (False,):
        raise Unsupported(
            "KLDivLoss(log_target=True) has no MindSpore form: pass exp(target) to nn.KLDivLoss, "
            "or compute ops.exp(t) * (t - x) yourself"
        )
    kws = _kw(bound, entry, ["reduction"])
    return f"mindspore.nn.KLDivLoss({', '.join(kws)})"
