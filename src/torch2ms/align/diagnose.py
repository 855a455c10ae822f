"""Why a layer diverges: what differs between the two layers' configuration (known pitfalls with their
fix, then any other setting the two share, then the layer type), a transposed weight — and only when
none of that explains it, the KB's pitfall note for the layer type."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..i18n import _

# Settings the pitfall checks below explain with their fix; the generic comparison skips them.
_EXPLAINED = {"eps", "momentum", "approximate", "padding", "stride", "dilation", "groups", "kernel_size", "p"}
_SCALARS = (type(None), bool, int, float, str)


def _pair(value: Any, n: int = 2) -> tuple:
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


def _ms_attrs(cell: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(cell).items() if not k.startswith("_")} if cell is not None else {}


def _norm_approx(value: Any) -> str:
    return "tanh" if value in (True, "tanh") else "none" if value in (False, "none", None) else str(value)


def _layernorm(t: Mapping[str, Any], m: Mapping[str, Any]) -> list[str]:
    if "eps" in t and "epsilon" in m and not np.isclose(t["eps"], m["epsilon"], rtol=1e-3, atol=0):
        return [
            _(
                "LayerNorm epsilon differs: torch eps={eps:g}, MindSpore epsilon={epsilon:g} "
                "(MindSpore's default is 1e-7: pass epsilon={eps:g})"
            ).format(eps=t["eps"], epsilon=m["epsilon"])
        ]
    return []


def _gelu(t: Mapping[str, Any], m: Mapping[str, Any]) -> list[str]:
    if "approximate" not in t or "approximate" not in m:
        return []
    torch_mode, ms_mode = _norm_approx(t["approximate"]), _norm_approx(m["approximate"])
    if torch_mode == ms_mode:
        return []
    ms_text = _("the tanh approximation") if ms_mode == "tanh" else _("exact erf")
    return [
        _(
            "GELU approximation differs: torch approximate='{torch_mode}', MindSpore uses {ms_text} "
            "(nn.GELU() defaults to approximate=True: pass approximate={tanh})"
        ).format(torch_mode=torch_mode, ms_text=ms_text, tanh=torch_mode == "tanh")
    ]


def _batchnorm(t: Mapping[str, Any], m: Mapping[str, Any]) -> list[str]:
    hints = []
    if "eps" in t and "eps" in m and not np.isclose(t["eps"], m["eps"], rtol=1e-3, atol=0):
        hints.append(_("BatchNorm eps differs: torch {torch:g}, MindSpore {ms:g}").format(torch=t["eps"], ms=m["eps"]))
    # MindSpore stores 1 − (its constructor's momentum), i.e. torch's convention.
    if t.get("momentum") is not None and "momentum" in m and not np.isclose(t["momentum"], m["momentum"], atol=1e-6):
        hints.append(
            _(
                "BN momentum not inverted: torch momentum={torch:g} needs MindSpore "
                "momentum={wanted:g} (1 − m), this cell was built with momentum={built:g}"
            ).format(torch=t["momentum"], wanted=1 - t["momentum"], built=1 - m["momentum"])
        )
    return hints


def _conv(t: Mapping[str, Any], m: Mapping[str, Any]) -> list[str]:
    hints = []
    pad_mode = str(m.get("pad_mode", "")).lower()
    padding = t.get("padding")
    if pad_mode == "same" and padding != "same":
        hints.append(
            _(
                "padding: MindSpore pad_mode='same' (its default) but torch padding={padding}: "
                "use pad_mode='pad', padding={padding}"
            ).format(padding=padding)
        )
    elif pad_mode == "valid" and padding not in ("valid", None) and any(_pair(padding)):
        hints.append(_("padding: MindSpore pad_mode='valid' but torch padding={padding}").format(padding=padding))
    for torch_key, ms_key in (("stride", "stride"), ("dilation", "dilation"), ("groups", "group")):
        if torch_key not in t or ms_key not in m or _pair(t[torch_key]) == _pair(m[ms_key]):
            continue
        if isinstance(m[ms_key], (list, tuple)) and _pair(t[torch_key], len(m[ms_key])) == tuple(m[ms_key]):
            continue
        hints.append(
            _("{key} differs: torch {torch}, MindSpore {ms_key}={ms}").format(
                key=torch_key, torch=t[torch_key], ms_key=ms_key, ms=m[ms_key]
            )
        )
    return hints


def _pool(t: Mapping[str, Any], m: Mapping[str, Any]) -> list[str]:
    hints = []
    stride = t.get("stride") or t.get("kernel_size")
    if stride is not None and "stride" in m and _pair(stride) != _pair(m["stride"]):
        hints.append(
            _(
                "pooling stride differs: torch stride={torch}, MindSpore stride={ms} "
                "(MindSpore's default stride is 1, torch's is kernel_size)"
            ).format(torch=stride, ms=m["stride"])
        )
    if "kernel_size" in t and "kernel_size" in m and _pair(t["kernel_size"]) != _pair(m["kernel_size"]):
        hints.append(
            _("pooling kernel differs: torch {torch}, MindSpore {ms}").format(
                torch=t["kernel_size"], ms=m["kernel_size"]
            )
        )
    return hints


def _dropout(t: Mapping[str, Any], m: Mapping[str, Any]) -> list[str]:
    if "p" in t and "p" in m and not np.isclose(t["p"], m["p"]):
        return [
            _("Dropout p differs: torch p={torch}, MindSpore p={ms} (keep_prob is 1 − p)").format(
                torch=t["p"], ms=m["p"]
            )
        ]
    return []


def pitfall_hints(torch_class: str | None, t: Mapping[str, Any], cell: Any) -> list[str]:
    """Known pitfalls (eps, GELU approximation, BN momentum, conv padding, pooling stride, dropout p)."""
    m = _ms_attrs(cell)
    if not torch_class or not m:
        return []
    kind = torch_class.rsplit(".", 1)[-1]
    if kind == "LayerNorm":
        return _layernorm(t, m)
    if kind == "GELU":
        return _gelu(t, m)
    if kind.startswith(("BatchNorm", "SyncBatchNorm")):
        return _batchnorm(t, m)
    if kind.startswith("Conv"):
        return _conv(t, m)
    if "Pool" in kind and "Adaptive" not in kind:
        return _pool(t, m)
    if kind.startswith("Dropout"):
        return _dropout(t, m)
    return []


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def same_setting(a: Any, b: Any) -> bool:
    """torch and MindSpore values of one setting: 2 == (2, 2), None == False, 1e-5 == 1.00000001e-5."""
    if (a is None or a is False) and (b is None or b is False):
        return True
    ta, tb = _as_tuple(a), _as_tuple(b)
    if len(ta) != len(tb) and 1 in (len(ta), len(tb)):
        ta, tb = (ta * len(tb), tb) if len(ta) == 1 else (ta, tb * len(ta))
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if isinstance(x, float) or isinstance(y, float):
            if not (isinstance(x, (int, float)) and isinstance(y, (int, float))):
                return False
            if not math.isclose(x, y, rel_tol=1e-6, abs_tol=0.0):
                return False
        elif x != y:
            return False
    return True


def _ms_attr_name(entry: Any, torch_attr: str) -> str | None:
    """The MindSpore attribute holding a torch attribute's setting (None: no comparable one)."""
    if entry is None:
        return torch_attr
    if torch_attr in entry.attrs:
        return entry.attrs[torch_attr]
    rule = entry.args.get(torch_attr)
    if rule is None:
        return torch_attr
    return None if rule.transform or rule.target else rule.ms


