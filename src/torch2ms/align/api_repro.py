"""``compare --api``: the reproducer of the first divergent call.

A standalone script (``repro.py``) and the inputs that call got on each side (``inputs.npz``): the
script runs the original statement with torch and the converted statement with MindSpore on those
inputs — nothing else of the model — and prints their difference (exit 1 when they differ). It
needs torch, MindSpore and numpy only (and the converted project's vendored ``torch2ms_runtime``,
found through the path written into it). Names the statement reads come from the recording: its
tensors by identity with the locals / ``self`` attributes of the frame, its plain values (ints,
floats, tuples) as they were when the statement began.
"""

from __future__ import annotations

import ast
import builtins
import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from .api_record import Group, _statement_starts

REPRO_SCRIPT = "repro.py"
REPRO_INPUTS = "inputs.npz"


def statement_source(file: str, line: int) -> str:
    """The source of the statement starting at ``line`` of ``file``, dedented (its lines kept)."""
    lines = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
    span = sorted(n for n, start in _statement_starts(file).items() if start == line) or [line]
    return textwrap.dedent("\n".join(lines[n - 1] for n in span if 0 < n <= len(lines)))


def _with_result(source: str) -> str | None:
    """The statement made to leave its value in ``__out__`` (None when it is no simple statement)."""
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(node, ast.Return) and node.value is not None:
        return "__out__ = " + ast.unparse(node.value)
    if isinstance(node, ast.Expr):
        return "__out__ = " + ast.unparse(node.value)
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        first = target.elts[0] if isinstance(target, (ast.Tuple, ast.List)) and target.elts else target
        return source + "\n__out__ = " + ast.unparse(first)
    return None


def _imports(file: str) -> str:
    """The file's top-level absolute imports (also those in a top-level try/if), each allowed to fail."""
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError):
        return ""
    top = [n for node in tree.body for n in (ast.walk(node) if isinstance(node, (ast.Try, ast.If)) else [node])]
    kept = [n for n in top if isinstance(n, ast.Import) or (isinstance(n, ast.ImportFrom) and not n.level)]
    return "\n".join(f"try:\n    {ast.unparse(n)}\nexcept Exception:\n    pass" for n in kept)


def _missing(code: str, imports: str, known: set[str]) -> list[str]:
    """Names the statement reads that the reproducer would not have (a layer of the model it calls,
    a tensor the recording did not keep): with any, the statement cannot run alone."""
    tree = ast.parse(code)
    imported = {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(ast.parse(imports))
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    read |= {
        f"self.{n.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
    }
    free = read - stored - imported - known - {"self", "__out__"} - set(dir(builtins))
    return sorted(free)


def _side(group: Group, file: str) -> dict[str, Any] | None:
    code = _with_result(statement_source(file, group.line))
    if code is None:
        return None
    arrays = {name: group.inputs[i] for name, i in group.names.items() if isinstance(group.inputs[i], np.ndarray)}
    imports = _imports(file)
    missing = _missing(code, imports, set(arrays) | set(group.scalars))
    return {"code": code, "imports": imports, "arrays": arrays, "scalars": group.scalars, "missing": missing}


def write_reproducer(
    folder: Path, first: dict[str, Any], t: Group, m: Group, runtime_root: str | None
) -> tuple[Path | None, list[str]]:
    """Write ``repro.py`` and ``inputs.npz`` into ``folder`` for the first divergent pair: (the script,
    []) or, when a side's statement cannot stand alone, (None, the names it would lack)."""
    found = {"torch": _side(t, t.file), "ms": _side(m, m.file)}
    sides = {side: s for side, s in found.items() if s is not None}
    if len(sides) != len(found):
        return None, ["<statement>"]
    missing = sorted({name for s in sides.values() for name in s["missing"]})
    if missing:
        return None, missing
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {f"{side}:{name}": a for side, s in sides.items() for name, a in s["arrays"].items()}
    np.savez(folder / REPRO_INPUTS, **arrays)
    settings = {
        side: {"code": s["code"], "imports": s["imports"], "scalars": s["scalars"]} for side, s in sides.items()
    }
    o, c = first["original"], first["converted"]
    text = _SCRIPT.format(
        torch_where=f"{o['file']}:{o['line']}",
        ms_where=f"{c['file']}:{c['line']}",
        settings=json.dumps(settings, indent=1, default=str),
        runtime=json.dumps(runtime_root),
    )
    (folder / REPRO_SCRIPT).write_text(text, encoding="utf-8")
    return folder / REPRO_SCRIPT, []


_SCRIPT = '''"""Reproducer written by torch2ms compare --api: the first call whose output differs.

torch     {torch_where}
MindSpore {ms_where}

Runs each side's statement alone on the inputs it got in the model run (inputs.npz) and prints the
difference; exit status 1 when they differ. Needs numpy, torch and MindSpore.
"""

import json
import os
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = {runtime}  # the converted project's root (its vendored torch2ms_runtime)
SETTINGS = json.loads(r"""{settings}""")


def run(side, to_tensor):
    data = np.load(os.path.join(HERE, "inputs.npz"))
    ns = {{"__name__": "repro_" + side}}
    exec(SETTINGS[side]["imports"], ns)
    values = dict(SETTINGS[side]["scalars"])
    values.update({{k.split(":", 1)[1]: to_tensor(data[k]) for k in data.files if k.startswith(side + ":")}})
    attrs = {{k[5:]: v for k, v in values.items() if k.startswith("self.")}}
    ns.update({{k: v for k, v in values.items() if not k.startswith("self.")}})
    ns["self"] = types.SimpleNamespace(**attrs)
    exec(SETTINGS[side]["code"], ns)
    out = ns["__out__"]
    return out[0] if isinstance(out, (tuple, list)) else out


def main():
    if RUNTIME and RUNTIME not in sys.path:
        sys.path.insert(0, RUNTIME)
    import torch

    print("torch     {torch_where}:", SETTINGS["torch"]["code"].splitlines()[0])
    print("MindSpore {ms_where}:", SETTINGS["ms"]["code"].splitlines()[0])
    t = run("torch", lambda a: torch.from_numpy(a.copy())).detach().cpu().numpy()
    import mindspore as ms

    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        m = run("ms", ms.Tensor).asnumpy()
    except Exception as exc:  # the converted statement raises where the original does not
        print("MindSpore raised:", type(exc).__name__, str(exc).strip().splitlines()[0])
        return 1
    if t.shape != m.shape:
        print("shapes differ:", t.shape, m.shape)
        return 1
    ft, fm = t.astype(np.float64), m.astype(np.float64)
    finite = np.isfinite(ft) & np.isfinite(fm)
    odd = not np.array_equal(np.where(finite, 0, ft), np.where(finite, 0, fm), equal_nan=True)
    diff = float(np.abs(ft - fm)[finite].max()) if finite.any() else 0.0
    scale = max(float(np.abs(ft[finite]).max()) if finite.any() else 0.0, 1e-3)
    print(f"max abs difference: {{diff:.6g}} (relative {{diff / scale:.3g}})")
    if odd:
        print("inf/nan differ: torch", int((~np.isfinite(ft)).sum()), "MindSpore", int((~np.isfinite(fm)).sum()))
    return 1 if odd or diff > 1e-4 * scale else 0


if __name__ == "__main__":
    sys.exit(main())
'''
