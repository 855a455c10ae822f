"""Same input, same output whatever the machine's load (issue 26): a file's time limit is its worker's CPU
time (``RLIMIT_CPU``), not wall-clock time.

With a wall-clock limit a file that converts in 5 s on a quiet machine passed the limit on a loaded one
and was copied unchanged: the output depended on what else ran. Here the same generated tree (kinds of
code x sizes) is converted quietly and with competing busy processes, and must come out byte for byte
the same; time spent off the CPU (a worker that waits its turn) must not count; a file that truly needs
more than its budget is refused with the same message quiet and loaded, by ``convert`` and by ``scan``
(which runs the same conversion); and the error says which limit stopped a file: the CPU budget, or the
wall-clock safety net for a worker that hangs without using CPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
import sys
import threading
import time
from itertools import repeat
from pathlib import Path

import pytest

from torch2ms import cli
from torch2ms.convert import convert_tree, project_pool
from torch2ms.convert import pipeline as pipeline_module
from torch2ms.convert.estimate import estimate_tree

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
KINDS = {
    "module": lambda i: (
        f"class Block{i}(nn.Module):\n"
        f"    def __init__(self, c={i % 7 + 3}):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(c, c * 2, 3, padding=1)\n"
        "        self.bn = nn.BatchNorm2d(c * 2)\n"
        "        self.fc = nn.Linear(c * 2, 10)\n\n"
        "    def forward(self, x):\n"
        "        x = F.relu(self.bn(self.conv(x)))\n"
        "        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)\n"
        "        return self.fc(x).softmax(dim=-1)\n\n\n"
    ),
    "script": lambda i: (
        f"a{i} = torch.randn(4, {i % 5 + 2})\n"
        f"b{i} = torch.cat([a{i}, a{i} * 2], dim=1).permute(1, 0)\n"
        f"c{i} = torch.matmul(b{i}, a{i}).clamp(min=0).sum(dim=0, keepdim=True)\n"
        f"print(c{i}.shape, c{i}.numpy().round(3))\n\n"
    ),
    "functional": lambda i: (
        f"def f{i}(x, y):\n"
        "    z = F.softmax(x, dim=-1) + torch.sigmoid(y).mean(dim=0)\n"
        "    return torch.where(z > 0.5, z, torch.zeros_like(z)).transpose(0, 1).contiguous()\n\n\n"
    ),
}
SIZES = (2, 25, 100)  # repetitions: ~0.5 KiB to ~40 KiB, 0.05 s to ~1 s of CPU each
# Over 1000 blocks (~380 KiB) the module file needs several seconds of CPU: far past a 1 s budget.
HUGE = 1000


def _source(kind: str, n: int) -> str:
    return HEAD + "".join(KINDS[kind](i) for i in range(n))


@contextlib.contextmanager
def _busy_machine():
    """Two busy processes per core for the duration: every worker waits for its turn on a CPU."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        time.sleep(0.5)  # they are running before the conversion starts
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _contents(root: Path) -> dict[str, bytes]:
    """Every file of an output tree (its own folder's name, which the reports quote, made neutral)."""
    return {
        str(p.relative_to(root)): p.read_bytes().replace(str(root).encode(), b"OUT")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _budget(monkeypatch, base: float, per_kb: float = 0.0, wall_factor: float = 2000.0) -> None:
    """A small CPU budget; the last-resort wall-clock net about a real budget's (21 s x 100), out of reach
    of the load, unless a case is about the net itself."""
    monkeypatch.setattr(project_pool, "FILE_CPU_BASE_S", base)
    monkeypatch.setattr(project_pool, "FILE_CPU_PER_KB_S", per_kb)
    monkeypatch.setattr(project_pool, "FILE_WALL_FACTOR", wall_factor)


def test_r26_cpu_limit_available_where_ci_runs():
    """Linux (CI) limits CPU time; elsewhere the old wall-clock limit is all there is."""
    if sys.platform.startswith("linux"):
        assert project_pool.cpu_limit_supported()


@pytest.mark.slow
def test_r26_same_tree_same_output_quiet_and_loaded(tmp_path: Path, monkeypatch):
    """Kinds x sizes, two workers: byte-identical trees (code and reports) with and without competing load.
    A 4 s budget is 4x the largest file's CPU time, and less than its wall time on a busy machine."""
    _budget(monkeypatch, 4.0)
    files = {f"{kind}_{n}.py": _source(kind, n) for kind in KINDS for n in SIZES}
    src = _tree(tmp_path / "src", files)
    quiet = convert_tree(src, tmp_path / "quiet", jobs=2)
    with _busy_machine():
        loaded = convert_tree(src, tmp_path / "loaded", jobs=2)
    assert [f.path for f in quiet.failed] == [] and [f.path for f in loaded.failed] == []
    a, b = _contents(tmp_path / "quiet"), _contents(tmp_path / "loaded")
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
    for name in files:  # each kind was converted, not copied
        assert "mindspore" in a[name].decode()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_r26_time_off_the_cpu_does_not_count(tmp_path: Path, monkeypatch, kind: str):
    """A worker kept off the CPU (what load does to it, here as a sleep) for longer than the whole budget
    still converts the file, to the same text as an undelayed run. A wall-clock limit refused it."""
    src = _tree(tmp_path / "src", {"f.py": _source(kind, 3)})
    plain = convert_tree(src, tmp_path / "plain", jobs=1)
    real = pipeline_module.convert_source

    def delayed(*args, **kwargs):
        time.sleep(2.5)  # over the 1 s budget, and no CPU used
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline_module, "convert_source", delayed)
    _budget(monkeypatch, 1.0)
    late = convert_tree(src, tmp_path / "late", jobs=1)
    assert plain.failed == [] and late.failed == []
    assert _contents(tmp_path / "plain") == _contents(tmp_path / "late")


