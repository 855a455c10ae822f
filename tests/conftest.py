import os

import pytest
from lean_support import lean_items
from xdist_groups_support import group_shared_fixture_files

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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    lean_items(config, items)  # make test's lean tier: each function's cases within its time budget
    group_shared_fixture_files(items)  # a file sharing a module/class fixture runs on one worker


def pytest_addoption(parser):
    # Golden conversions (tests/golden/<case>/expected.py): rewrite them from the converter's output.
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/*/expected files")


# Seconds per test file (setup + call + teardown, summed over xdist workers): printed last, so the tail of
# CI's log says which files hold `make test`'s time (the 25-minute budget), not only the slowest tests.
_FILE_SECONDS: dict[str, float] = {}
_FILE_TESTS: dict[str, int] = {}
TIME_TABLE_ROWS = 25


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the controller gets every report too: count each once
        return
    path = report.nodeid.split("::", 1)[0]
    if os.environ.get("TORCH2MS_TEST_LOG"):  # one line per phase as it ends: a long run's failures seen early
        with open(os.environ["TORCH2MS_TEST_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{report.duration:9.2f} {report.when:8} {report.outcome:7} {report.nodeid}\n")
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration
    if report.when == "call" or (report.when == "setup" and report.skipped):
        _FILE_TESTS[path] = _FILE_TESTS.get(path, 0) + 1


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """What was skipped and why (tests/requires_support.py tags the expected kinds); where the time went."""
    from requires_support import skip_summary

    line = skip_summary(terminalreporter.stats.get("skipped", []))
    if line:
        terminalreporter.write_line(line, yellow=True)
    total = sum(_FILE_SECONDS.values())
    if total < 60:  # a quick subset: nothing to budget
        return
    terminalreporter.write_sep("=", f"test seconds by file (top {TIME_TABLE_ROWS}; all files {total:.0f} s)")
    ranked = sorted(_FILE_SECONDS.items(), key=lambda kv: (-kv[1], kv[0]))[:TIME_TABLE_ROWS]
    for path, seconds in ranked:
        terminalreporter.write_line(
            f"{seconds:8.1f} s {100 * seconds / total:5.1f}% {_FILE_TESTS.get(path, 0):6d} tests  {path}"
        )
