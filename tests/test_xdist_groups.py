"""`make test` runs `pytest -n 2 --dist loadgroup`: a file whose tests share a module-scoped fixture (a
converted corpus, a fuzz campaign) must run on one worker, or both workers build the fixture.

pytest 9 keeps a node's id in ``_id``; pytest-xdist 3.8 still writes the group into ``_nodeid``, so under
pytest 9 every ``xdist_group`` mark was silently ignored (CI built each such fixture twice and split the
KB differential's GRAPH_MODE batches). This runs a real two-worker session on generated files.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SHARED = """
import os
import pytest

@pytest.fixture(scope="module")
def built():
    return os.environ["PYTEST_XDIST_WORKER"]

@pytest.mark.parametrize("i", range(6))
def test_shared(built, i):
    import time
    time.sleep(0.2)
    out = os.environ["WORKERS_SEEN"]
    with open(os.path.join(out, f"shared-{i}"), "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
"""

CONFTEST = """
import pytest
from xdist_groups_support import group_shared_fixture_files

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    group_shared_fixture_files(items)
"""

FREE = """
import os
import pytest

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    import time
    time.sleep(0.2)
    with open(os.path.join(os.environ["WORKERS_SEEN"], f"free-{i}"), "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_a_file_sharing_a_module_fixture_runs_on_one_worker(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (project / "test_shared.py").write_text(textwrap.dedent(SHARED))
    (project / "test_free.py").write_text(textwrap.dedent(FREE))
    seen = tmp_path / "seen"
    seen.mkdir()
    env = {**os.environ, "PYTHONPATH": str(TESTS), "WORKERS_SEEN": str(seen)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {p.name: p.read_text() for p in seen.iterdir()}
    assert len(workers) == 12, workers
    shared = {w for name, w in workers.items() if name.startswith("shared-")}
    assert len(shared) == 1, f"the module fixture's tests ran on {sorted(shared)}"
    assert set(workers.values()) == {"gw0", "gw1"}, "both workers ran (the free tests take the other one)"
