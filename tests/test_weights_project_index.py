"""Issue 24: `torch2ms weights CKPT -o OUT.ckpt` alone finds the converted project's layer map.

`torch2ms convert` records each output tree in a small per-user index; `weights` without `--project`
or `--net` picks the recorded project whose layer map explains the checkpoint (one root class holds its
top-level names, every layer the map names has a `weight` of that layer's rank), says which one it
used and treats its layer types as certain. Where two recorded projects explain the keys but say
different things of them, none is used: the renames stay guesses, listed, exit 3.

Matrix: every case of test_weights_layer_map (11 layer kinds, torch layers and the user's own classes
named LayerNorm/BatchNorm/Embedding/PReLU with their own parameter names × 6 ways of holding them:
attribute with a misleading name such as `ln_1`, list index, comprehension, ModuleDict, Sequential of
an OrderedDict, Block in a ModuleList) and its specials (tied weights, DETR's own layer, minGPT's
ModuleDict, layers built by append/_get_clones/local lists) × two indexes: (a) the case's own project
recorded among projects of the same shape holding other layer kinds — the .ckpt loads strictly into
the converted network and its output equals torch's; (b) the case's own project beside a twin whose
source holds the other kind of layer under the same names — never the twin's renames: either its
own project (the twin cannot explain the keys) or no project and the guesses listed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module
from test_weights_layer_map import CASES, KINDS, SPECIALS, _case_source, _check_outputs, _run_case

from torch2ms import project_index
from torch2ms.cli import main
from torch2ms.convert import convert_tree

torch = require_module("torch")
ms = require_module("mindspore")

LAYER_MAP = "torch2ms_layers.json"

# the other kind of layer under the same attribute names (a similar tree that renames differently)
TWIN = {
    "nn.LayerNorm": "LayerNorm(8)",
    "nn.BatchNorm2d": "BatchNorm(8)",
    "nn.PReLU": "PReLU()",
    "nn.PReLU8": "LayerNorm(8)",
    "nn.Embedding": "Embedding(5, 8)",
    "nn.Linear_nobias": "nn.Embedding(8, 8)",
    "user.LayerNorm": "nn.LayerNorm(8)",
    "user.LayerNorm2d": "nn.LayerNorm(8)",
    "user.BatchNorm": "nn.BatchNorm1d(8)",
    "user.Embedding": "nn.Embedding(5, 8)",
    "user.PReLU": "nn.PReLU()",
}
# twins whose checkpoint keys and shapes are those of the case (or a part of them): only the source
# tells them apart, so the two projects must be seen to disagree
SAME_KEYS = set(TWIN) - {"nn.BatchNorm2d"}


def _twin_source(kind: str, holder: str, name: str) -> str:
    text = _case_source(kind, holder, name)
    ctor = KINDS[kind]
    return re.sub(r"(?<![\w.])" + re.escape(ctor), TWIN[kind], text)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """Every case and every twin converted once; each case's own project is the part of the layer map
    its file wrote (a one-file project's map: the classes of that module), in a folder of its own."""
    root = tmp_path_factory.mktemp("project_index")
    src, out = root / "src", root / "out"
    src.mkdir()
    for i, case in enumerate(CASES):
        (src / f"c{i}.py").write_text(_case_source(*case))
        (src / f"t{i}.py").write_text(_twin_source(*case))
    for tag, text in SPECIALS.items():
        (src / f"{tag}.py").write_text(text)
    report = convert_tree(src, out, runtime="package")
    assert not report.failed, [f.error for f in report.failed]
    classes = json.loads((out / LAYER_MAP).read_text())["classes"]
    projects = {}
    for mod in [f"c{i}" for i in range(len(CASES))] + [f"t{i}" for i in range(len(CASES))] + sorted(SPECIALS):
        own = {c: spec for c, spec in classes.items() if c.startswith(mod + ".")}
        assert own, mod
        folder = root / "projects" / mod
        folder.mkdir(parents=True)
        (folder / LAYER_MAP).write_text(json.dumps({"classes": own}))
        projects[mod] = folder
    return src, out, projects


@pytest.fixture
def index(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCH2MS_PROJECT_INDEX", raising=False)
    monkeypatch.chdir(tmp_path)  # no layer map here, no --project, no --net
    return tmp_path / "cache"


def _weights_json(trees, tag: str, tmp_path: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc, _ckpt = _run_case(trees[:2], tag, tmp_path, ["--json"])
    return rc, json.loads(capsys.readouterr().out)


def _similar(i: int) -> list[int]:
    """Cases held the same way (same holder, other layer kinds): trees of the same shape."""
    n = len(CASES)
    return [(i + 6) % n, (i + 12) % n]


@pytest.mark.differential
@pytest.mark.parametrize("idx", range(len(CASES)), ids=[f"{k}-{h}-{n}" for k, h, n in CASES])
def test_weights_alone_finds_the_case_project_among_similar_ones(trees, index, tmp_path, idx, capsys):
    projects = trees[2]
    project_index.register(projects[f"c{idx}"])  # registered first: not picked for being the newest
    for j in _similar(idx):
        project_index.register(projects[f"c{j}"])
    rc, data = _weights_json(trees, f"c{idx}", tmp_path, capsys)
    assert rc == 0, data["guessed"]
    assert data["layer_map_found"] == str(projects[f"c{idx}"] / LAYER_MAP)
    assert data["guessed"] == [] and data["layer_map_conflicts"] == []
    _check_outputs(trees[:2], f"c{idx}", tmp_path / f"c{idx}.ckpt")


@pytest.mark.differential
@pytest.mark.parametrize("tag", sorted(SPECIALS))
def test_weights_alone_specials(trees, index, tmp_path, tag, capsys):
    """Tied weights (the borrowed key left to the owner's Parameter), DETR's own encoder layer, minGPT's
    ModuleDict, lists built by append / _get_clones / a local list, optional layers."""
    projects = trees[2]
    for other in sorted(SPECIALS):
        if other != tag:
            project_index.register(projects[other])
    project_index.register(projects[tag])
    rc, data = _weights_json(trees, tag, tmp_path, capsys)
    assert rc == 0, data["guessed"]
    assert data["layer_map_found"] is not None
    assert Path(data["layer_map_found"]).parent.name == tag or data["layer_map_conflicts"] == []
    _check_outputs(trees[:2], tag, tmp_path / f"{tag}.ckpt")


@pytest.mark.parametrize("newest", ["case", "twin"])
@pytest.mark.parametrize("idx", range(len(CASES)), ids=[f"{k}-{h}-{n}" for k, h, n in CASES])
def test_weights_alone_never_takes_a_twin_projects_renames(trees, index, tmp_path, idx, newest, capsys):
    projects = trees[2]
    order = [f"c{idx}", f"t{idx}"] if newest == "twin" else [f"t{idx}", f"c{idx}"]
    for mod in order:
        project_index.register(projects[mod])
    rc, data = _weights_json(trees, f"c{idx}", tmp_path, capsys)
    own, twin = str(projects[f"c{idx}"] / LAYER_MAP), str(projects[f"t{idx}"] / LAYER_MAP)
    assert data["layer_map_found"] != twin
    if data["layer_map_found"] == own:
        assert CASES[idx][0] not in SAME_KEYS, "the twin explains these keys as well"
        assert rc == 0 and data["guessed"] == []
        return
    # no project used: the two disagree, and every rename at stake is listed as a guess
    assert sorted(data["layer_map_conflicts"]) == sorted([own, twin])
    assert rc == (3 if data["guessed"] else 0)
    with_map = _run_case(trees[:2], f"c{idx}", tmp_path, ["--json", "--project", str(projects[f"c{idx}"])])[0]
    assert with_map == 0  # the command the listing names makes it certain


def test_guess_listing_names_the_conflicting_projects(trees, index, tmp_path, capsys):
    projects = trees[2]
    idx = CASES.index(next(c for c in CASES if c[0] == "user.LayerNorm" and c[1] == "attr"))
    project_index.register(projects[f"c{idx}"])
    project_index.register(projects[f"t{idx}"])
    capsys.readouterr()
    rc, _ckpt = _run_case(trees[:2], f"c{idx}", tmp_path, [])
    text = capsys.readouterr().out
    assert rc == 3
    assert "2 converted projects hold this checkpoint's layers" in text.replace("\n", " ")
    assert "→" in text and ".gamma" in text  # the user LayerNorm's guessed rename is listed, not silent


@pytest.mark.differential
def test_convert_then_weights_elsewhere(tmp_path, monkeypatch, capsys):
    """The user's path: `torch2ms convert SRC -o OUT`, then in another folder `torch2ms weights CKPT -o
    X.ckpt`: OUT is found, named, and every name is certain."""
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
    idx = CASES.index(next(c for c in CASES if c[0] == "user.LayerNorm" and c[1] == "dict"))
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "model.py").write_text(_case_source(*CASES[idx]))
    assert main(["convert", str(src), "-o", str(out), "--runtime", "package"]) == 0
    assert project_index.projects() == [out.resolve()]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    rc, ckpt = _run_case((src, out), "model", elsewhere, [])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert f"layer types from the converted project {out.resolve()}" in text.replace("\n", "")
    _check_outputs((src, out), "model", ckpt)
    monkeypatch.setenv("TORCH2MS_PROJECT_INDEX", "0")  # the index off: today's guesses, exit 3
    assert _run_case((src, out), "model", elsewhere, [])[0] == 3


# ---- the index itself (standard library only)


def _tree(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / LAYER_MAP).write_text('{"classes": {}}')
    return d


def test_index_order_bound_and_dead_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
    trees = [_tree(tmp_path, f"p{i}") for i in range(project_index.LIMIT + 7)]
    assert project_index.register(tmp_path / "no_map") is False  # not a converted tree
    for t in trees:
        assert project_index.register(t)
    got = project_index.projects()
    assert got == [t.resolve() for t in reversed(trees)][: project_index.LIMIT]  # newest first, bounded
    project_index.register(trees[-project_index.LIMIT])  # converted again: newest
    assert project_index.projects()[0] == trees[-project_index.LIMIT].resolve()
    (trees[-1] / LAYER_MAP).unlink()  # its output removed: gone from the index
    assert trees[-1].resolve() not in project_index.projects()
    data = json.loads((tmp_path / "cache" / project_index.INDEX_FILE).read_text())
    assert len(data["projects"]) <= project_index.LIMIT
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name.endswith(".tmp")]  # no temporary left


@pytest.mark.parametrize("content", ["", "{", "[]", '{"projects": 3}', '{"projects": [1, {"path": 2}]}', "\x00" * 9])
def test_index_corrupt_is_ignored_and_rewritten(tmp_path, monkeypatch, content):
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / project_index.INDEX_FILE).write_text(content)
    assert project_index.projects() == []
    t = _tree(tmp_path, "p")
    assert project_index.register(t)
    assert project_index.projects() == [t.resolve()]


