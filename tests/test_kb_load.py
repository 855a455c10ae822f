"""Issue 14: loading the KB scales (an on-disk cache of the parsed entries, handler modules imported
on demand) without changing what is loaded."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torch2ms.kb import DATA_DIR, load_kb
from torch2ms.kb import cache as kb_cache

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A copy of two real data files, and a private cache dir."""
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCH2MS_NO_CACHE", raising=False)
    d = tmp_path / "data"
    d.mkdir()
    for name in ("dtypes.toml", "tensor_methods.toml"):
        (d / name).write_text((DATA_DIR / name).read_text(encoding="utf-8"), encoding="utf-8")
    return d


def _fresh(d: Path):
    from torch2ms.kb import _load

    _load.cache_clear()  # the per-process cache: each call below loads again
    return load_kb(d)


def test_issue14_cached_entries_equal_parsed_entries(data_dir, monkeypatch):
    parsed = list(_fresh(data_dir).entries)  # a miss: parses and writes the cache
    assert len(list((data_dir.parent / "cache").glob("kb-*.pickle"))) == 1
    kb = _fresh(data_dir)
    assert isinstance(kb.entries, kb_cache.PickledEntries)  # from the cache, unpickled on use
    assert kb.get("Tensor.view") == next(e for e in parsed if e.torch == "torch.Tensor.view")
    cached = list(kb.entries)
    assert cached == parsed and len(cached) > 100
    monkeypatch.setenv("TORCH2MS_NO_CACHE", "1")
    assert list(_fresh(data_dir).entries) == parsed


def test_issue14_an_edited_data_file_is_parsed_again(data_dir):
    before = _fresh(data_dir)
    path = data_dir / "dtypes.toml"
    path.write_text(path.read_text(encoding="utf-8").replace('torch = "torch.float32"', 'torch = "torch.float32x"'))
    after = _fresh(data_dir)
    assert before.get("torch.float32") is not None and after.get("torch.float32") is None
    assert after.get("torch.float32x") is not None
    assert len(list((data_dir.parent / "cache").glob("kb-*.pickle"))) == 2


def test_issue14_a_corrupt_or_unwritable_cache_falls_back_to_parsing(data_dir, tmp_path, monkeypatch):
    expected = list(_fresh(data_dir).entries)
    (cache_file,) = (data_dir.parent / "cache").glob("kb-*.pickle")
    cache_file.write_bytes(b"not a pickle")
    assert list(_fresh(data_dir).entries) == expected
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    assert list(_fresh(data_dir).entries) == expected


def test_issue14_the_cache_key_covers_schema_and_every_file(data_dir):
    files = sorted(data_dir.glob("*.toml"))
    key = kb_cache.content_key(files)
    assert kb_cache.content_key(files[:1]) != key
    (data_dir / "zz_new.toml").write_text("")
    assert kb_cache.content_key(sorted(data_dir.glob("*.toml"))) != key


def test_issue14_loading_and_lookup_import_only_the_handler_modules_they_use():
    code = (
        "import sys; from torch2ms.kb import load_kb; from torch2ms.kb.lookup import lookup, lookup_dict\n"
        "kb = load_kb(); loaded = lambda: sorted(m for m in sys.modules if m.startswith('torch2ms.kb.handlers.'))\n"
        "print(loaded()); lookup_dict(lookup('nn.Conv2d')); print(loaded())"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    after_load, after_lookup = out.splitlines()
    assert after_load == "[]"
    assert after_lookup == "['torch2ms.kb.handlers.common']"  # Conv2d's padding transform


def test_issue14_kb_stats_counts_new_namespaces():
    from torch2ms.kb import KB
    from torch2ms.kb.schema import entry_from_toml

    names = [
        "torch.fft.rfft",
        "torch.special.erfinv",
        "torch.distributions.Normal",
        "torchvision.ops.nms",
        "torchvision.transforms.v2.ColorJitter",
        "torch.backends.cudnn.benchmark",
        "torch.nn.functional.relu",
        "torch.autograd.grad",
    ]
    kb = KB([entry_from_toml({"torch": n, "kind": "function", "status": "no-equivalent"}, "t.toml") for n in names])
    assert sorted(kb.stats()) == [
        "torch",
        "torch.backends",
        "torch.distributions",
        "torch.fft",
        "torch.nn.functional",
        "torch.special",
        "torchvision.ops",
        "torchvision.transforms",
    ]


@pytest.mark.parametrize(
    ("short", "full"),
    [
        ("distributions.Normal", "torch.distributions.Normal"),
        ("fft.rfft", "torch.fft.rfft"),
        ("special.erf", "torch.special.erf"),
        ("linalg.norm", "torch.linalg.norm"),
        ("transforms.Resize", "torchvision.transforms.Resize"),
        ("datasets.MNIST", "torchvision.datasets.MNIST"),
    ],
)
def test_issue14_short_forms_of_new_namespaces(short, full):
    from torch2ms.kb import canonical_name

    assert canonical_name(short) == full
