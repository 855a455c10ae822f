"""Converted scripts start with MindSpore alone: idioms that used to keep ``import torch`` in place
(unpickling allow-lists, whole-model checkpoints, ONNX export) convert, or are marked with what to do.

The scripts run in a child process where torch, torchvision and torch2ms cannot be imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from requires_support import CORPUS, require_kit

from torch2ms.convert import convert_source, convert_tree

ROOT = Path(__file__).resolve().parents[1]

BLOCKER = textwrap.dedent("""\
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torchvision", "torch2ms"):
                raise ImportError(f"{name} is blocked: the converted script must run with MindSpore alone")
    sys.meta_path.insert(0, _Block())
    sys.path.insert(0, ".")
""")


def _run(folder: Path, script: str, block: bool) -> dict:
    """Run ``script`` from ``folder`` (torch blocked or not); its last stdout line is JSON."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["GLOG_v"] = "3"
    if not block:
        env["PYTHONPATH"] = str(ROOT / "src")
    prelude = BLOCKER if block else "import sys\nsys.path.insert(0, '.')\n"
    code = prelude + f"import runpy\nrunpy.run_path({script!r}, run_name='__main__')\n"
    res = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _imports_torch(code: str) -> bool:
    return re.search(r"^\s*(import|from) torch(\.|\s|$)", code, re.MULTILINE) is not None


SAFE_GLOBALS_SPELLINGS = [
    "import torch\nwith torch.serialization.safe_globals([Net]):\n    sd = torch.load(p)\n",
    "import torch\nfrom torch.serialization import safe_globals\nwith safe_globals([Net]):\n    sd = torch.load(p)\n",
    "import torch\nimport torch.serialization as ser\nwith ser.safe_globals([Net]):\n    sd = torch.load(p)\n",
]


@pytest.mark.parametrize("source", SAFE_GLOBALS_SPELLINGS)
def test_r20_safe_globals_with_header_goes_and_its_body_stays(source):
    res = convert_source("p = 'm.pt'\nclass Net: pass\n" + source, "s.py")
    assert "safe_globals" not in res.code and not _imports_torch(res.code), res.code
    assert "\nsd = load_checkpoint(p)\n" in res.code  # dedented to the with's level
    notes = [c.note for c in res.changes if c.api == "torch.serialization.safe_globals"]
    assert notes and "not pickles" in notes[0] and all(c.action == "converted" for c in res.changes)


def test_r20_safe_globals_beside_another_context_keeps_that_one():
    source = "import torch\nwith open(p, 'rb') as f, torch.serialization.safe_globals([int]):\n    sd = torch.load(f)\n"
    res = convert_source("p = 'm.pt'\n" + source, "s.py")
    assert "with open(p, 'rb') as f:\n    sd = load_checkpoint(f)\n" in res.code, res.code
    assert not _imports_torch(res.code)


def test_r20_add_safe_globals_statement_is_dropped():
    res = convert_source("import torch\nclass Net: pass\ntorch.serialization.add_safe_globals([Net])\nx = 1\n", "s.py")
    assert "safe_globals" not in res.code and not _imports_torch(res.code), res.code
    assert [c.action for c in res.changes if c.api == "torch.serialization.add_safe_globals"] == ["converted"]


NO_MODEL_BUILT = textwrap.dedent("""\
    import torch

    def generate(path):
        net = torch.load(path, map_location="cpu")
        net.eval()
        return net

    state = torch.load("weights.pt")
    print(state["fc.weight"])
""")


def test_r18_whole_model_load_without_a_built_model_is_marked_with_what_to_do():
    res = convert_source(NO_MODEL_BUILT, "gen.py")
    review = [c for c in res.changes if c.api == "torch.load" and c.action == "review"]
    assert len(review) == 1 and review[0].line == 4, res.changes
    assert "build the model class first (net = MyModel(...))" in review[0].note
    assert "load_param_into_net(net, mindspore.load_checkpoint(...))" in review[0].note
    lines = res.code.splitlines()
    at = lines.index("    net = load_checkpoint(path)")
    assert lines[at - 1].startswith("    # torch2ms: review — torch.load: net is a whole model"), res.code
    # A state dict read by key is not a model: converted as before, without a mark.
    assert 'state = load_checkpoint("weights.pt")' in res.code
    assert not _imports_torch(res.code)


