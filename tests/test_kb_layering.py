"""Issue 10: the knowledge base is the bottom layer; it imports nothing else from torch2ms.

Handlers, transforms and the rewrite engine live in ``torch2ms.kb``; the differential-test harness
(``torch2ms.proof``) and weight renaming (``torch2ms.weights``) sit above it.
"""

import ast
from pathlib import Path

import pytest

KB_DIR = Path(__file__).resolve().parents[1] / "src" / "torch2ms" / "kb"


def _torch2ms_imports(source: str, path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of a torch2ms module in ``source`` (the module at ``path``),
    relative imports resolved to full names."""
    package = ["torch2ms", *path.relative_to(KB_DIR.parent).parent.parts]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "torch2ms"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] == "torch2ms":
                names = [f"{module}.{a.name}" for a in node.names] if node.module is None or node.level else [module]
                out += [(node.lineno, m) for m in names]
    return out


KB_MODULES = sorted(KB_DIR.rglob("*.py"))


@pytest.mark.parametrize("path", KB_MODULES, ids=lambda p: str(p.relative_to(KB_DIR)))
def test_issue10_kb_imports_nothing_above_it(path):
    imports = _torch2ms_imports(path.read_text(encoding="utf-8"), path)
    # torch2ms.i18n (message catalogs, standard library only) is the one module below the KB
    bad = [
        f"{path.name}:{line} imports {m}" for line, m in imports if not m.startswith(("torch2ms.kb", "torch2ms.i18n"))
    ]
    assert not bad, bad


def test_issue10_the_layering_check_sees_upward_imports():
    # The parser itself: a relative import out of kb and an absolute one are both caught.
    src = "from ...weights.rename import convert_state_dict\nimport torch2ms.runtime\nfrom ..rewrite import paren\n"
    found = [m for _, m in _torch2ms_imports(src, KB_DIR / "handlers" / "fake.py")]
    assert found == ["torch2ms.weights.rename.convert_state_dict", "torch2ms.runtime", "torch2ms.kb.rewrite.paren"]
