"""matplotlib without a display, for the HTML reports: a figure, its PNG bytes, and its SVG for inlining
(text kept as text, so the page's own fonts draw it, CJK included, and the labels can be read back)."""

from __future__ import annotations

import io
import re
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(width: float, height: float, columns: int = 1) -> tuple[Any, Any]:
    """(figure, axes); with ``columns`` > 1 the axes come as a tuple."""
    return _pyplot().subplots(1, columns, figsize=(width, height))


def png_bytes(fig: Any, close: bool = True) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    if close:
        _pyplot().close(fig)
    return buf.getvalue()


def svg_markup(fig: Any) -> str:
    """The figure as an ``<svg>`` element to put inside HTML (the XML prolog and DOCTYPE removed)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "torch2ms"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    _pyplot().close(fig)
    text = buf.getvalue()
    start = text.find("<svg")
    return re.sub(r"<!--.*?-->", "", text[start:], flags=re.S) if start >= 0 else ""
