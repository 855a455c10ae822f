"""torch2ms replay (issue 25): a kit model's call configurations through the KB mapping, against torch.

Kit models (read from ../shared/realcode at test time) run one torch forward; every distinct call
configuration their own code makes is replayed through the KB's rewrite on real MindSpore against real
torch, on the recorded inputs and on regenerated ones. With the installed KB no configuration is beyond
tolerance; with a deliberately broken rule in a test-fixture KB (a wrong target, a wrong template) the
broken API — and only it — is caught, and ``export_cases`` writes it as a KB differential case that the
proof harness fails on the broken KB and passes on the real one.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from requires_support import CORPUS, require_kit

pytestmark = pytest.mark.differential

GPT = (
    "((C := GPT.get_default_config()), C.merge_from_dict({'model_type': 'gpt-nano', 'vocab_size': 64, "
    "'block_size': 32}), GPT(C))[2]"
)
# model → (kit folder, files to copy, the model's file, factory, input shape, input dtype)
MODELS = {
    "mingpt": ("karpathy/minGPT", ["mingpt/model.py", "mingpt/utils.py"], "mingpt/model.py", GPT, (2, 16), "int64"),
    "cifar_resnet": (
        "kuangliu/pytorch-cifar",
        ["models/resnet.py"],
        "models/resnet.py",
        "ResNet18()",
        (2, 3, 32, 32),
        "float32",
    ),
    "makemore": (
        "karpathy/makemore",
        ["makemore.py"],
        "makemore.py",
        "Transformer(ModelConfig(block_size=8, vocab_size=27, n_layer=2, n_embd=16, n_embd2=24, n_head=2))",
        (2, 8),
        "int64",
    ),
}

# broken rule → (the KB entry, the fields replaced, the models whose forward calls it)
BROKEN = {
    "softmax_to_log_softmax": ("torch.nn.functional.softmax", {"ms": "mindspore.ops.log_softmax"}, ["mingpt"]),
    "tanh_to_sigmoid": ("torch.tanh", {"ms": "mindspore.ops.sigmoid"}, ["mingpt"]),
    "pow_to_mul": ("torch.pow", {"ms": "mindspore.ops.mul"}, ["mingpt"]),
    "relu_to_gelu": ("torch.nn.functional.relu", {"ms": "mindspore.ops.gelu"}, ["cifar_resnet"]),
    "transpose_to_permute": (
        "torch.Tensor.transpose",
        {"template": "{self}.permute({dim1}, {dim0})"},
        ["mingpt", "makemore"],
    ),
    "masked_fill_to_add": (
        "torch.Tensor.masked_fill",
        {"status": "composite", "sig": ("mask", "value"), "template": "{self} + {mask}.astype({self}.dtype) * -1e4"},
        ["mingpt", "makemore"],
    ),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Each model's recorded configurations (one torch forward), built once."""
    require_kit()
    from torch2ms.align.torch_worker import build_model
    from torch2ms.replay.record import record_calls

    logs = {}
    for name, (folder, files, target, factory, shape, dtype) in MODELS.items():
        src = tmp_path_factory.mktemp(name)
        for f in files:
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(CORPUS / folder / f, src / f)
        sys.path.insert(0, str(src))
        try:
            model = build_model({"torch": f"{src / target}:{factory}", "seed": 0}).eval()
        finally:
            sys.path.remove(str(src))
        rng = np.random.default_rng(0)
        x = rng.integers(0, 8, shape) if dtype == "int64" else rng.standard_normal(shape).astype(dtype)
        logs[name] = record_calls(model, [x])
    return logs


def _broken_kb(entry_name: str, fields: dict):
    from torch2ms.kb import KB, load_kb

    kb = load_kb()
    entry = kb.get(entry_name)
    assert entry is not None
    # the entry's own rule changed; argument rules stay (dim → axis still applies to the new target)
    return KB([dataclasses.replace(e, **fields) if e is entry else e for e in kb])


