"""R1/R3: the operator inventory and static-graph risks, on hand-written code and on real torchvision code."""

import json
from pathlib import Path

from requires_support import require_package_dir

from torch2ms.analysis.scan import scan_path, scan_source
from torch2ms.cli import main
from torch2ms.convert.estimate import scan_with_estimate

MODEL = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import nn as tnn
from torch.nn import Conv2d


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = Conv2d(3, 8, 3, padding=1)
        self.bn = tnn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 2)
        self.calls = 0

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        n = x.size(0)
        x.add_(1)
        try:
            x = x.view(n, -1)
        except RuntimeError:
            pass
        self.calls += 1
        v = x.sum().item()
        return self.fc(torch.flatten(x, 1)), v
"""


def apis(report):
    return {(u.api, u.line) for u in report.uses}


def test_r1_imports_resolved_to_full_names():
    rep = scan_source(MODEL, "net.py")
    found = apis(rep)
    assert ("torch.nn.Module", 8) in found
    assert ("torch.nn.Conv2d", 11) in found  # from torch.nn import Conv2d
    assert ("torch.nn.BatchNorm2d", 12) in found  # from torch import nn as tnn
    assert ("torch.nn.Linear", 13) in found  # import torch.nn as nn
    assert ("torch.nn.functional.relu", 17) in found  # import torch.nn.functional as F
    assert ("torch.flatten", 26) in found


def test_r1_status_from_kb_and_unknown_listed():
    rep = scan_source(MODEL + "\ny = torch.not_a_real_api(1)\n", "net.py")
    by_api = {u.api: u for u in rep.uses}
    assert by_api["torch.nn.Conv2d"].status == "args-differ"
    assert by_api["torch.not_a_real_api"].status == "unknown"


def test_r1_tensor_methods_with_confidence():
    rep = scan_source(MODEL + "\ndef helper(t):\n    return t.permute(0, 2, 1)\n", "net.py")
    by = {(u.api, u.line): u for u in rep.uses}
    assert by[("torch.Tensor.view", 21)].confidence == "certain"  # x is a forward argument
    assert by[("torch.Tensor.size", 18)].confidence == "certain"
    assert by[("torch.Tensor.permute", 29)].confidence == "likely"  # unknown receiver, tensor-only name


def test_r3_static_graph_risks_in_forward():
    rep = scan_source(MODEL, "net.py")
    risks = {(r.code, r.line) for r in rep.risks}
    assert ("size-call", 18) in risks
    assert ("inplace-method", 19) in risks
    assert ("try-except", 20) in risks
    assert ("self-mutation", 24) in risks
    assert ("host-sync", 25) in risks
    for r in rep.risks:
        assert r.fix and r.message and r.function == "forward"


def test_r3_no_risks_outside_forward():
    src = "import torch\nimport torch.nn as nn\n\ndef f(x):\n    try:\n        return x.size(0)\n    except Exception:\n        return 0\n"
    assert scan_source(src, "f.py").risks == []


def test_r1_effort_estimate(tmp_path):
    """The estimate is the conversion's count (tests/test_scan_effort_agrees.py: equal to convert's report);
    an unknown API is left for the user, the risks convert fixes are not."""
    (tmp_path / "net.py").write_text(MODEL + "\ny = torch.not_a_real_api(1)\n")
    eff = scan_with_estimate(tmp_path / "net.py", jobs=1).effort()
    assert eff["automatic"] > 0 and eff["manual"] >= 1


def test_bad_input_reported_and_rest_scanned(tmp_path):
    (tmp_path / "good.py").write_text(MODEL)
    (tmp_path / "syntax.py").write_text("import torch\ndef f(:\n")
    (tmp_path / "latin.py").write_bytes(b"import torch\nx = '\xff\xfe caf\xe9'\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02torch")
    (tmp_path / "big.py").write_bytes(b"#" * (6 * 1024 * 1024))
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "loop").symlink_to(sub)  # directory symlink loop
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")  # file symlink loop
    rep = scan_path(tmp_path)
    errors = {Path(f.path).name: f.error for f in rep.errors}
    assert "line 2" in errors["syntax.py"]
    assert "decode" in errors["latin.py"] and "coding" in errors["latin.py"]
    assert "binary" in errors["binary.py"]
    assert "MB" in errors["big.py"]
    assert "loop" in errors["loop"]
    assert "symlink" in errors["a.py"] and "symlink" in errors["b.py"]
    good = next(f for f in rep.files if f.path == "good.py")
    assert good.error is None and len(good.uses) > 5


def test_encoding_cookie_respected(tmp_path):
    p = tmp_path / "cookie.py"
    p.write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\nx = torch.zeros(2)  # caf\xe9\n")
    rep = scan_path(p)
    assert rep.files[0].error is None
    assert {u.api for u in rep.files[0].uses} == {"torch.zeros"}


def test_cli_formats_and_fail_on(tmp_path, capsys):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "net.py").write_text(MODEL)
    out = tmp_path / "r.json"
    assert main(["scan", str(src), "--format", "json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["summary"]["files"] == 1 and data["summary"]["risks"] >= 5
    assert any(r["api"] == "torch.nn.Conv2d" and r["locations"] == ["net.py:11"] for r in data["inventory"])
    assert main(["scan", str(src), "--fail-on", "risk", "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 1
    assert "risk,net.py,18,size-call" in (tmp_path / "r.csv").read_text()
    assert main(["scan", str(src), "--format", "md", "-o", str(tmp_path / "r.md")]) == 0
    assert "| `torch.nn.Conv2d` | args-differ | 1 | net.py:11 |" in (tmp_path / "r.md").read_text()
    assert main(["scan", str(tmp_path / "missing")]) == 2


def _torchvision_dir() -> Path:
    return require_package_dir("torchvision")


def _line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def test_r1_real_code_torchvision_models():
    root = _torchvision_dir() / "models"
    rep = scan_path(root)
    assert not rep.errors
    assert len(rep.files) > 40 and sum(f.lines for f in rep.files) > 20000
    uses = {(p, u.api, u.line) for p, u in rep.uses}
    resnet = root / "resnet.py"
    line = _line_of(resnet, "nn.init.kaiming_normal_(")
    assert ("resnet.py", "torch.nn.init.kaiming_normal_", line) in uses
    line = _line_of(resnet, "self.maxpool = nn.MaxPool2d(")
    assert ("resnet.py", "torch.nn.MaxPool2d", line) in uses
    # AlexNet's forward flattens with torch.flatten
    line = _line_of(root / "alexnet.py", "torch.flatten(")
    assert ("alexnet.py", "torch.flatten", line) in uses
    inv = rep.inventory()
    assert inv["torch.nn.Conv2d"]["count"] > 50 and inv["torch.nn.Conv2d"]["status"] == "args-differ"
    # x.size(i) inside a forward of the detection heads is a static-graph risk.
    risks = {(p, r.code) for p, r in rep.risks}
    assert any(code == "size-call" for _, code in risks)
