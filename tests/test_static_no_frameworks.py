"""scan, lookup and kb check are static: they run with torch, torchvision and MindSpore hidden."""

import subprocess
import sys
import textwrap

BLOCK = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision", "mindspore", "numpy"):
                raise ImportError(f"{name} is blocked in this test")
    sys.meta_path.insert(0, _Block())
""")


def run(code: str):
    return subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )


def test_r1_scan_and_lookup_without_torch_or_mindspore(tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch.nn as nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x.view(1, -1)\n"
    )
    res = run(f"""
        from torch2ms.cli import main
        assert main(["scan", {str(tmp_path)!r}, "--format", "json", "-o", {str(tmp_path / "r.json")!r}]) == 0
        assert main(["lookup", "nn.Conv2d", "--json"]) == 0
        assert main(["kb", "check", "--no-targets"]) == 0
        import sys
        assert not any(m.split(".")[0] in ("torch", "mindspore", "numpy") for m in sys.modules)
        print("STATIC-OK")
    """)
    assert "STATIC-OK" in res.stdout, res.stderr[-2000:]
    assert '"torch.nn.Module"' in (tmp_path / "r.json").read_text()
