import os

import pytest

# Keep both frameworks quiet and single-process friendly in tests.
os.environ.setdefault("GLOG_v", "3")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# MindSpore 2.10's bundled oneDNN picks a reference (naive) convolution on AVX-512 hosts; capping it
# at AVX2 gives the JIT kernels (bench/train_step_bench.py measured 155 ms → 4 ms for one conv).
# PyNative's asynchronous launch costs ~3 ms of CPU per eager op on a loaded 2-core machine.
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
os.environ.setdefault("MS_DEV_LAUNCH_BLOCKING", "1")
# A compiled step returning several tensors is otherwise still dispatched on a runtime thread.
os.environ.setdefault("MS_DEV_HOST_BLOCKING_RUN", "1")
# `torch2ms convert` records each output tree in a per-user index that `torch2ms weights` searches:
# tests (and the commands they start) use an index of their own, never the user's.
if "TORCH2MS_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["TORCH2MS_CACHE_DIR"] = tempfile.mkdtemp(prefix="torch2ms-test-cache-")


@pytest.fixture(autouse=True)
def _own_project_index(monkeypatch, tmp_path_factory):
    """Each test its own index of converted projects: a tree one test converts is never the project
    another test's `torch2ms weights` finds."""
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path_factory.mktemp("project-index")))


def pytest_addoption(parser):
    # Golden conversions (tests/golden/<case>/expected.py): rewrite them from the converter's output.
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/*/expected files")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line: what was skipped and why (tests/requires_support.py tags the expected kinds)."""
    from requires_support import skip_summary

    line = skip_summary(terminalreporter.stats.get("skipped", []))
    if line:
        terminalreporter.write_line(line, yellow=True)