@pytest.mark.parametrize("regenerate", [False, True], ids=["recorded", "regenerated"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_correct_mapping_gives_no_configuration_beyond_tolerance(recorded, model, regenerate):
    from torch2ms.replay.run import replay

    log = recorded[model]
    rep = replay(list(log.configs.values()), regenerate=regenerate)
    assert rep.failing() == [], [(r.config.call, r.ms_call, r.error, r.detail) for r in rep.failing()]
    ok = [r for r in rep.results if r.status == "ok"]
    assert len(ok) >= 5 and len(ok) >= 0.8 * len(rep.results), [(r.config.call, r.status) for r in rep.results]
    table = rep.table()
    assert sum(row["configs"] for row in table) == len(rep.results)
    assert all(row["worst"] is None or row["worst"] <= rep.tol for row in table)


def _cases(broken: str) -> list[tuple[str, str]]:
    return [(broken, model) for model in BROKEN[broken][2]]


@pytest.mark.parametrize("broken,model", [c for b in sorted(BROKEN) for c in _cases(b)])
def test_a_broken_kb_rule_is_caught_and_exported_as_a_case(recorded, tmp_path, broken, model):
    from torch2ms.kb import Case
    from torch2ms.kb import load_kb as real_kb
    from torch2ms.proof import CaseFailure, run_case
    from torch2ms.replay.export import CASES_TOML, export_cases
    from torch2ms.replay.run import replay

    entry_name, fields, _models = BROKEN[broken]
    kb = _broken_kb(entry_name, fields)
    rep = replay(list(recorded[model].configs.values()), kb=kb)
    failing = {r.config.api for r in rep.failing()}
    assert failing == {entry_name}, [(r.config.call, r.ms_call, r.error, r.detail) for r in rep.failing()]
    row = next(row for row in rep.table() if row["api"] == entry_name)
    assert row["failing"] >= 1 and rep.table()[0]["api"] == entry_name  # worst first

    path = export_cases(rep, tmp_path / "cases")
    assert path is not None and path.name == CASES_TOML
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    (api,) = data["api"]
    assert api["torch"] == entry_name and api["case"]
    assert list((tmp_path / "cases" / "inputs").glob("*.npz"))  # the recorded inputs beside
    case = Case(**api["case"][0], graph=False)
    with pytest.raises((CaseFailure, ValueError, TypeError, RuntimeError)):
        run_case(kb.get(entry_name), case, 0, kb)  # the exported case fails on the broken rule ...
    good = real_kb()
    run_case(good.get(entry_name), case, 0, good)  # ... and passes on the real one


def test_cli_replay_prints_the_table_and_exports(tmp_path, monkeypatch, capsys):
    require_kit()
    from torch2ms.cli import main

    folder, files, target, factory, _shape, _dtype = MODELS["cifar_resnet"]
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / folder / f, tmp_path / f)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")  # the table's API column whole (an xdist worker's terminal is narrow)
    argv = ["replay", "--torch", f"{target}:{factory}", "--input-shape", "2,3,32,32", "--export-cases", "cases"]
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "torch.nn.functional.relu" in out and "every configuration within tolerance" in out
    assert not Path("cases").exists()  # nothing failed: nothing exported


TRAIN = """\
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = F.gelu(self.fc(x))
        a = F.softmax(torch.matmul(h, h.transpose(1, 2)), dim=-1)
        return self.head(torch.matmul(a, h).mean(dim=1))


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    xs = torch.from_numpy(rng.standard_normal((6, 4, 5, 8)).astype(np.float32))
    ys = torch.from_numpy(rng.integers(0, 3, (6, 4)))
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(6):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs[i]), ys[i], label_smoothing=0.1)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_replay_of_training_steps_through_compare_trains_instrumentation(tmp_path):
    """N steps of an unmodified training script (its own process, instrumented as compare-train's torch
    side): the forward's and the loss's configurations, once per shape, with their call counts; none beyond
    tolerance on the real KB, and the broken softmax rule caught."""
    from torch2ms.replay.run import replay
    from torch2ms.replay.train import record_training

    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    log = record_training(str(tmp_path / "train.py"), 3, cwd=str(tmp_path))
    apis = {c.api: c for c in log.configs.values()}
    for api in ("torch.nn.functional.gelu", "torch.nn.functional.softmax", "torch.nn.functional.cross_entropy"):
        assert api in apis and apis[api].count == 3 and apis[api].inputs, sorted(apis)
    assert all(c.where.endswith("train.py:" + c.where.rsplit(":", 1)[1]) for c in log.configs.values())
    rep = replay(list(log.configs.values()))
    assert rep.failing() == [] and len([r for r in rep.results if r.status == "ok"]) >= 6, rep.to_dict()
    broken = replay(list(log.configs.values()), kb=_broken_kb(*BROKEN["softmax_to_log_softmax"][:2]))
    assert {r.config.api for r in broken.failing()} == {"torch.nn.functional.softmax"}