@pytest.mark.parametrize("how", ["env_off", "cache_is_a_file", "xdg", "home"])
def test_index_location_and_off_switch(tmp_path, monkeypatch, how):
    for var in ("TORCH2MS_CACHE_DIR", "XDG_CACHE_HOME", "TORCH2MS_PROJECT_INDEX"):
        monkeypatch.delenv(var, raising=False)
    t = _tree(tmp_path, "p")
    if how == "env_off":
        monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.setenv("TORCH2MS_PROJECT_INDEX", "off")
        assert project_index.register(t) is False and project_index.projects() == []
        assert not (tmp_path / "cache").exists()
    elif how == "cache_is_a_file":  # cannot be written: convert still succeeds, nothing recorded
        (tmp_path / "cache").write_text("x")
        monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
        assert project_index.register(t) is False and project_index.projects() == []
    elif how == "xdg":
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert project_index.register(t)
        assert (tmp_path / "xdg" / "torch2ms" / project_index.INDEX_FILE).is_file()
    else:
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert project_index.register(t)
        assert (tmp_path / "home" / ".cache" / "torch2ms" / project_index.INDEX_FILE).is_file()


def test_index_concurrent_conversions_lose_no_entry(tmp_path):
    """Eight processes registering at once: every tree recorded, the file whole."""
    n, each = 8, 5
    for i in range(n * each):
        _tree(tmp_path, f"p{i}")
    code = textwrap.dedent(f"""
        import sys
        from torch2ms import project_index
        k = int(sys.argv[1])
        for j in range({each}):
            assert project_index.register(r"{tmp_path}/p%d" % (k * {each} + j))
    """)
    env = dict(os.environ, TORCH2MS_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], env=env) for k in range(n)]
    assert [p.wait(timeout=120) for p in procs] == [0] * n
    got = json.loads((tmp_path / "cache" / project_index.INDEX_FILE).read_text())["projects"]
    assert sorted(e["path"] for e in got) == sorted(str((tmp_path / f"p{i}").resolve()) for i in range(n * each))