WHOLE_MODEL = textwrap.dedent("""\
    import json
    import torch
    import torch.nn as nn
    import torch.onnx


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x)


    torch.serialization.add_safe_globals([Net])
    x = torch.ones(4, 3)
    model = Net()
    saved = model(x).tolist()
    with open("model.pt", "wb") as f:
        torch.save(model, f)
    model = Net()  # other weights: the load must bring the saved ones back
    fresh = model(x).tolist()
    with open("model.pt", "rb") as f:
        with torch.serialization.safe_globals([Net, nn.Linear]):
            model = torch.load(f)
    model.eval()
    loaded = model(x).tolist()
    print(json.dumps({"same": loaded == saved, "changed": loaded != fresh, "model": isinstance(model, nn.Module)}))
""")


@pytest.mark.slow
def test_r18_whole_model_save_then_load_keeps_the_model_and_runs_without_torch(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "train.py").write_text(WHOLE_MODEL, encoding="utf-8")
    report = convert_tree(src, out)
    assert not report.failed
    code = (out / "train.py").read_text(encoding="utf-8")
    assert not _imports_torch(code) and "safe_globals" not in code, code
    assert "load_param_into_net_strict(model, load_checkpoint(f))" in code, code
    expected = _run(src, "train.py", block=False)
    got = _run(out, "train.py", block=True)
    assert expected == {"same": True, "changed": True, "model": True}  # what torch does
    assert got == expected


ONNX_EXPORT = textwrap.dedent("""\
    import json
    import torch
    import torch.nn as nn
    import torch.onnx


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x, h):
            return self.fc(x) + h


    model = Net()
    model.eval()
    x, h = torch.ones(1, 3), torch.zeros(1, 2)
    torch.onnx.export(model, (x, h), "net.onnx", opset_version=11)
    torch.onnx.export(model, (x, h), "net.bin")  # no .onnx suffix: written under this very name
    print(json.dumps({"weight": model.fc.weight.detach().numpy().ravel().tolist()}))
""")


def _onnx_fields(data: bytes) -> dict[int, list]:
    """The top-level fields of a protobuf message (field number → values): enough to tell an ONNX
    ModelProto (1 ir_version, 7 graph, 8 opset_import) without the onnx package."""
    fields: dict[int, list] = {}
    at = 0

    def varint() -> int:
        nonlocal at
        shift = value = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        key = varint()
        number, kind = key >> 3, key & 7
        if kind == 0:
            fields.setdefault(number, []).append(varint())
        elif kind == 2:
            size = varint()
            fields.setdefault(number, []).append(data[at : at + size])
            at += size
        else:
            raise AssertionError(f"unexpected wire type {kind}")
    return fields


@pytest.mark.slow
def test_r29_onnx_export_writes_the_model_where_torch_does_with_mindspore_alone(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "export.py").write_text(ONNX_EXPORT, encoding="utf-8")
    convert_tree(src, out)
    mode = out.stat().st_mode & 0o777
    code = (out / "export.py").read_text(encoding="utf-8")
    assert not _imports_torch(code) and "onnx_export(model, (x, h), " in code, code
    weight = np.asarray(_run(out, "export.py", block=True)["weight"], dtype=np.float32)
    for name in ("net.onnx", "net.bin"):
        data = (out / name).read_bytes()
        fields = _onnx_fields(data)
        assert fields[1][0] >= 3 and 7 in fields and 8 in fields, name  # ir_version, graph, opset_import
        assert weight.tobytes() in fields[7][0], name  # the Dense weights are in the graph's initializers
    assert not (out / "net.bin.onnx").exists()
    # As torch leaves them: the files writable, their folder's mode unchanged.
    assert (out / "net.onnx").stat().st_mode & 0o200 and (out / "net.bin").stat().st_mode & 0o200
    assert out.stat().st_mode & 0o777 == mode


GENERATOR = textwrap.dedent("""\
    import json
    import torch


    def split(seed):
        rng = torch.Generator()
        rng.manual_seed(seed)
        return torch.randperm(20, generator=rng).tolist()


    first, again, other = split(1337), split(1337), split(1)
    rng = torch.Generator().manual_seed(3)
    a, b = torch.randperm(20, generator=rng).tolist(), torch.randperm(20, generator=rng).tolist()
    print(json.dumps({
        "permutation": sorted(first) == list(range(20)),
        "reproducible": first == again,
        "seeded": first != other,
        "advances": a != b,
        "initial_seed": rng.initial_seed(),
    }))
""")


@pytest.mark.slow
def test_r17_a_scripts_own_seeded_generator_draws_permutations_without_torch(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "split.py").write_text(GENERATOR, encoding="utf-8")
    convert_tree(src, out)
    code = (out / "split.py").read_text(encoding="utf-8")
    assert not _imports_torch(code) and "randperm(20, generator=rng)" in code, code
    expected = _run(src, "split.py", block=False)
    assert expected == {"permutation": True, "reproducible": True, "seeded": True, "advances": True, "initial_seed": 3}
    assert _run(out, "split.py", block=True) == expected