def _refusals(src: Path, out: Path) -> tuple[dict[str, str | None], dict[str, str | None]]:
    report = convert_tree(src, out, jobs=1)
    scanned = {e.path: e.error for e in estimate_tree(src, jobs=1)}
    return {f.path: f.error for f in report.files}, scanned


@pytest.mark.slow
def test_r26_over_budget_refused_the_same_quiet_and_loaded(tmp_path: Path, monkeypatch, capsys):
    """A file that truly needs more CPU than its budget: refused with one message, quiet or loaded, by
    convert and by scan (the same conversion, the same budget); the other file converts; the CLI names
    the file and says what to do."""
    _budget(monkeypatch, 1.0)
    huge = _source("module", HUGE)
    src = _tree(tmp_path / "src", {"huge.py": huge, "small.py": _source("functional", 2)})
    quiet_convert, quiet_scan = _refusals(src, tmp_path / "quiet")
    with _busy_machine():
        loaded_convert, loaded_scan = _refusals(src, tmp_path / "loaded")
    message = quiet_convert["huge.py"]
    assert message is not None
    assert "used more than 1 s of CPU time" in message
    assert "same on a busy machine" in message and "split the file" in message
    for errors in (quiet_convert, loaded_convert, quiet_scan, loaded_scan):
        assert errors == {"huge.py": message, "small.py": None}
    for out in ("quiet", "loaded"):
        assert (tmp_path / out / "huge.py").read_text(encoding="utf-8") == huge  # copied unchanged
        assert "mindspore" in (tmp_path / out / "small.py").read_text(encoding="utf-8")
    assert cli.main(["convert", str(src), "-o", str(tmp_path / "cli")]) == cli.EXIT_FOUND
    printed = " ".join(capsys.readouterr().out.split())
    assert f"huge.py: {message}" in printed


def _spin_python() -> None:
    while True:
        pass


def _spin_native() -> None:
    sum(repeat(1, 10**13))  # one C call: no Python-level check ever runs during it


def _blocked() -> None:
    threading.Event().wait()  # hangs without using CPU, the interpreter lock released


def _blocked_holding_the_lock() -> None:
    read_end, _write_end = os.pipe()  # nothing is ever written: read() blocks for good
    libc = ctypes.PyDLL(None)  # PyDLL: the interpreter lock is held while the C function runs
    libc.read(read_end, ctypes.create_string_buffer(1), 1)


# how -> (the hang, what the error must say, watchdog seconds, wall-clock factor)
HANGS = {
    "python loop": (_spin_python, "used more than 1 s of CPU time", 2.0, 2000.0),
    "native loop": (_spin_native, "used more than 1 s of CPU time", 2.0, 2000.0),
    "blocked": (_blocked, "used no CPU for 2 s (a hung worker", 2.0, 2000.0),
    "blocked holding the lock": (
        _blocked_holding_the_lock,
        "did not finish within 6 s of wall-clock time",
        2.0,
        6.0,
    ),
}


