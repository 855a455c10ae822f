"""The messages the source asks to translate, read with ``ast`` (what Babel's extraction also finds)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "torch2ms"
KEYWORDS = {"_": 1, "N_": 1, "ngettext": 2}  # how many leading string arguments are messages


def _in_fstrings(tree: ast.AST) -> set[int]:
    return {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)}


def source_messages() -> tuple[dict[str, str], list[str]]:
    """msgid → first place it is used; and the places where a message is an f-string (it cannot be
    looked up) or the call sits inside an f-string (Babel's extractor does not see it). ``_(NAME)``
    translates a constant marked with ``N_()`` where it is defined."""
    found: dict[str, str] = {}
    wrong: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nested = _in_fstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KEYWORDS):
                continue
            where = f"{path.relative_to(SRC.parent)}:{node.lineno}"
            args = node.args[: KEYWORDS[node.func.id]]
            if id(node) in nested or any(isinstance(a, ast.JoinedStr) for a in args):
                wrong.append(where)
                continue
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.setdefault(arg.value, where)
    return found, wrong
