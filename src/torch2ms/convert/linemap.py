"""The line map ``convert`` writes into OUT: each converted line back to its original line, and the
KB entries the converter used on that original line (``compare --api`` names lines with it).

Format (``torch2ms-linemap.json``)::

    {"version": 1, "source": "/abs/path/of/SRC",
     "files": {"pkg/model.py": {"lines": {"12": 13, ...},            # converted line -> original line
                                "kb": {"13": [{"api": "torch.nn.functional.gelu", "note": "..."}]}}}}

The converter's output itself is untouched; the map is computed from the two texts (matching lines
first, then the changed runs between them line by line) and from the changes the converter recorded.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LINEMAP_JSON = "torch2ms-linemap.json"
_MARK = "# torch2ms:"


def line_map(original: str, converted: str) -> dict[int, int]:
    """Converted line number → original line number (1-based); lines the converter added are absent."""
    a, b = original.splitlines(), converted.splitlines()
    out: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, [s.strip() for s in a], [s.strip() for s in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            out.update({j1 + k + 1: i1 + k + 1 for k in range(j2 - j1)})
        elif tag == "replace":
            body = [j for j in range(j1, j2) if not b[j].strip().startswith(_MARK)]
            for n, j in enumerate(body):
                out[j + 1] = i1 + min(i2 - i1 - 1, n * (i2 - i1) // max(1, len(body))) + 1
    return out


def _kb_by_line(changes: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    kb: dict[str, list[dict[str, str]]] = {}
    for change in changes:
        if change.get("line") and change.get("action") != "not-converted":
            kb.setdefault(str(change["line"]), []).append({"api": change["api"], "note": change.get("note", "")})
    return kb


def write_line_map(tmp: Path, base: Path, files: Iterable[Any]) -> None:
    """Write LINEMAP_JSON into TMP (the OUT being built) for every converted file of ``files``."""
    entries: dict[str, Any] = {}
    for result in files:
        if not result.changed or result.error:
            continue
        try:
            original = (base / result.path).read_text(encoding="utf-8", errors="replace")
            converted = (tmp / result.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = line_map(original, converted)
        entries[result.path] = {"lines": {str(k): v for k, v in lines.items()}, "kb": _kb_by_line(result.changes)}
    data = {"version": 1, "source": str(base.resolve()), "files": entries}
    (tmp / LINEMAP_JSON).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