@pytest.mark.parametrize("thread", ["headroom thread", "worker's main thread"])
@pytest.mark.parametrize("how", sorted(HANGS))
def test_r26_error_says_which_limit_stopped_the_file(tmp_path: Path, monkeypatch, how: str, thread: str):
    """A busy loop (Python or native) is ended by the CPU budget in whichever thread it runs; a worker that
    waits forever, by the watchdog (no CPU used for a while: here 2 s); one that waits holding the
    interpreter lock (no watchdog can run), by the last-resort wall-clock net (here 6 s). The rest of the
    tree converts, and the stuck file is copied unchanged."""
    hang, expected, hang_s, wall_factor = HANGS[how]
    _budget(monkeypatch, 1.0, wall_factor=wall_factor)
    monkeypatch.setattr(project_pool, "FILE_HANG_S", hang_s)
    monkeypatch.setattr(project_pool, "HANG_POLL_S", 0.2)
    if thread != "headroom thread":
        monkeypatch.setattr(project_pool, "run_with_headroom", lambda fn, *args: fn(*args))
    real = pipeline_module.convert_source

    def stuck(source, *args, **kwargs):
        if "# STUCK" in source:
            hang()
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pipeline_module, "convert_source", stuck)
    stuck_text = _source("script", 2) + "# STUCK\n"
    src = _tree(tmp_path / "src", {"stuck.py": stuck_text, "ok.py": _source("script", 2)})
    report = convert_tree(src, tmp_path / "out", jobs=1)
    errors = {f.path: f.error for f in report.files}
    assert errors["ok.py"] is None
    assert expected in (errors["stuck.py"] or "")
    assert (tmp_path / "out" / "stuck.py").read_text(encoding="utf-8") == stuck_text


def test_r26_a_starved_worker_is_not_hung(tmp_path: Path, monkeypatch):
    """A file that keeps using a little CPU now and then (what a worker gets on a loaded machine) for
    longer than the watchdog's window converts: only a worker that uses no CPU at all counts as hung."""
    monkeypatch.setattr(project_pool, "FILE_HANG_S", 1.0)
    monkeypatch.setattr(project_pool, "HANG_POLL_S", 0.2)
    real = pipeline_module.convert_source

    def starved(*args, **kwargs):
        for _ in range(30):  # 3 s in all, a slice of CPU every 0.1 s
            time.sleep(0.1)
            sum(range(20_000))
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline_module, "convert_source", starved)
    src = _tree(tmp_path / "src", {"f.py": _source("script", 2)})
    report = convert_tree(src, tmp_path / "out", jobs=1)
    assert report.failed == []
    assert "mindspore" in (tmp_path / "out" / "f.py").read_text(encoding="utf-8")


def test_r26_budget_is_per_file_not_per_worker(tmp_path: Path, monkeypatch):
    """One worker converts every file (jobs=1); together they need more CPU than one file's budget, and
    each file alone less: all convert (the limit is set afresh from the worker's usage before each file)."""
    _budget(monkeypatch, 1.0)
    files = {f"s{i}.py": _source("script", 60 + i) for i in range(12)}  # ~0.25 s of CPU each, 3 s in all
    src = _tree(tmp_path / "src", files)
    report = convert_tree(src, tmp_path / "out", jobs=1)
    assert report.failed == []
    assert sum(1 for name in files if "mindspore" in (tmp_path / "out" / name).read_text()) == len(files)


def test_r26_in_process_call_leaves_the_callers_cpu_limit_alone(tmp_path: Path):
    """convert_job called in the caller's own process (benches do) never sets a CPU limit there: SIGXCPU
    would end the caller."""
    import resource

    before = resource.getrlimit(resource.RLIMIT_CPU)
    path = tmp_path / "f.py"
    path.write_text(_source("functional", 2), encoding="utf-8")
    outcome = project_pool.convert_job(project_pool.Job(str(path), "f.py", path.stat().st_size))
    assert outcome.error is None and outcome.code is not None
    assert resource.getrlimit(resource.RLIMIT_CPU) == before
