"""The torchvision entries are found as users write them (issue 14): full names, aliases, short forms."""

from __future__ import annotations

import pytest

from torch2ms.kb import load_kb

KB = load_kb()
VISION = [e for e in KB if e.torch.startswith("torchvision.")]
SHORT = {
    "torchvision.models.": "models.",
    "torchvision.ops.": "ops.",
    "torchvision.io.": "io.",
    "torchvision.transforms.v2.": "v2.",
    "torchvision.transforms.functional.": "TF.",
    "torchvision.utils.": "vutils.",
    "torchvision.transforms.": "transforms.",
    "torchvision.datasets.": "datasets.",
}


def _short(name: str) -> str | None:
    for prefix, short in SHORT.items():
        if name.startswith(prefix):
            return short + name[len(prefix) :]
    return None


def test_torchvision_entries_cover_every_namespace():
    namespaces = {e.namespace for e in VISION}
    assert {
        "torchvision.models",
        "torchvision.ops",
        "torchvision.transforms",
        "torchvision.utils",
        "torchvision.io",
    } <= namespaces
    assert len(VISION) > 300


@pytest.mark.parametrize("prefix", sorted(SHORT))
def test_every_torchvision_name_is_found_by_full_name_alias_and_short_form(prefix):
    missing = []
    for e in VISION:
        for name in (e.torch, *e.aliases):
            if not name.startswith(prefix) or any(name.startswith(p) for p in SHORT if len(p) > len(prefix)):
                continue
            if KB.get(name) is not e:
                missing.append(name)
            short = _short(name)
            if short is not None and KB.get(short) is not e:
                missing.append(short)
    assert not missing, missing[:20]


def test_no_equivalent_torchvision_entries_say_what_to_do():
    for e in VISION:
        if e.status == "no-equivalent":
            assert len(e.note) > 40, e.torch