_FLAG_TIE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """word_language_model's RNNModel: the decoder borrows the encoder's weight only if asked."""

    def __init__(self, tie_weights):
        super().__init__()
        self.encoder = nn.Embedding(8, 8)
        self.rnn = nn.Linear(8, 8)
        self.decoder = nn.Linear(8, 8)
        if tie_weights:
            self.decoder.weight = self.encoder.weight

    def forward(self, x):
        h = x + self.encoder(((x[:, :2] > 0).long() * 3 + 1)).sum(1)
        return self.decoder(torch.tanh(self.rnn(h)))


def make():
    torch.manual_seed(0)
    return Model(TIE)
'''


@pytest.mark.differential
@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("how", ["index", "project"])
def test_tie_under_a_flag_holds_only_where_the_tensors_are_shared(tmp_path, monkeypatch, capsys, tie, how):
    """`if tie_weights: self.decoder.weight = self.encoder.weight`: the layer map records the tie, but an
    untied checkpoint keeps its own decoder.weight (it was dropped as borrowed: the net kept a random one)."""
    monkeypatch.setenv("TORCH2MS_CACHE_DIR", str(tmp_path / "cache"))
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "wlm.py").write_text(f"TIE = {tie}\n" + _FLAG_TIE)
    assert main(["convert", str(src), "-o", str(out), "--runtime", "package"]) == 0
    monkeypatch.chdir(tmp_path)
    extra = ["--project", str(out)] if how == "project" else []
    capsys.readouterr()
    rc, ckpt = _run_case((src, out), "wlm", tmp_path, ["--json", *extra])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0, data
    assert ("decoder.weight" in data["dropped"]) == tie, data["dropped"]
    _check_outputs((src, out), "wlm", ckpt)
