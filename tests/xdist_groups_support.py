"""One xdist group per test file whose tests share a module-, class- or package-scoped fixture.

Under ``--dist loadgroup`` a test without an ``xdist_group`` mark may run on either worker, and each worker
that runs one of a file's tests builds the file's shared fixtures (a converted corpus, a fuzz campaign:
100-500 s paid twice). conftest.py's collection hook calls it; tests/test_xdist_groups.py runs it under xdist.
"""

from typing import Any

import pytest

_SHARED_SCOPES = ("module", "class", "package")


def group_shared_fixture_files(items: list[Any]) -> None:
    """Mark each such test with its file's group (a file that sets groups itself is left as it is)."""
    own_groups = {i.nodeid.split("::", 1)[0] for i in items if i.get_closest_marker("xdist_group") is not None}
    for item in items:
        if item.nodeid.split("::", 1)[0] in own_groups:  # the file splits its tests into groups itself
            continue
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if any(d.scope in _SHARED_SCOPES for defs in info.name2fixturedefs.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