WORD_LM = CORPUS / "pytorch" / "examples" / "word_language_model"


@pytest.mark.slow
def test_r18_word_language_model_trains_saves_loads_and_exports_with_mindspore_alone(tmp_path):
    """pytorch/examples' word_language_model: torch.save(model) / safe_globals + torch.load /
    flatten_parameters / torch.onnx.export all in one script, run for one tiny epoch."""
    require_kit(WORD_LM)
    out = tmp_path / "out"
    convert_tree(WORD_LM, out)
    for name in ("main.py", "generate.py"):
        assert not _imports_torch((out / name).read_text(encoding="utf-8")), name
    data = tmp_path / "data"
    data.mkdir()
    words = "the cat sat on a mat dog ran far away".split()
    for part, lines in (("train", 20), ("valid", 6), ("test", 6)):
        text = "\n".join(" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(12)) for i in range(lines))
        (data / f"{part}.txt").write_text(text + "\n", encoding="utf-8")
    argv = ["main.py", "--data", str(data), "--emsize", "8", "--nhid", "8", "--nlayers", "1", "--epochs", "1"]
    argv += ["--bptt", "5", "--batch_size", "2", "--save", str(tmp_path / "model.pt")]
    argv += ["--onnx-export", str(tmp_path / "model.onnx")]
    code = BLOCKER + f"import runpy\nsys.argv = {argv!r}\nrunpy.run_path('main.py', run_name='__main__')\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"GLOG_v": "3"}
    res = subprocess.run([sys.executable, "-c", code], cwd=out, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "End of training" in res.stdout, res.stdout
    assert (tmp_path / "model.pt.ckpt").is_file()  # the whole model's parameters, loaded back before the test
    assert _onnx_fields((tmp_path / "model.onnx").read_bytes())[1][0] >= 3


def test_r20_model_lookup_in_a_module_namespace_converts():
    """models.__dict__[name] reaches the converted architectures (tests/test_convert_tv_model_dispatch.py
    has every spelling); a dict of builders written by hand converts too."""
    looked_up = convert_source("import torchvision.models as models\nmodel = models.__dict__['resnet18']()\n", "a.py")
    assert "model = tv_models['resnet18']()" in looked_up.code and "torchvision" not in looked_up.code
    advised = convert_source(
        "import torchvision.models as models\nmodel = {'resnet18': models.resnet18}['resnet18']()\n", "a.py"
    )
    assert "{'resnet18': tv_models.resnet18}['resnet18']()" in advised.code and "torchvision" not in advised.code


BUILT_IN_SCOPES = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    model = nn.Linear(3, 2)


    def restore(path):
        net = nn.Sequential(nn.Linear(3, 2)).to("cpu")
        net = torch.load(path)
        return net


    def restore_global(path):
        global model
        model = torch.load(path)
""")


def test_r18_whole_model_load_finds_the_model_built_in_its_function_or_as_a_global():
    res = convert_source(BUILT_IN_SCOPES, "restore.py")
    assert "load_param_into_net_strict(net, load_checkpoint(path))" in res.code, res.code
    assert "load_param_into_net_strict(model, load_checkpoint(path))" in res.code, res.code
    assert not [c for c in res.changes if c.action != "converted"], res.changes


SHADOWING = textwrap.dedent("""\
    import json
    import os
    import torch
    import torch.nn as nn


    class Generator(nn.Module):  # the script's own class, named like torch.Generator
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x)


    def save(model, work_dir):
        ckpt_path = os.path.join(work_dir, "model.pt")  # a local named like the checkpoint helper
        torch.save(model.state_dict(), ckpt_path)
        return ckpt_path


    net = Generator()
    path = save(net, ".")
    net.load_state_dict(torch.load(path))
    order = torch.randperm(6, generator=torch.Generator().manual_seed(0))
    print(json.dumps({"saved": os.path.exists(path) or os.path.exists(path + ".ckpt"), "n": len(order.tolist())}))
""")


@pytest.mark.slow
def test_r6_runtime_helpers_named_like_the_scripts_own_names_are_imported_under_another(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "gan.py").write_text(SHADOWING, encoding="utf-8")
    convert_tree(src, out)
    code = (out / "gan.py").read_text(encoding="utf-8")
    assert "ckpt_path as torch2ms_ckpt_path" in code and "Generator as torch2ms_Generator" in code, code
    assert "ms.save_checkpoint(model, torch2ms_ckpt_path(ckpt_path))" in code
    assert _run(out, "gan.py", block=True) == _run(src, "gan.py", block=False) == {"saved": True, "n": 6}
