"""R20, R30: `torch2ms convert SRC -o OUT` over a tree: reports, bad input, atomic output, the input
never written, determinism across worker counts, idempotence; plus random programs (hypothesis)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torch2ms import cli
from torch2ms.convert import ConvertError, convert_source, convert_tree, rewriter
from torch2ms.convert.cstutil import code

MODEL = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            y = torch.not_an_api(x)
            return self.fc(x) + y
    """)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "model.py").write_text(MODEL)
    (src / "pkg" / "util.py").write_text("from .model import Net\n\n\ndef build():\n    return Net()\n")
    for i in range(8):  # enough files for the parallel path
        (src / f"layer{i}.py").write_text(f"import torch.nn as nn\n\nLAYER = nn.Conv2d(3, {i + 1}, 3)\n")
    (src / "README.md").write_text("# notes\n")
    (src / "bad_syntax.py").write_text("import torch\ndef f(:\n")
    (src / "bad_bytes.py").write_bytes(b"import torch\nx = '\xff\xfe'\n")
    return src


def test_r20_report_files_with_counts_and_lines(project: Path, tmp_path: Path):
    out = tmp_path / "out"
    report = convert_tree(project, out, jobs=1)
    data = json.loads((out / "torch2ms-report.json").read_text())
    files = {f["path"]: f for f in data["files"]}
    model = files[os.path.join("pkg", "model.py")]
    assert model["counts"]["not-converted"] == 1
    bad = [c for c in model["changes"] if c["action"] == "not-converted"]
    assert bad[0]["api"] == "torch.not_an_api" and bad[0]["line"] == 11
    assert data["summary"]["not_converted"] == 1 and data["summary"]["files_failed"] == 2
    md = (out / "torch2ms-report.md").read_text()
    assert f"{os.path.join('pkg', 'model.py')}:11" in md and "torch.not_an_api" in md
    assert (out / "README.md").read_text() == "# notes\n"
    assert "class Net(nn.Cell):" in (out / "pkg" / "model.py").read_text()
    assert report.rate() < 1.0


def test_bad_input_copied_unchanged_and_reported(project: Path, tmp_path: Path):
    out = tmp_path / "out"
    report = convert_tree(project, out, jobs=1)
    errors = {f.path: f.error for f in report.failed}
    assert set(errors) == {"bad_syntax.py", "bad_bytes.py"}
    assert "syntax error" in errors["bad_syntax.py"]
    for name in errors:
        assert (out / name).read_bytes() == (project / name).read_bytes()
    assert "nn.Conv2d(3, 1, 3, pad_mode='valid'" in (out / "layer0.py").read_text()


def test_converter_crash_copies_file_and_cli_exit_code(project: Path, tmp_path: Path, monkeypatch, capsys):
    real = rewriter.Rewriter.leave_Call

    def crash(self, original, updated):
        if code(original.func) == "torch.not_an_api":
            raise RuntimeError("simulated converter bug")
        return real(self, original, updated)

    monkeypatch.setattr(rewriter.Rewriter, "leave_Call", crash)
    out = tmp_path / "out"
    rc = cli.main(["convert", str(project), "-o", str(out), "-j", "1"])
    assert rc == cli.EXIT_FOUND
    assert (out / "pkg" / "model.py").read_text() == MODEL
    data = json.loads((out / "torch2ms-report.json").read_text())
    err = {f["path"]: f["error"] for f in data["files"]}[os.path.join("pkg", "model.py")]
    assert "simulated converter bug" in err
    assert "has_bias=True" in (out / "layer3.py").read_text()  # the rest converted
    assert "failed" in capsys.readouterr().out


def test_cli_exit_code_clean_project(tmp_path: Path):
    src = tmp_path / "ok"
    src.mkdir()
    (src / "m.py").write_text("import torch\n\ny = torch.zeros(2)\n")
    assert cli.main(["convert", str(src), "-o", str(tmp_path / "out")]) == cli.EXIT_OK