def config_differences(torch_class: str | None, t: Mapping[str, Any], cell: Any, kb: Any) -> list[str]:
    """Every other setting both layers hold that differs, e.g. Upsample align_corners True vs False."""
    m = _ms_attrs(cell)
    entry = kb.get(torch_class) if kb is not None and torch_class else None
    kind = (torch_class or "layer").rsplit(".", 1)[-1]
    out = []
    for key, value in t.items():
        if key in _EXPLAINED:
            continue
        ms_key = _ms_attr_name(entry, key)
        if ms_key is None or ms_key not in m or not isinstance(m[ms_key], (*_SCALARS, list, tuple)):
            continue
        if not same_setting(value, m[ms_key]):
            where = ms_key if ms_key == key else f"{ms_key} (torch {key})"
            out.append(
                _("{kind} {key} differs: torch {key}={torch}, MindSpore {where}={ms}").format(
                    kind=kind, key=key, torch=repr(value), where=where, ms=repr(m[ms_key])
                )
            )
    return out


def layer_type_hint(torch_class: str | None, cell: Any, kb: Any) -> str | None:
    """The MindSpore cell is not the class the KB maps the torch layer to (e.g. ReLU for GELU)."""
    entry = kb.get(torch_class) if kb is not None and torch_class else None
    if entry is None or cell is None or entry.kind != "class" or entry.status not in ("direct", "args-differ"):
        return None
    expected = {entry.ms.rsplit(".", 1)[-1]} if entry.ms else set()
    expected |= {r.target.rsplit(".", 1)[-1] for r in entry.args.values() if r.target}
    if entry.ms_base:
        expected.add(entry.ms_base.rsplit(".", 1)[-1])
    if not expected or expected & {c.__name__ for c in type(cell).__mro__}:
        return None
    return _("layer type differs: torch {torch} maps to {ms}, but this MindSpore cell is {cell}").format(
        torch=entry.short, ms=entry.ms, cell=type(cell).__name__
    )


