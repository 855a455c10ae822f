"""matplotlib without a display, for the HTML reports: a figure, its PNG bytes, and its SVG for inlining
(text kept as text, so the page's own fonts draw it, CJK included, and the labels can be read back)."""

from __future__ import annotations

import io
import re
from typing import Any

from .i18n import language

# Chinese labels: DejaVu draws the Latin text as in English, the first of these installed (Noto Sans CJK comes
# with fonts-noto-cjk) the Chinese. English keeps matplotlib's defaults.
_CJK_SANS = ["DejaVu Sans", "Noto Sans CJK SC", "Noto Sans CJK JP", "WenQuanYi Zen Hei", "SimHei"]


def _cjk_families() -> list[str]:
    """DejaVu Sans, then the first CJK family installed: matplotlib falls back glyph by glyph along a list."""
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    if not installed & set(_CJK_SANS[1:]):  # matplotlib's font cache predates the CJK fonts: add them
        for path in font_manager.findSystemFonts():
            if "SansCJK-Regular" in path or "wqy-zenhei" in path:
                font_manager.fontManager.addfont(path)
        installed = {f.name for f in font_manager.fontManager.ttflist}
    return ["DejaVu Sans", *[name for name in _CJK_SANS[1:] if name in installed][:1]]


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if language() == "zh" and matplotlib.rcParams["font.family"] != _cjk_families():
        matplotlib.rcParams["font.family"] = _cjk_families()
    return plt


def figure(width: float, height: float, columns: int = 1) -> tuple[Any, Any]:
    """(figure, axes); with ``columns`` > 1 the axes come as a tuple."""
    return pyplot().subplots(1, columns, figsize=(width, height))


def png_bytes(fig: Any, close: bool = True) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    if close:
        pyplot().close(fig)
    return buf.getvalue()


def svg_markup(fig: Any) -> str:
    """The figure as an ``<svg>`` element to put inside HTML (the XML prolog and DOCTYPE removed)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "torch2ms"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    pyplot().close(fig)
    text = buf.getvalue()
    start = text.find("<svg")
    return re.sub(r"<!--.*?-->", "", text[start:], flags=re.S) if start >= 0 else ""