def test_input_tree_never_written_and_out_inside_src_refused(project: Path, tmp_path: Path):
    before = tree_digest(project)
    with pytest.raises(ConvertError):
        convert_tree(project, project)
    (project / "pkg" / "existing").mkdir()
    with pytest.raises(ConvertError):
        convert_tree(project, project / "pkg" / "existing")  # inside SRC, not a torch2ms output
    with pytest.raises(ConvertError):
        convert_tree(project / "pkg", project)  # OUT contains SRC
    (project / "pkg" / "existing").rmdir()
    with pytest.raises(ConvertError, match="inside the input"):
        convert_tree(project, project / "converted", jobs=1)  # a later run would convert the copy
    assert tree_digest(project) == before
    # With --force: excluded from the walk, and a rerun replaces it (an earlier output is never converted).
    convert_tree(project, project / "converted", jobs=1, force=True)
    report = convert_tree(project, project / "converted", jobs=1, force=True)
    assert not (project / "converted" / "converted").exists()
    assert ("converted", "the output folder") in report.skipped
    assert {k: v for k, v in tree_digest(project).items() if not k.startswith("converted")} == before


def test_atomic_output_on_failure(project: Path, tmp_path: Path, monkeypatch):
    from torch2ms.convert import project as proj

    out = tmp_path / "out"
    monkeypatch.setattr(proj, "to_markdown", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        convert_tree(project, out, jobs=1)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [project]  # no temporary folder left behind
    monkeypatch.undo()
    convert_tree(project, out, jobs=1)
    first = tree_digest(out)
    monkeypatch.setattr(proj, "to_markdown", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        convert_tree(project, out, jobs=1)
    assert tree_digest(out) == first  # an earlier output survives a failed rerun


def test_deterministic_across_worker_counts(project: Path, tmp_path: Path):
    convert_tree(project, tmp_path / "a", jobs=1)
    convert_tree(project, tmp_path / "b", jobs=2)
    convert_tree(project, tmp_path / "c", jobs=2)
    a, b, c = (tree_digest(tmp_path / n) for n in "abc")
    for d in (a, b, c):
        d.pop("torch2ms-report.json")  # names its own OUT path
        d.pop("torch2ms-report.md")
    assert a == b == c
    ja, jb = (json.loads((tmp_path / n / "torch2ms-report.json").read_text()) for n in "ab")
    assert ja["files"] == jb["files"] and ja["summary"] == jb["summary"]


def test_idempotent_over_tree(project: Path, tmp_path: Path):
    convert_tree(project, tmp_path / "once", jobs=1)
    for p in (tmp_path / "once").rglob("*.py"):
        src = p.read_text(encoding="utf-8", errors="surrogateescape")
        res = convert_source(src, str(p))
        assert res.error is not None or res.code == src, p


# ---- random small programs from a grammar of torch calls ----------------------------------------------

EXPRS = [
    "torch.cat([{a}, {b}], dim=1)",
    "F.relu({a})",
    "{a}.view({a}.size(0), -1)",
    "torch.zeros(2, 3)",
    "{a}.permute(0, 2, 1)",
    "torch.matmul({a}, {b})",
    "{a}.clamp(min=0)",
    "{a}.to(torch.float16)",
    "torch.no_such_api({a})",
    "nn.Linear(4, 4)({a})",
    "{a} + {b}",
    "{a}.sum(dim=-1, keepdim=True)",
    "torch.where({a} > 0, {a}, {b})",
    "{a}.cuda()",
    "nn.Unknown({a})",
    "torch.flatten({a}, 1)",
]
STMTS = [
    "{v} = {e}",
    "{v}.add_({e})",
    "{v}.mul_(2).sub_({e})",
    "with torch.no_grad():\n            {v} = {e}",
    "if isinstance({v}, torch.Tensor):\n            {v} = {e}",
    "# note\n        {v} = {e}  # trailing",
]


@st.composite
def programs(draw) -> str:
    names = ["x", "y", "z"]
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        e = draw(st.sampled_from(EXPRS)).format(a=draw(st.sampled_from(names)), b=draw(st.sampled_from(names)))
        lines.append("        " + draw(st.sampled_from(STMTS)).format(v=draw(st.sampled_from(names)), e=e))
    head = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass M(nn.Module):\n"
    return head + "    def forward(self, x, y, z):\n" + "\n".join(lines) + "\n        return x\n"


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_convert_parse_and_are_idempotent(src: str):
    ast.parse(src)
    res = convert_source(src, "r.py")
    assert res.error is None
    ast.parse(res.code)
    assert "def construct(self, x, y, z):" in res.code
    assert convert_source(res.code, "r.py").code == res.code
    assert convert_source(src, "r.py").code == res.code
    marks = res.code.count("# torch2ms: not converted")
    assert (marks == 0) == (not any(c.action == "not-converted" for c in res.changes))
