"""Issue 22 §2: converted scripts start from where users start them.

A project converted as one holds scripts in nested folders; the vendored ``torch2ms_runtime/`` sits once at the
converted root. Each converted script must run with ``cd its/folder && python script.py``, with
``python path/to/script.py`` from anywhere, and a package module with ``python -m pkg.module`` from the
root — MindSpore alone (torch, torchvision, torch2ms blocked), nothing on PYTHONPATH — and print what the
original prints under torch, started the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from torch2ms.convert import convert_tree

# torch, torchvision and torch2ms unimportable (as in tests/test_runtime_vendor.py); sys.path is left as the
# launch mode made it.
BLOCKER = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision", "torch2ms", "einops"):
                raise ImportError(f"{name} is blocked: the converted project must run with MindSpore alone")
    sys.meta_path.insert(0, _Block())
""")

# Every file uses a runtime helper (Normal, ckpt_path) so that every one imports torch2ms_runtime.
NORMAL = "Normal(torch.tensor([0.5, -1.0]), torch.tensor([1.5, 0.5]))"
FILES = {
    # a library folder that scripts elsewhere reach with their own sys.path edit
    "lib/util.py": f"""
        import torch
        from torch.distributions import Normal


        def scale(x):
            return {NORMAL}.log_prob(torch.tensor([x, x]))
    """,
    # a script two folders down, with a sibling module and a module from another folder
    "apps/deep/helper.py": """
        import torch
        import torch.nn as nn


        def twice(x):
            torch.manual_seed(0)
            torch.save(nn.Linear(1, 1).state_dict(), "w.pth")
            return torch.cat([x, x])
    """,
    "apps/deep/train.py": """
        import json
        import os
        import sys

        sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
        import torch
        from helper import twice
        from util import scale

        print(json.dumps(twice(scale(0.25)).tolist()))
    """,
    # a script one folder down whose runtime import sits inside a function only
    "tools/one.py": f"""
        import json


        def main():
            import torch
            from torch.distributions import Normal

            print(json.dumps({NORMAL}.log_prob(torch.tensor([0.3, 0.4])).tolist()))


        if __name__ == "__main__":
            main()
    """,
    # a package run with -m from the root
    "pkg/__init__.py": "",
    "pkg/sub/__init__.py": "",
    "pkg/sub/mod.py": f"""
        import torch
        from torch.distributions import Normal


        def f():
            return {NORMAL}.log_prob(torch.tensor([1.0, 2.0])) * 2
    """,
    "pkg/sub/run.py": """
        import json

        import torch
        from pkg.sub.mod import f

        print(json.dumps((f() + torch.ones(2)).tolist()))
    """,
    # a script at the root
    "main.py": f"""
        import json

        import torch
        from torch.distributions import Normal

        print(json.dumps({NORMAL}.log_prob(torch.tensor([0.1, 0.2])).tolist()))
    """,
}

# The converted root is itself a package: its modules import the runtime relatively first.
PACKAGE_FILES = {
    "__init__.py": "",
    "sub/__init__.py": "",
    "sub/mod.py": f"""
        import json

        import torch
        from torch.distributions import Normal


        def f():
            return {NORMAL}.log_prob(torch.tensor([-1.0, 0.0])) * 3


        if __name__ == "__main__":
            print(json.dumps(f().tolist()))
    """,
    "sub/run.py": """
        import json

        import torch
        from .mod import f

        print(json.dumps((f() - torch.ones(2)).tolist()))
    """,
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("entry")
    src, proj = base / "src", base / "pkgsrc" / "proj"
    _write(src, FILES)
    _write(proj, PACKAGE_FILES)
    convert_tree(src, base / "out")
    convert_tree(proj, base / "pkgout" / "proj")
    assert (base / "out" / "torch2ms_runtime" / "__init__.py").is_file()
    assert not (base / "out" / "apps" / "deep" / "torch2ms_runtime").exists()  # one copy, at the root
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return {
        "torch": src,
        "ms": base / "out",
        "torch_pkg": proj.parent,
        "ms_pkg": base / "pkgout",
        "anywhere": elsewhere,
    }


def _launch(mode: str, target: str, tree: Path, anywhere: Path) -> tuple[Path, str]:
    """(working folder, python code) that starts ``target`` the way ``mode`` says, sys.path as Python sets it."""
    if mode == "module":  # python -m target, from the root: the working folder first on sys.path
        code = f"import runpy, sys\nsys.path.insert(0, '')\nrunpy.run_module({target!r}, run_name='__main__', alter_sys=True)\n"
        return tree, code
    path = tree / target
    cwd = {"own_folder": path.parent, "root": tree, "anywhere": anywhere}[mode]
    shown = path.name if mode == "own_folder" else os.path.relpath(path, cwd)
    # python script.py: the script's folder first on sys.path, the working folder not on it
    code = (
        "import os, runpy, sys\n"
        f"sys.path.insert(0, os.path.dirname(os.path.abspath({shown!r})))\n"
        f"runpy.run_path({shown!r}, run_name='__main__')\n"
    )
    return cwd, code


def _run(cwd: Path, code: str, block: bool) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    prelude = BLOCKER if block else ""
    # -c puts the working folder first on sys.path: drop it, the launch code sets sys.path[0] as Python would
    res = subprocess.run(
        [sys.executable, "-c", prelude + "import sys\nsys.path.pop(0)\n" + code],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


CASES = [
    (mode, target, False)
    for target in ("apps/deep/train.py", "tools/one.py", "main.py")
    for mode in ("own_folder", "root", "anywhere")
] + [
    ("module", "pkg.sub.run", False),
    ("module", "proj.sub.run", True),
    ("module", "proj.sub.mod", True),
    ("own_folder", "proj/sub/mod.py", True),
    ("anywhere", "proj/sub/mod.py", True),
]


@pytest.mark.parametrize(("mode", "target", "packaged"), CASES)
def test_converted_script_starts_where_users_start_it(trees, mode, target, packaged):
    torch_tree, ms_tree = (trees["torch_pkg"], trees["ms_pkg"]) if packaged else (trees["torch"], trees["ms"])
    want = _run(*_launch(mode, target, torch_tree, trees["anywhere"]), block=False)
    got = _run(*_launch(mode, target, ms_tree, trees["anywhere"]), block=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_only_the_first_top_level_runtime_import_carries_the_fallback(trees):
    """One fallback per file (the first top-level import: the others then find the package), none at the root,
    and the path climbs as many folders as the file sits below the root."""
    ms = trees["ms"]
    deep = (ms / "apps" / "deep" / "helper.py").read_text(encoding="utf-8")
    assert deep.count("except ImportError:") == 1 and '"../.."' in deep
    assert '"..")' in (ms / "lib" / "util.py").read_text(encoding="utf-8")
    assert "except ImportError" not in (ms / "main.py").read_text(encoding="utf-8")
    nested = (ms / "tools" / "one.py").read_text(encoding="utf-8")
    assert nested.count("except ImportError:") == 1  # the import inside main() carries it
