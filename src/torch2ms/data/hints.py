"""Read the two pipeline descriptions (collect.describe_*) for configuration pitfalls.

Numbers decide the verdict; these hints only explain (attached to a numeric finding with the same
pitfall) or warn about a trap the first K batches did not reach.
"""

from __future__ import annotations

from typing import Any

from ..i18n import _
from .diagnose import WARN, Finding

_PIL_TORCH_OPS = {"Resize", "CenterCrop", "RandomResizedCrop", "RandomCrop", "RandomRotation", "ColorJitter"}


def _ops(cfg: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [attrs for op, attrs in cfg.get("ops", []) if op == name]


def config_hints(t_cfg: dict[str, Any], m_cfg: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    t_names = {op for op, _ in t_cfg.get("ops", [])}
    decodes = _ops(m_cfg, "Decode")
    numpy_path = bool(decodes) and all(d.get("to_pil") == "False" for d in decodes)
    if numpy_path and t_names & _PIL_TORCH_OPS:
        out.append(
            Finding(
                WARN,
                "decode_pil",
                _("MindSpore uses Decode() (numpy/OpenCV path) while torchvision transforms run on PIL images"),
                evidence=["MindSpore Decode(to_pil=False)"],
            )
        )
    # on a PIL image (Decode(to_pil=True)) MindSpore's Resize and CenterCrop call PIL and match torchvision
    t_interp = {a.get("interpolation") for a in _ops(t_cfg, "Resize")}
    m_interp = {a.get("interpolation") for a in _ops(m_cfg, "Resize")}
    if numpy_path and "BICUBIC" in t_interp and "BICUBIC" in m_interp:
        out.append(
            Finding(
                WARN,
                "interpolation",
                _(
                    "both Resize use BICUBIC: on a numpy image MindSpore's BICUBIC "
                    "is OpenCV's, torchvision's is PIL's: use Inter.PILCUBIC"
                ),
            )
        )
    if numpy_path and "CenterCrop" in t_names and _ops(m_cfg, "CenterCrop"):
        out.append(
            Finding(
                WARN,
                "center_crop",
                _(
                    "both pipelines CenterCrop and MindSpore crops a numpy image: "
                    "offsets differ by 1 px where (size − crop) % 4 == 3"
                ),
            )
        )
    seen_to_tensor = False
    for op, attrs in m_cfg.get("ops", []):
        seen_to_tensor |= op in ("ToTensor", "HWC2CHW")
        if op == "Normalize" and seen_to_tensor and attrs.get("is_hwc") == "True":
            out.append(Finding(WARN, "normalize_hwc", "MindSpore Normalize(is_hwc=True) after ToTensor/HWC2CHW"))
    ts, ms = t_cfg.get("shuffle"), m_cfg.get("shuffle")
    if ts is not None and ms is not None and ts != ms:
        out.append(
            Finding(WARN, "shuffle", _("torch shuffle={torch}, MindSpore source shuffles={ms}").format(torch=ts, ms=ms))
        )
    dl, dr = t_cfg.get("drop_last"), m_cfg.get("drop_remainder")
    if dl is not None and dr is not None and dl != dr:
        out.append(Finding(WARN, "drop_last", f"DataLoader drop_last={dl}, batch drop_remainder={dr}"))
    return out


_RELATED = {"decode_pil": {"interpolation"}, "interpolation": {"decode_pil"}, "normalize_hwc": {"normalize"}}


def merge_same(findings: list[Finding]) -> list[Finding]:
    """One finding per (pitfall, column): later ones become evidence of the first."""
    out: list[Finding] = []
    for f in findings:
        first = next((g for g in out if (g.pitfall, g.column) == (f.pitfall, f.column)), None)
        if first is None:
            out.append(f)
        else:
            first.evidence.append(f.message)
            first.evidence += f.evidence
    return out


def merge_hints(findings: list[Finding], hints: list[Finding]) -> list[Finding]:
    """A hint whose pitfall a numeric finding already names becomes that finding's evidence."""
    out = list(findings)
    for h in hints:
        keys = {h.pitfall} | _RELATED.get(h.pitfall, set())
        same = [f for f in out if f.pitfall in keys and f.level != "info"]
        if same:
            if not any(h.message in e for e in same[0].evidence):
                same[0].evidence.append(_("pipeline: {message}").format(message=h.message))
        else:
            out.append(h)
    return out