def transposed_weight_hint(
    torch_class: str | None,
    x: np.ndarray | None,
    ms_out: np.ndarray | None,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
) -> str | None:
    """A Linear whose MindSpore output equals x @ W (not x @ Wᵀ): the weight is used transposed."""
    if torch_class != "torch.nn.Linear" or x is None or ms_out is None or weight is None:
        return None
    if weight.ndim != 2 or weight.shape[0] != weight.shape[1] or x.shape[-1] != weight.shape[0]:
        return None
    candidate = x.astype(np.float64) @ weight.astype(np.float64)
    if bias is not None:
        candidate = candidate + bias
    scale = max(1.0, float(np.abs(candidate).max()))
    if candidate.shape == ms_out.shape and np.abs(candidate - ms_out).max() <= 1e-4 * scale:
        return _("the Linear/Dense weight is used transposed: MindSpore computes x @ W, torch computes x @ Wᵀ")
    return None


def describe(
    kind: str,
    detail: str,
    torch_class: str | None,
    attrs: Mapping[str, Any],
    cell: Any,
    kb: Any,
    extra: Sequence[str] = (),
) -> str:
    """One hint line: what differs between the two layers first; the KB pitfall only when nothing does."""
    parts = list(extra) + pitfall_hints(torch_class, attrs, cell) + config_differences(torch_class, attrs, cell, kb)
    if type_hint := layer_type_hint(torch_class, cell, kb):
        parts.append(type_hint)
    if kind == "shape" and not parts:
        parts.append(
            _(
                "output shape differs: check padding / stride / kernel defaults "
                "(MindSpore Conv pad_mode defaults to 'same', pooling stride to 1)"
            )
        )
    entry = kb.get(torch_class) if (kb is not None and torch_class) else None
    if not parts and entry is not None and entry.note:
        parts.append(_("KB ({api}): {note}").format(api=entry.short, note=entry.note_shown))
    if not parts and detail:
        parts.append(detail)
    return " | ".join(parts)


def container_hint(layer: str, torch_type: str, cell: Any, child: str, extra: Sequence[str] = ()) -> str:
    """The divergence is in a container's own forward code: its inputs match, what it hands on does not."""
    ms_type = type(cell).__name__ if cell is not None else _("its MindSpore cell")
    where = (
        _("{torch}.forward and {ms}.construct").format(torch=torch_type, ms=ms_type)
        if layer
        else _("the model's forward")
    )
    text = _(
        "compare {where} between receiving the inputs (they match) and calling {child}: the order of "
        "concatenated or stacked tensors, an argument order, a reshape/permute/slice, or a missing step"
    ).format(where=where, child=child)
    return " | ".join([*extra, text])
