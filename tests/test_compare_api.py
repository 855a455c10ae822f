"""compare --api (issue 25, first slice): name the ORIGINAL source line of an API-level bug.

A small torch model whose custom forward is a run of functional calls is converted with
``convert_tree`` (which writes the line map); one line of the converted code is then broken the way
hand ports break (a GELU approximation, a softmax axis, permuted axes, a layer_norm eps, a mask added
instead of filled, an axis out of range), and ``compare_models(..., api=True)`` must name the original
torch line of that bug. The matrix crosses every bug kind with where the code lives (a module's
forward, a module-level helper function it calls). Real torch and real MindSpore run every case.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
from matrix_support import product
from requires_support import CORPUS, require_kit

from torch2ms.convert import convert_tree
from torch2ms.convert.linemap import LINEMAP_JSON, line_map

pytestmark = pytest.mark.differential

BODY = """\
h = fc(x)
h = F.gelu(h)
t = h.permute(0, 2, 1)
a = torch.matmul(h, t)
a = a.masked_fill(a > 1.0, -100.0)
a = F.softmax(a, dim=-1)
h = torch.matmul(a, h)
h = F.layer_norm(h, (h.shape[-1],), w, None, eps=1e-5)
return h * 2 + x
"""

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
NET = """

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.rand(8) + 0.5)

    def forward(self, x):
{forward}
"""

LOCATIONS = {
    # the functional code in the module's own forward
    "forward": HEAD + NET.format(forward=textwrap.indent("fc, w = self.fc, self.w\n" + BODY, " " * 8)),
    # the same code in a helper function of the file, called by forward
    "helper": HEAD
    + "def attend(fc, w, x):\n"
    + textwrap.indent(BODY, "    ")
    + NET.format(forward="        return attend(self.fc, self.w, x)"),
}

# bug kind → (converted text, broken text, the torch line's text it must name, a KB api expected there)
BUGS = {
    "gelu_approximate": ("ops.gelu(h)", 'ops.gelu(h, approximate="tanh")', "h = F.gelu(h)", "gelu"),
    "softmax_axis": ("ops.softmax(a, axis=-1)", "ops.softmax(a, axis=-2)", "a = F.softmax(a, dim=-1)", "softmax"),
    "permute_swapped": ("h.permute(0, 2, 1)", "h.permute(0, 1, 2)", "t = h.permute(0, 2, 1)", None),
    "layer_norm_eps": ("epsilon=1e-5", "epsilon=1e-1", "h = F.layer_norm(h,", "layer_norm"),
    "mask_added": (
        "a = a.masked_fill(a > 1.0, -100.0)",
        "a = a + (a > 1.0).astype(a.dtype) * -100.0",
        "a = a.masked_fill(a > 1.0, -100.0)",
        "masked_fill",
    ),
}


def _convert(tmp_path: Path, location: str) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(LOCATIONS[location], encoding="utf-8")
    convert_tree(src, tmp_path / "out")
    return tmp_path / "out"


def _compare(tmp_path: Path, monkeypatch):
    from torch2ms.align.api import CompareOptions, compare_models

    monkeypatch.chdir(tmp_path)
    opts = CompareOptions(input_shapes=[(2, 8, 8)], graph=False, api=True)
    return compare_models("src/model.py:Net", "out/model.py:Net", opts)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("location", sorted(LOCATIONS))
def test_unmodified_conversion_reports_nothing(tmp_path, monkeypatch, location):
    _convert(tmp_path, location)
    rep = _compare(tmp_path, monkeypatch)
    assert rep.api is not None and rep.api["status"] == "match", rep.api
    assert rep.api["paired"] >= 8 and rep.api["line_map"], rep.api
    assert rep.status == "match"


@pytest.mark.parametrize("location", sorted(LOCATIONS))
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_injected_api_bug_names_the_original_line(tmp_path, monkeypatch, bug, location):
    old, new, torch_line, kb_api = BUGS[bug]
    out = _convert(tmp_path, location)
    converted = (out / "model.py").read_text(encoding="utf-8")
    assert converted.count(old) == 1, converted
    (out / "model.py").write_text(converted.replace(old, new), encoding="utf-8")
    rep = _compare(tmp_path, monkeypatch)
    first = rep.api["first"]
    assert rep.status == "divergence" and first is not None, rep.api
    assert first["original"]["line"] == _line_of(LOCATIONS[location], torch_line), first
    assert torch_line in first["original"]["text"]
    assert first["converted"]["line"] == _line_of(converted, old) and new in first["converted"]["text"]
    assert first["inputs_agree"] is True and first["cause"] == "this_call"
    if kb_api is not None:
        assert any(kb_api in e["api"] for e in first["kb"]), first["kb"]
    json.dumps(rep.to_dict(), default=str)  # the JSON report holds it


@pytest.mark.parametrize("location", sorted(LOCATIONS))
def test_a_line_that_raises_is_named(tmp_path, monkeypatch, location):
    out = _convert(tmp_path, location)
    converted = (out / "model.py").read_text(encoding="utf-8")
    (out / "model.py").write_text(converted.replace("h.permute(0, 2, 1)", "h.permute(0, 2, 5)"), encoding="utf-8")
    rep = _compare(tmp_path, monkeypatch)
    first = rep.api["first"]
    assert first["error"] and first["original"]["line"] == _line_of(LOCATIONS[location], "h.permute(0, 2, 1)")


def test_inputs_that_already_differ_point_upstream(tmp_path):
    """The MindSpore weight w is changed after loading: the first divergent call (layer_norm) gets
    a different input, and the report says the cause is upstream, not that line."""
    import mindspore as ms

    from torch2ms.align.api_align import align
    from torch2ms.align.api_record import record_ms, record_torch, user_files
    from torch2ms.align.ms_side import build_net
    from torch2ms.align.torch_worker import build_model

    out = _convert(tmp_path, "forward")
    model = build_model({"torch": str(tmp_path / "src/model.py") + ":Net", "seed": 0}).eval()
    net = build_net(str(out / "model.py") + ":Net", 0)
    for name, p in net.parameters_and_names():
        value = model.state_dict()[name].numpy()  # the port keeps torch's names here
        p.set_data(ms.Tensor(value * (1.5 if name == "w" else 1.0)))
    x = np.random.default_rng(0).standard_normal((2, 8, 8)).astype(np.float32)
    t_rec, t_err = record_torch(model, [x], 1 << 26)
    m_rec, m_err, _switched = record_ms(net, [x], 1 << 26)
    assert t_err is None and m_err is None
    files = sorted(user_files([c for _n, c in net.cells_and_names()], "\0"))
    first = align(t_rec, m_rec, None, files)["first"]
    assert first["original"]["line"] == _line_of(LOCATIONS["forward"], "F.layer_norm")
    assert first["inputs_agree"] is False and first["cause"] == "upstream"


def test_graph_mode_is_switched_to_pynative_for_the_recording(tmp_path):
    import mindspore as ms

    from torch2ms.align.api_record import record_ms
    from torch2ms.align.ms_side import build_net

    out = _convert(tmp_path, "helper")
    net = build_net(str(out / "model.py") + ":Net", 0)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        rec, err, switched = record_ms(net, [np.ones((2, 8, 8), np.float32)], 1 << 20)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert switched and err is None and len(rec.groups) >= 8


def test_the_size_limit_keeps_summaries_beyond_it(tmp_path):
    from torch2ms.align.api_record import record_torch
    from torch2ms.align.torch_worker import build_model

    _convert(tmp_path, "forward")
    model = build_model({"torch": str(tmp_path / "src/model.py") + ":Net", "seed": 0}).eval()
    x = np.ones((2, 8, 8), np.float32)
    rec, _err = record_torch(model, [x], 1000)
    assert rec.kept <= 1000
    assert any(isinstance(g.output, dict) for g in rec.groups)


@pytest.mark.parametrize("mark", [False, True])
@pytest.mark.parametrize("added", [0, 1, 3])
@pytest.mark.parametrize("changed", [0, 1, 4])
def test_line_map_spellings(added, changed, mark):
    """Imports added at the top, runs of changed lines and review marks above a statement keep every
    statement on its original line."""
    original = ["import torch"] + [f"y{i} = torch.f{i}(x)" for i in range(6)] + ["return y5"]
    converted = [f"import ms{k}" for k in range(added + 1)]
    body = [f"y{i} = ops.f{i}(x)" if i < changed else original[i + 1] for i in range(6)]
    if mark:
        body.insert(2, "# torch2ms: review — torch.f2: check it")
    converted += body + ["return y5"]
    lines = line_map("\n".join(original), "\n".join(converted))
    for i in range(6):
        at = added + 2 + i + (1 if mark and i >= 2 else 0)
        assert lines[at] == i + 2, (at, lines)
    assert lines[len(converted)] == len(original)
    if mark:
        assert added + 4 not in lines  # the mark line itself is no statement


def test_convert_writes_the_line_map(tmp_path):
    out = _convert(tmp_path, "helper")
    data = json.loads((out / LINEMAP_JSON).read_text(encoding="utf-8"))
    entry = data["files"]["model.py"]
    original = LOCATIONS["helper"].splitlines()
    converted = (out / "model.py").read_text(encoding="utf-8").splitlines()
    gelu = _line_of("\n".join(converted), "ops.gelu")
    assert original[entry["lines"][str(gelu)] - 1].strip() == "h = F.gelu(h)"
    assert entry["kb"][str(entry["lines"][str(gelu)])][0]["api"] == "torch.nn.functional.gelu"


# ---------------------------------------------------------------- a real model: karpathy/minGPT (the kit)

KIT_MINGPT = CORPUS / "karpathy" / "minGPT"
GPT_NANO = (
    "((C := GPT.get_default_config()), C.merge_from_dict({'model_type': 'gpt-nano', 'vocab_size': 64, "
    "'block_size': 32}), GPT(C))[2]"
)
# bug kind → (converted text, broken text, the original line's text it must name)
KIT_BUGS = {
    "gelu_constant": ("0.044715 * ops.pow", "0.05 * ops.pow", "0.044715 * torch.pow(x, 3.0)"),
    "softmax_axis": ("ops.softmax(att, axis=-1)", "ops.softmax(att, axis=-2)", "att = F.softmax(att, dim=-1)"),
    # (B, T, nh, hs) = (2, 16, 3, 16): axes 1 and 3 have one size, so the swap keeps every shape
    "transpose_axes": (
        "k = k.view(B, T, self.n_head, C // self.n_head).swapaxes(1, 2)",
        "k = k.view(B, T, self.n_head, C // self.n_head).swapaxes(1, 3).swapaxes(2, 3)",
        "k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)",
    ),
    "mask_added": (
        "att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))",
        "att = att + self.bias[:,:,:T,:T]",
        "att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))",
    ),
    "attention_scale": ("(1.0 / math.sqrt(k.shape[-1]))", "(1.0 / k.shape[-1])", "math.sqrt(k.size(-1))"),
}


@pytest.fixture(scope="module")
def kit_gpt(tmp_path_factory):
    require_kit(KIT_MINGPT)
    d = tmp_path_factory.mktemp("kit_gpt")
    (d / "torch_side").mkdir()
    shutil.copytree(KIT_MINGPT / "mingpt", d / "torch_side" / "mingpt")
    report = convert_tree(d / "torch_side", d / "converted")
    assert not report.failed
    return d


def _kit_compare(kit_gpt: Path, tmp_path: Path, monkeypatch, edit: tuple[str, str] | None):
    """Compare the kit GPT with its conversion, one line of the conversion broken by ``edit``. The
    converted package is renamed mingpt_ms so both sides import in one process."""
    from torch2ms.align.api import CompareOptions, compare_models

    ms_root = tmp_path / "ms_side"
    shutil.copytree(kit_gpt / "converted", ms_root)
    (ms_root / "mingpt").rename(ms_root / "mingpt_ms")
    model = ms_root / "mingpt_ms" / "model.py"
    text = model.read_text(encoding="utf-8").replace("from mingpt.utils", "from mingpt_ms.utils")
    if edit is not None:
        assert text.count(edit[0]) == 1, edit
        text = text.replace(*edit)
    model.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(kit_gpt / "torch_side"))
    monkeypatch.syspath_prepend(str(ms_root))
    opts = CompareOptions(input_shapes=[(2, 16)], input_dtypes=("int64",), graph=False, api=True)
    spec_t, spec_m = f"{kit_gpt}/torch_side/mingpt/model.py:{GPT_NANO}", f"{model}:{GPT_NANO}"
    return compare_models(spec_t, spec_m, opts), text


def test_kit_gpt_unmodified_reports_nothing(kit_gpt, tmp_path, monkeypatch):
    rep, _text = _kit_compare(kit_gpt, tmp_path, monkeypatch, None)
    assert rep.api["status"] == "match" and rep.api["paired"] >= 40, rep.api
    assert rep.api["paired"] == rep.api["torch_groups"]


@pytest.mark.parametrize("bug", sorted(KIT_BUGS))
def test_kit_gpt_injected_api_bug_names_the_original_line(kit_gpt, tmp_path, monkeypatch, bug):
    old, new, torch_text = KIT_BUGS[bug]
    rep, text = _kit_compare(kit_gpt, tmp_path, monkeypatch, (old, new))
    first = rep.api["first"]
    assert first is not None and first["inputs_agree"], rep.api
    original = (kit_gpt / "torch_side" / "mingpt" / "model.py").read_text(encoding="utf-8")
    assert first["original"]["line"] == _line_of(original, torch_text), first
    assert first["converted"]["line"] == _line_of(text, new), first


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_cli_names_the_line_in_text_and_json(tmp_path, lang):
    """Through the command line as a user types it: the table's verdict in each language, and --json."""
    import subprocess
    import sys

    out = _convert(tmp_path, "forward")
    old, new, torch_line, _kb = BUGS["softmax_axis"]
    (out / "model.py").write_text((out / "model.py").read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    argv = [sys.executable, "-m", "torch2ms", "--lang", lang, "compare", "--torch", "src/model.py:Net"]
    argv += ["--ms", "out/model.py:Net", "--input-shape", "2,8,8", "--no-graph", "--api"]
    line = _line_of(LOCATIONS["forward"], torch_line)
    text = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert text.returncode == 1, text.stderr
    assert (f"model.py:{line}" in text.stdout) and torch_line in text.stdout, text.stdout
    assert ("第一个出现差异的调用" if lang == "zh" else "first divergent call") in text.stdout, text.stdout
    js = subprocess.run([*argv, "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert json.loads(js.stdout)["api"]["first"]["original"]["line"] == line


# ------------------------------------------------ statements over several lines, helpers called again and again

SPREAD = {
    # a chained call over several lines in parentheses (llama2.c's repeat_kv)
    "paren_chain": "    return (\n        x[:, :, None, :]\n        .expand(b, t, 2, c)\n        .reshape(b, t * 2, c)\n    )\n",
    # a backslash continuation
    "backslash": "    return x[:, :, None, :] \\\n        .expand(b, t, 2, c) \\\n        .reshape(b, t * 2, c)\n",
    # the arguments of one call over several lines
    "split_args": "    y = x[:, :, None, :].expand(\n        b, t, 2, c\n    )\n    return y.reshape(\n        b, t * 2, c)\n",
    # on one line
    "one_line": "    return x[:, :, None, :].expand(b, t, 2, c).reshape(b, t * 2, c)\n",
}
CALLERS = {
    "two_lines": "        a = twice(h)\n        v = twice(g)\n",
    "one_line": "        a, v = twice(h), twice(g)\n",
}
SPREAD_NET = """import torch
import torch.nn as nn


def twice(x):
    b, t, c = x.shape
{body}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.fc2 = nn.Linear(8, 8)

    def forward(self, x):
        h, g = self.fc(x), self.fc2(x)
{caller}        return torch.softmax(a * v, dim=-1)
"""


@pytest.mark.parametrize("caller", sorted(CALLERS))
@pytest.mark.parametrize("spread", sorted(SPREAD))
def test_statements_over_lines_and_repeated_helpers_pair(tmp_path, monkeypatch, spread, caller):
    """A statement over several lines is one place on both sides (the converter may join it into one
    line), and each call of a helper is its own group even when two calls follow each other from one
    line: unmodified, everything pairs and agrees; a wrong axis after them is still named."""
    text = SPREAD_NET.format(body=SPREAD[spread], caller=CALLERS[caller])
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(text, encoding="utf-8")
    convert_tree(src, tmp_path / "out")
    rep = _compare(tmp_path, monkeypatch)
    assert rep.api["status"] == "match" and rep.api["paired"] == rep.api["torch_groups"] == rep.api["ms_groups"], (
        rep.api
    )
    assert rep.api["paired"] == (6 if spread == "split_args" else 4), rep.api  # one group per statement and call
    converted = (tmp_path / "out" / "model.py").read_text(encoding="utf-8")
    assert converted.count("axis=-1") == 1, converted
    (tmp_path / "out" / "model.py").write_text(converted.replace("axis=-1", "axis=1"), encoding="utf-8")
    first = _compare(tmp_path, monkeypatch).api["first"]
    assert first["original"]["line"] == _line_of(text, "torch.softmax(a * v"), first
    assert first["inputs_agree"] is True


# ------------------------------------------------ library containers that hold the user's own layers

CONTAINERS = {
    "user_first": "nn.Sequential(Lin(8), nn.GELU(), nn.Linear(8, 8))",
    "user_last": "nn.Sequential(nn.Linear(8, 8), nn.Tanh(), Lin(8))",
    "nested": "nn.Sequential(nn.Sequential(Lin(8), nn.ReLU()), nn.Linear(8, 8))",
    "library_only": "nn.Sequential(nn.Linear(8, 8), nn.GELU())",
    "named": "nn.Sequential(OrderedDict(a=Lin(8), g=nn.GELU(), b=Lin(8)))",
}
CONTAINER_NET = """from collections import OrderedDict

import torch
import torch.nn as nn


class Lin(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.rand(n, n) - 0.5)

    def forward(self, x):
        return x @ self.w


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = {container}

    def forward(self, x):
        y = self.seq(x) * 3
        return torch.softmax(y, dim=-1)
"""


@pytest.mark.parametrize("container", sorted(CONTAINERS))
def test_library_containers_of_user_layers_are_seen_through(tmp_path, monkeypatch, container):
    """torch's nn.Sequential is no call to a TorchFunctionMode: the calls inside it are the user's
    layers' lines and, for the library layers in it, the line that called the container. The
    MindSpore side must see its SequentialCell the same way, or the groups do not pair."""
    text = CONTAINER_NET.format(container=CONTAINERS[container])
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(text, encoding="utf-8")
    convert_tree(src, tmp_path / "out")
    rep = _compare(tmp_path, monkeypatch)
    assert rep.api["status"] == "match" and rep.api["paired"] == rep.api["torch_groups"] == rep.api["ms_groups"]
    converted = (tmp_path / "out" / "model.py").read_text(encoding="utf-8")
    (tmp_path / "out" / "model.py").write_text(converted.replace("axis=-1", "axis=0"), encoding="utf-8")
    first = _compare(tmp_path, monkeypatch).api["first"]
    assert first["original"]["line"] == _line_of(text, "torch.softmax(y"), first


# ------------------------------------------------ the verdicts: float noise growing through many calls

NOISE_NET = """import torch
import torch.nn as nn


def spin(h, w):
    for _ in range({steps}):
        h = torch.{op}(h @ w * 3.0)
    return h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) / 3)

    def forward(self, x):
{forward}
"""
NOISE_FORWARD = {
    "forward": "        h = x\n        for _ in range({steps}):\n            h = torch.{op}(h @ self.w * 3.0)\n"
    "        return h.softmax(dim=-1)",
    "helper": "        return spin(x, self.w).softmax(dim=-1)",
}


def _noise_net(tmp_path: Path, location: str, op: str, steps: int) -> str:
    text = NOISE_NET.format(steps=steps, op=op, forward=NOISE_FORWARD[location].format(steps=steps, op=op))
    src = tmp_path / "src"
    src.mkdir()
    (src / "model.py").write_text(text, encoding="utf-8")
    convert_tree(src, tmp_path / "out")
    return text


@pytest.mark.parametrize("op", ["sin", "cos"])
@pytest.mark.parametrize("location", sorted(NOISE_FORWARD))
def test_float_noise_growing_through_a_loop_is_said_so(tmp_path, monkeypatch, location, op):
    """A chaotic loop of correct calls: the rounding differences of the two frameworks' matmuls grow
    call by call until one passes the tolerance. No line is wrong; the report says it is float noise
    (each run of the loop's line is its own group, so the growth is seen call by call)."""
    text = _noise_net(tmp_path, location, op, 60)
    rep = _compare(tmp_path, monkeypatch)
    first = rep.api["first"]
    assert first is not None and first["cause"] == "float_noise", first
    needle = "(h @ self.w" if location == "forward" else "(h @ w"
    assert first["original"]["line"] == _line_of(text, f"torch.{op}{needle}"), first
    assert len(first["trend"]) >= 3 and first["trend"][-1] > 0, first
    assert rep.api["paired"] >= 10  # one group per run of the loop's line


@pytest.mark.parametrize("location", sorted(NOISE_FORWARD))
def test_a_wrong_call_after_a_short_loop_is_this_call(tmp_path, monkeypatch, location):
    """The same model with few runs of the loop (no noise beyond tolerance) and a wrong softmax axis:
    the cause is that call, not noise."""
    text = _noise_net(tmp_path, location, "sin", 3)
    converted = (tmp_path / "out" / "model.py").read_text(encoding="utf-8")
    assert converted.count("axis=-1") == 1, converted
    (tmp_path / "out" / "model.py").write_text(converted.replace("axis=-1", "axis=0"), encoding="utf-8")
    first = _compare(tmp_path, monkeypatch).api["first"]
    assert first["cause"] == "this_call" and first["original"]["line"] == _line_of(text, ".softmax(dim=-1)"), first


# ------------------------------------------------ the reproducer of the first divergent call


@pytest.mark.parametrize(("bug", "location"), product(sorted(BUGS), sorted(LOCATIONS), pairs=False))
def test_the_reproducer_shows_the_difference_alone(tmp_path, monkeypatch, bug, location):
    """With --out, the report writes repro.py + inputs.npz; run alone (torch and MindSpore, no
    torch2ms, no model), it shows the same difference of that one statement and exits 1."""
    import re
    import subprocess
    import sys

    from torch2ms.align.api import CompareOptions, compare_models

    old, new, torch_line, _kb = BUGS[bug]
    out = _convert(tmp_path, location)
    converted = (out / "model.py").read_text(encoding="utf-8")
    (out / "model.py").write_text(converted.replace(old, new), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    opts = CompareOptions(input_shapes=[(2, 8, 8)], graph=False, api=True, out_dir=tmp_path / "report")
    first = compare_models("src/model.py:Net", "out/model.py:Net", opts).api["first"]
    script = Path(first["reproducer"])
    assert script.parent == tmp_path / "report" / "api-repro" and (script.parent / "inputs.npz").is_file()
    moved = tmp_path / "elsewhere"  # a user attaches the two files to a bug report
    shutil.copytree(script.parent, moved)
    run = subprocess.run(
        [sys.executable, str(moved / "repro.py")], cwd=moved, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"^\s*(from|import) torch2ms\b(?!_runtime)", script.read_text(encoding="utf-8"), re.M) is None
    assert torch_line.split("(")[0] in run.stdout, run.stdout
    diff = float(re.search(r"max abs difference: (\S+)", run.stdout).group(1))
    assert diff == pytest.approx(first["max_abs"], rel=1e-3, abs=1e-6), (run.stdout, first["max_abs"])


def test_no_reproducer_when_nothing_differs(tmp_path, monkeypatch):
    from torch2ms.align.api import CompareOptions, compare_models

    _convert(tmp_path, "forward")
    monkeypatch.chdir(tmp_path)
    opts = CompareOptions(input_shapes=[(2, 8, 8)], graph=False, api=True, out_dir=tmp_path / "report")
    assert compare_models("src/model.py:Net", "out/model.py:Net", opts).api["first"] is None
    assert not (tmp_path / "report" / "api-repro").exists()
