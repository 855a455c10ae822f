"""R20 / issue 15 on real code: every file of ../shared/realcode/corpus and of the installed torchvision,
converted, then converted again: nothing may change, every valid file still parses, no comment is lost."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from fuzz_convert import CORPUS, check_tree
from requires_support import require_kit, require_module

pytestmark = pytest.mark.slow


def _roots() -> list[Path]:
    roots = [CORPUS] if CORPUS.is_dir() else []
    spec = importlib.util.find_spec("torchvision")
    if spec and spec.submodule_search_locations:
        roots.append(Path(list(spec.submodule_search_locations)[0]))
    return roots


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    require_kit(CORPUS)
    require_module("torchvision")
    return {r.name: check_tree(r.name, r, tmp_path_factory.mktemp(r.name)) for r in _roots()}


def test_r20_realcode_valid_input_gives_valid_output(results):
    assert {name: r["invalid"] for name, r in results.items() if r["invalid"]} == {}


def test_r20_realcode_converting_twice_changes_nothing(results):
    changed = {name: r["not_idempotent"] for name, r in results.items() if r["not_idempotent"]}
    assert changed == {}, {n: len(c) for n, c in changed.items()}


def test_r20_realcode_comments_kept(results):
    lost = {name: r["text_lost"] for name, r in results.items() if r["text_lost"]}
    assert lost == {}
