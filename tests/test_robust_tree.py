"""Issue 15 (R1 scan, R20 convert): odd file-system input, output paths that would destroy data, one file
that must not kill the run, encodings kept. Every case drives the real command; nothing is mocked but
the failure being injected (a worker that dies, a file that hangs, a file the OS refuses to read)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from torch2ms import cli
from torch2ms.analysis import sourcefiles
from torch2ms.analysis.scan import scan_path
from torch2ms.convert import ConvertError, convert_tree, project_pool

ROOT = Path(__file__).resolve().parents[1]
GOOD = "import torch\nimport torch.nn as nn\n\nlayer = nn.Linear(4, 2)  # keep me\n"
BAD_NAME = os.fsdecode(b"bad\xffname.py")  # not UTF-8: surrogate-escaped, as the file system gives it


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "torch2ms", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.fixture
def odd_tree(tmp_path: Path) -> Path:
    """A project with every odd entry the issue tried, next to ordinary files."""
    src = tmp_path / "odd"
    (src / "pkg").mkdir(parents=True)
    (src / "good.py").write_text(GOOD)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "model.py").write_text(GOOD)
    (src / "empty.py").write_text("")
    (src / "image.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (src / "notes.py").write_text("These are my notes {{{ not python\n")
    (src / "data.csv").write_text("a,b\n1,2\n")
    (src / os.fsdecode(b"bad\xffname.py")).write_text(GOOD)
    (src / "broken.py").symlink_to("nowhere.py")
    (src / "loop_a.py").symlink_to("loop_b.py")
    (src / "loop_b.py").symlink_to("loop_a.py")
    (src / "zero.py").symlink_to("/dev/zero")  # reading it never ends
    (src / "null.py").symlink_to("/dev/null")
    os.mkfifo(src / "fifo.py")  # opening it blocks forever
    (src / "pkg" / "up").symlink_to("..")  # a directory loop
    outside = tmp_path / "shared_code"
    outside.mkdir()
    (outside / "helpers.py").write_text(GOOD)
    (src / "linked").symlink_to(outside)  # a symlinked folder: followed, not dropped
    for env, marker in (("venv", "pyvenv.cfg"), ("node_modules", None), (".git", None), ("myenv", "pyvenv.cfg")):
        (src / env).mkdir()
        (src / env / "lib.py").write_text(GOOD)
        if marker:
            (src / env / marker).write_text("home = /usr\n")
    return src


ODD = {
    "broken.py": "broken symlink",
    "loop_a.py": "symlink loop",
    "loop_b.py": "symlink loop",
    "zero.py": "character device",
    "null.py": "character device",
    "fifo.py": "FIFO",
    "pkg/up": "folder already walked",
}
SKIPPED = {"venv", "node_modules", ".git", "myenv"}


def test_r1_scan_reports_odd_entries_never_hangs(odd_tree: Path, tmp_path: Path):
    proc = _cli("scan", str(odd_tree), "--format", "json", "-o", str(tmp_path / "scan.json"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    data = json.loads((tmp_path / "scan.json").read_text(encoding="utf-8"))  # valid UTF-8 despite the bad name
    errors = {f["path"]: f["error"] for f in data["files"] if f["error"]}
    for name, why in ODD.items():
        assert why in errors[name], (name, errors.get(name))
    assert "NUL bytes" in errors["image.py"] and "syntax error" in errors["notes.py"]
    scanned = {f["path"] for f in data["files"] if not f["error"]}
    assert {"good.py", "pkg/model.py", "linked/helpers.py", "empty.py", "bad\\xffname.py"} <= scanned
    assert {s["path"] for s in data["skipped_folders"]} == SKIPPED
    assert all(f["path"].split("/")[0] not in SKIPPED for f in data["files"])


def test_r20_convert_reports_odd_entries_converts_the_rest(odd_tree: Path, tmp_path: Path):
    out = tmp_path / "out"
    proc = _cli("convert", str(odd_tree), "-o", str(out), timeout=180)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # some entries could not be read
    assert "Traceback" not in proc.stderr + proc.stdout
    data = json.loads((out / "torch2ms-report.json").read_text(encoding="utf-8"))
    not_read = {e["path"]: e["why"] for e in data["not_read"]}
    for name, why in ODD.items():
        assert why in not_read[name], (name, not_read.get(name))
        assert name in proc.stdout  # and said on the terminal
        assert not (out / name).exists() or (out / name).is_dir()
    assert {s["path"] for s in data["skipped_folders"]} == SKIPPED
    assert "venv/ (virtual environment)" in proc.stdout
    for rel in ("good.py", "pkg/model.py", "linked/helpers.py", BAD_NAME):
        text = (out / rel).read_text()
        assert "nn.Dense(4, 2" in text and "# keep me" in text, rel
    assert (out / "empty.py").read_text() == ""
    errors = {f["path"]: f["error"] for f in data["files"]}
    assert "copied unchanged" in errors["image.py"] and "copied unchanged" in errors["notes.py"]
    assert (out / "image.py").read_bytes() == (odd_tree / "image.py").read_bytes()
    assert (out / "data.csv").read_text() == "a,b\n1,2\n"
    assert not any((out / d).exists() for d in SKIPPED)


def test_r20_unreadable_file_reported_not_fatal(tmp_path: Path, monkeypatch):
    src = tmp_path / "p"
    src.mkdir()
    (src / "ok.py").write_text(GOOD)
    (src / "secret.py").write_text(GOOD)
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):  # as root chmod 000 does not stop a read: the OS says no here
        if os.fspath(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(sourcefiles.os, "open", refuse)
    rep = scan_path(src)
    assert "permission denied" in {f.path: f.error for f in rep.files}["secret.py"]
    report = convert_tree(src, tmp_path / "out", jobs=1)
    assert "permission denied" in {f.path: f.error for f in report.failed}["secret.py"]
    assert "nn.Dense" in (tmp_path / "out" / "ok.py").read_text()


# ---- never destroy user data -------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    src.mkdir()
    (src / "m.py").write_text(GOOD)
    return src


def test_r20_existing_folder_not_written_by_torch2ms_refused_unless_force(small: Path, tmp_path: Path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    proc = _cli("convert", str(small), "-o", str(out))
    assert proc.returncode == 2 and "not written by torch2ms" in proc.stderr and "--force" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert (out / "thesis.tex").read_text() == "years of work"
    assert cli.main(["convert", str(small), "-o", str(out), "--force"]) == cli.EXIT_OK
    assert not (out / "thesis.tex").exists() and (out / "m.py").exists()
    # an earlier torch2ms output, or an empty folder, is replaced without --force
    assert cli.main(["convert", str(small), "-o", str(out)]) == cli.EXIT_OK
    (tmp_path / "empty").mkdir()
    assert cli.main(["convert", str(small), "-o", str(tmp_path / "empty")]) == cli.EXIT_OK


def test_r20_output_never_a_file_the_input_or_a_folder_holding_it(small: Path, tmp_path: Path):
    a_file = tmp_path / "report.txt"
    a_file.write_text("keep")
    for out, why in (
        (a_file, "not a folder"),
        (small, "is the input itself"),
        (tmp_path, "contains the input"),
    ):
        for force in ([], ["--force"]):
            with pytest.raises(ConvertError, match=why):
                convert_tree(small, out, force=bool(force))
            assert cli.main(["convert", str(small), "-o", str(out), *force]) == cli.EXIT_USAGE
    assert a_file.read_text() == "keep" and (small / "m.py").read_text() == GOOD
    # a single file: its own folder holds it
    with pytest.raises(ConvertError, match="contains the input"):
        convert_tree(small / "m.py", small, force=True)
    assert sorted(p.name for p in small.iterdir()) == ["m.py"]


def test_r20_scan_report_never_overwrites_a_source(small: Path, capsys):
    assert cli.main(["scan", str(small / "m.py"), "--format", "json", "-o", str(small / "m.py")]) == cli.EXIT_USAGE
    assert (small / "m.py").read_text() == GOOD
    assert "would overwrite a source file" in capsys.readouterr().err


# ---- one file never kills the run ---------------------------------------------------------------------


@contextlib.contextmanager
def _recursion_limit(limit: int):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _deep(n: int) -> str:
    return "import torch\n\ny = " + " + ".join(["torch.ones(1)"] * n) + "\n"


def test_r20_one_file_never_kills_the_run(tmp_path: Path, monkeypatch):
    """RecursionError, a converter exception, a worker killed by a signal, a hang and a memory blow-up,
    each in one file of a tree converted in parallel: each reported and copied unchanged, the rest converted."""
    from torch2ms.convert import pipeline as module

    src = tmp_path / "p"
    src.mkdir()
    bad = {
        "deep.py": _deep(3000),  # over the nesting cap
        "raises.py": GOOD + "# RAISE\n",
        "dies.py": GOOD + "# DIE\n",
        "hangs.py": GOOD + "# HANG\n",
        "hog.py": GOOD + "# HOG\n",
    }
    for name, text in bad.items():
        (src / name).write_text(text)
    for i in range(8):
        (src / f"ok{i}.py").write_text(GOOD)
    real = module.convert_source

    def sabotaged(source, *args, **kwargs):
        if "# RAISE" in source:
            raise KeyError("simulated converter bug")
        if "# DIE" in source:
            os.kill(os.getpid(), signal.SIGSEGV)
        if "# HANG" in source:
            while True:
                pass
        if "# HOG" in source and sys.platform == "linux":
            _ = bytearray(8 << 30)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(module, "convert_source", sabotaged)
    monkeypatch.setattr(project_pool, "FILE_CPU_BASE_S", 3.0)  # of CPU time: the busy loop spends it
    monkeypatch.setattr(project_pool, "FILE_CPU_PER_KB_S", 0.0)
    monkeypatch.setattr(project_pool, "FILE_WALL_FACTOR", 2000.0)  # the last-resort net: out of the load's reach
    with _recursion_limit(1000):  # Python's default, inherited by the forked workers
        report = convert_tree(src, tmp_path / "out", jobs=2)
    errors = {f.path: f.error for f in report.failed}
    assert f"over the {project_pool.MAX_NESTING}" in errors["deep.py"]  # refused before any walk
    assert "simulated converter bug" in errors["raises.py"]
    assert "process died (signal 11" in errors["dies.py"]
    assert "used more than 3 s of CPU time" in errors["hangs.py"]
    if sys.platform == "linux":
        assert "MemoryError" in errors["hog.py"]
    for name, text in bad.items():
        assert (tmp_path / "out" / name).read_text() == text
    for i in range(8):
        assert "nn.Dense(4, 2" in (tmp_path / "out" / f"ok{i}.py").read_text()


def test_r20_nesting_over_the_limit_copied_and_reported(tmp_path: Path):
    """Valid Python 600 levels deep: not handed to libcst (minutes of parsing, a stack overflow near 3000)."""
    src = tmp_path / "p"
    src.mkdir()
    (src / "deep.py").write_text(_deep(600))
    report = convert_tree(src, tmp_path / "out", jobs=1)
    assert f"over the {project_pool.MAX_NESTING}" in (report.failed[0].error or "")
    assert (tmp_path / "out" / "deep.py").read_text() == _deep(600)


def test_r1_scan_deep_nesting_reported(tmp_path: Path):
    (tmp_path / "deep.py").write_text(_deep(3000))
    (tmp_path / "ok.py").write_text(GOOD)
    with _recursion_limit(1000):  # Python's default (pytest-xdist's workers run with a higher one)
        rep = scan_path(tmp_path)
    errors = {f.path: f.error for f in rep.files}
    assert f"over the {project_pool.MAX_NESTING}" in errors["deep.py"] and errors["ok.py"] is None


# ---- encodings ----------------------------------------------------------------------------------------

# encoding, coding line + comment, a non-ASCII identifier, a non-ASCII word for comments and strings
ENCODED = {
    "latin1.py": ("latin-1", "# -*- coding: latin-1 -*-\n# café, naïve\n", "größe", "süß"),
    "sjis.py": ("shift_jis", "# -*- coding: shift_jis -*-\n# 日本語のコメント\n", "変数", "テスト"),
    "gbk.py": ("gbk", "# coding: gbk\n# 中文注释\n", "变量", "张量"),
    "bom.py": ("utf-8-sig", "# 带 BOM 的文件\n", "变量", "张量"),
    "utf8.py": ("utf-8", "# 中文注释\n", "变量", "张量"),
}


def _body(ident: str, word: str) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n"
        f"{ident} = nn.Linear(4, 2)  # {word}\n"
        f's = "{word} 1"\n'
        f"y = {ident}.weight.view({ident}.weight.size(0), -1)\n"
    )


def test_r20_encodings_kept_text_unchanged(tmp_path: Path):
    src = tmp_path / "enc"
    src.mkdir()
    for name, (enc, head, ident, word) in ENCODED.items():
        (src / name).write_bytes((head + _body(ident, word)).encode(enc))
    convert_tree(src, tmp_path / "out", jobs=1)
    for name, (enc, head, ident, word) in ENCODED.items():
        data = (tmp_path / "out" / name).read_bytes()
        assert data.startswith(b"\xef\xbb\xbf") == (enc == "utf-8-sig"), name
        text = data.decode(enc)
        assert text.startswith(head), name  # the coding line and the comment under it
        assert f"{ident} = nn.Dense(4, 2" in text and f"  # {word}\n" in text and f's = "{word} 1"' in text, name
        assert f"{ident}.weight.shape[0]" in text, name


def test_r20_text_that_does_not_fit_the_encoding_becomes_utf8_with_cookie(tmp_path: Path):
    """A not-converted mark has an em dash latin-1 lacks: the file becomes UTF-8 and its cookie says so."""
    src = tmp_path / "l1"
    src.mkdir()
    text = "# -*- coding: latin-1 -*-\n# café\nimport torch\n\ny = torch.not_an_api(1)  # naïve\n"
    (src / "m.py").write_bytes(text.encode("latin-1"))
    report = convert_tree(src, tmp_path / "out", jobs=1)
    out = (tmp_path / "out" / "m.py").read_bytes().decode("utf-8")
    assert out.startswith("# -*- coding: utf-8 -*-\n# café\n") and "# naïve" in out
    assert "torch2ms: not converted" in out
    assert "written as UTF-8" in (report.files[0].note or "")
    import tokenize

    with tokenize.open(tmp_path / "out" / "m.py") as fh:  # Python reads it back as the same text
        assert fh.read() == out


# ---- the command line ---------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["scan"], ["convert"], ["weights"], ["lookup"], ["doctor"], ["kb", "check"]])
def test_r30_every_help_documents_exit_codes(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([*argv, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text and all(f"\n  {c}  " in text for c in "012"), text


def test_r30_internal_error_is_one_line_exit_2(tmp_path: Path, monkeypatch, capsys):
    from torch2ms.convert import estimate  # scan's entry: the inventory plus the conversion's own estimate

    monkeypatch.setattr(estimate, "scan_path", lambda path, *a, **kw: 1 / 0)
    assert cli.main(["scan", str(tmp_path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "internal error (ZeroDivisionError" in err and "Traceback" not in err


def test_r30_file_error_is_one_line_exit_2(tmp_path: Path, monkeypatch, capsys):
    from torch2ms.convert import estimate  # scan's entry: the inventory plus the conversion's own estimate

    def refuse(path, *a, **kw):
        raise PermissionError(13, "Permission denied", "/some/file.py")

    monkeypatch.setattr(estimate, "scan_path", refuse)
    assert cli.main(["scan", str(tmp_path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "/some/file.py: Permission denied" in err and "internal error" not in err


def test_r20_huge_file_reported_and_copied(tmp_path: Path):
    src = tmp_path / "p"
    src.mkdir()
    (src / "ok.py").write_text(GOOD)
    huge = src / "generated.py"
    with open(huge, "wb") as fh:  # a sparse 6 MB file: over the 5 MB limit for source files
        fh.write(b"x = 1\n")
        fh.truncate(6 << 20)
    assert "over the 5 MB limit" in {f.path: f.error for f in scan_path(src).files}["generated.py"]
    report = convert_tree(src, tmp_path / "out", jobs=1)
    assert (
        f"over the {project_pool.MAX_CONVERT_BYTES >> 20} MB convert takes"
        in {f.path: f.error for f in report.failed}["generated.py"]
    )
    assert (tmp_path / "out" / "generated.py").stat().st_size == 6 << 20
    assert "nn.Dense" in (tmp_path / "out" / "ok.py").read_text()
