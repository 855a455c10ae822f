"""A torch name a module imports and never reads is a re-export only when another module of the
converted project imports it from there. Then a name the KB maps is imported as MindSpore's in its
place (the importer gets the MindSpore object, no torch needed); only a name without a mapping keeps
the torch import, marked. Otherwise the import is a leftover and goes like any unused import.

Matrix: name (mapped: TensorDataset, DataLoader; unmapped: load_state_dict_from_url) x importer (none,
a sibling ``from a import X``, a package ``__init__`` re-export, ``from .a import X``, ``import a`` then
``a.X``) x file kind
(script with a main guard, module). The converted project runs with torch, torchvision, einops and
torch2ms blocked (MindSpore alone), except where the unmapped name is really re-exported: there the
torch import is kept with its mark, and the importer gets torch's working function.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from matrix_support import covering

from torch2ms.convert import convert_tree
from torch2ms.convert.imports import torch_kept_marks

NAMES = {
    "TensorDataset": ("torch.utils.data", True),
    "DataLoader": ("torch.utils.data", True),
    "load_state_dict_from_url": ("torch.hub", False),
}

# How the importer uses the name it imports (torch code, converted with the project).
USES = {
    "TensorDataset": "ds = TensorDataset(torch.ones(4, 2))\nassert len(ds) == 4\n",
    "DataLoader": (
        "from torch.utils.data import TensorDataset as TD\n"
        "loader = DataLoader(TD(torch.ones(4, 2)), batch_size=2)\nassert len(list(loader)) == 2\n"
    ),
    "load_state_dict_from_url": "",
}

# ``import a`` then ``a.X``: the importer's reads are not converted (they read a's binding itself);
# DataLoader's MindSpore name (GeneratorDataset) takes other arguments, so only its binding is checked.
ATTR_USES = {
    "TensorDataset": "ds = a.TensorDataset(torch.ones(4, 2))\nassert len(ds) == 4\n",
    "DataLoader": "",
    "load_state_dict_from_url": "",
}

IMPORTERS = ("none", "sibling", "package_init", "relative", "module_attr")
KINDS = ("script", "module")

TORCH_IMPORT = re.compile(r"^\s*(import|from) torch(\.|\s|$)", re.MULTILINE)


def _blocker(names: tuple[str, ...]) -> str:
    return textwrap.dedent(f"""
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {names!r}:
                    raise ImportError(name + " is blocked")
        sys.meta_path.insert(0, _Block())
        sys.path.insert(0, ".")
    """)


def _module_a(name: str, kind: str) -> str:
    module, _mapped = NAMES[name]
    code = f"import torch\nfrom {module} import {name}\nx = torch.zeros(3)\n"
    if kind == "script":
        code += '\n\nif __name__ == "__main__":\n    print("OK", tuple(x.shape))\n'
    return code


def _importer(name: str, spelling: str) -> str:
    return f"import torch\n{spelling} import {name}\n{USES[name]}assert callable({name})\nprint('OK')\n"


def _project(src: Path, name: str, importer: str, kind: str) -> str:
    """Write the project; the code that runs it (from the converted root)."""
    files: dict[str, str] = {}
    if importer in ("none", "sibling", "module_attr"):
        files["a.py"] = _module_a(name, kind)
    else:
        files["pkg/a.py"] = _module_a(name, kind)
    if importer == "none":
        run = "import runpy\nrunpy.run_path('a.py', run_name='__main__')\n" if kind == "script" else "import a\n"
        if kind == "module":
            run += "print('OK')\n"
    elif importer == "sibling":
        files["b.py"] = _importer(name, "from a")
        run = "import runpy\nrunpy.run_path('b.py', run_name='__main__')\n"
    elif importer == "module_attr":
        files["b.py"] = f"import torch\nimport a\n{ATTR_USES[name]}assert callable(a.{name})\nprint('OK')\n"
        run = "import runpy\nrunpy.run_path('b.py', run_name='__main__')\n"
    elif importer == "package_init":
        files["pkg/__init__.py"] = f"from .a import {name}\n"
        files["c.py"] = _importer(name, "from pkg")
        run = "import runpy\nrunpy.run_path('c.py', run_name='__main__')\n"
    else:
        files["pkg/__init__.py"] = ""
        files["pkg/b.py"] = _importer(name, "from .a")
        run = "import pkg.b\n"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
    return run


def _run(folder: Path, code: str, blocked: tuple[str, ...]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", _blocker(blocked) + code],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


CASES = [(n, i, k) for n in NAMES for i in IMPORTERS for k in KINDS]


@pytest.mark.parametrize(("name", "importer", "kind"), covering(CASES, pairs=True))
def test_unread_torch_import_is_reexport_only_when_imported(tmp_path, name, importer, kind):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    run = _project(src, name, importer, kind)
    convert_tree(src, out)
    texts = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8") for p in sorted(out.rglob("*.py"))}
    a = texts["a.py" if importer in ("none", "sibling", "module_attr") else "pkg/a.py"]
    mapped = NAMES[name][1]
    kept = importer != "none" and not mapped  # a real re-export with no MindSpore name: torch's stays
    for rel, text in texts.items():
        if kept and text is a:
            lines = text.splitlines()
            at = next(i for i, line in enumerate(lines) if TORCH_IMPORT.match(line))
            assert lines[at] == f"from {NAMES[name][0]} import {name}", text
            assert lines[at - 1].strip() in torch_kept_marks(), text
            assert len(TORCH_IMPORT.findall(text)) == 1, text
        else:
            assert TORCH_IMPORT.search(text) is None, f"{rel}:\n{text}"
    if mapped and importer != "none":
        assert re.search(rf"^from mindspore\.\S+ import \w+( as {name})?  # noqa", a, re.MULTILINE), a
    blocked = ("torchvision", "torch2ms", "einops") if kept else ("torch", "torchvision", "torch2ms", "einops")
    res = _run(out, run, blocked)
    assert res.returncode == 0, res.stderr[-3000:] + "\n" + "\n".join(f"== {r}\n{t}" for r, t in texts.items())
    assert res.stdout.strip().splitlines()[-1].startswith("OK"), res.stdout
