"""compare-train --nproc N: a torch DDP script under torchrun and its conversion under msrun, N CPU processes each.

Generated data-parallel scripts (the kit's imagenet/main.py style: torch.distributed, DDP, DistributedSampler)
vary one spelling at a time — how the process group is started, how DDP and DistributedSampler are
named and imported, sampler arguments, module-level loop or a main() — and every combination converts to
MindSpore with nothing of torch left (communication.init, the data-parallel context, the gradient
reducer, the sharded sampler). Two of them run end to end: torchrun and msrun with 2 CPU processes each,
rank 0's losses compared step by step (SAME), every rank's parameters equal to rank 0's on both sides;
the gradient reducer removed from the conversion makes the ranks part and the runs DIFFERENT; a model
never wrapped in DDP parts the ranks on both sides, and the runs stay SAME (tests/test_ddp_wrapping.py
checks the conversion statically). The fast
tests check where each rank records, the launch commands, the rank comparison on made-up records and
the usage errors.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matrix_support import full_matrix

from torch2ms.cli import main
from torch2ms.convert import convert_source, convert_tree
from torch2ms.trainrun import compare_train, ranks
from torch2ms.trainrun.common import side_dir
from torch2ms.trainrun.runner import _child_env, ms_command, torch_command, write_config

INIT = {
    "positional": 'dist.init_process_group("gloo")',
    "keywords": 'dist.init_process_group(backend="gloo", init_method="env://")',
    "full_name": 'torch.distributed.init_process_group(backend="gloo")',
}
DDP = {
    "attribute": ("", "torch.nn.parallel.DistributedDataParallel(net)"),
    "alias": ("from torch.nn.parallel import DistributedDataParallel as DDP\n", "DDP(net)"),
    "nn_parallel": ("", "nn.parallel.DistributedDataParallel(net)"),
}
SAMPLER = {
    "module_path": (
        "import torch.utils.data.distributed\n",
        "torch.utils.data.distributed.DistributedSampler(dataset, shuffle=False)",
    ),
    "from_data": (
        "from torch.utils.data import DistributedSampler\n",
        "DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank(), shuffle=False)",
    ),
    "from_distributed": (
        "from torch.utils.data.distributed import DistributedSampler\n",
        "DistributedSampler(dataset, shuffle=False, drop_last=True)",
    ),
}
WHERE = ("module", "function")


def ddp_script(init: str, ddp: str, sampler: str, where: str) -> str:
    """A small DDP training script: 64 samples sharded over the ranks, batches of 8, SGD with momentum."""
    d_import, d_call = DDP[ddp]
    s_import, s_call = SAMPLER[sampler]
    body = f"""{INIT[init]}
torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
x = torch.randn(64, 4, generator=g)
y = torch.randint(0, 3, (64,), generator=g)
net = MLP()
model = {d_call}
dataset = TensorDataset(x, y)
sampler = {s_call}
loader = DataLoader(dataset, batch_size=8, sampler=sampler)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(3):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
state = model.module.state_dict()
dist.destroy_process_group()
"""
    if where == "function":
        lines = "".join(f"    {line}\n" if line else "\n" for line in body.splitlines())
        body = f'def main():\n{lines}\n\nif __name__ == "__main__":\n    main()\n'
    head = f"""import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{d_import}{s_import}

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


"""
    return head + body


def guarded_script() -> str:
    """The same training, distributed only when launched so (WORLD_SIZE > 1): plain `python` runs it alone."""
    head = ddp_script("positional", "alias", "from_distributed", "module").split("dist.init_process_group")[0]
    return (
        "import os\n"
        + head
        + """def main():
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 4, generator=g)
    y = torch.randint(0, 3, (64,), generator=g)
    net = MLP()
    model = DDP(net) if distributed else net
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=False) if distributed else None
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(3):
        if distributed:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""
    )


COMBOS = list(itertools.product(INIT, DDP, SAMPLER, WHERE))
TORCH_LEFT = re.compile(r"(?<![\w.])(torch|dist|DDP)\.|(?<![\w.])DDP\(|^\s*(import|from) torch\b(?!2ms)", re.M)


def _code_only(code: str) -> str:
    return "\n".join(line.split("#")[0] for line in code.splitlines())


@pytest.mark.parametrize("init,ddp,sampler,where", COMBOS, ids=["-".join(c) for c in COMBOS])
def test_every_ddp_spelling_converts_to_mindspore_data_parallel(init, ddp, sampler, where):
    res = convert_source(ddp_script(init, ddp, sampler, where), "ddp_train.py")
    assert res.error is None, res.error
    code = res.code
    assert not TORCH_LEFT.search(_code_only(code)), code
    assert "ms.communication.init()" in code
    assert "ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)" in code
    assert "nn.DistributedGradReducer(optimizer.parameters, mean=True)" in code
    assert "grads = grad_reducer(grads)" in code
    assert "ds.dataloader.DistributedSampler(dataset" in code and "sampler=sampler" in code
    assert ".module" not in _code_only(code) and "ms.communication.release()" in code
    assert not [c for c in res.changes if c.action in ("review", "unsupported")], res.changes
    compile(code, "ddp_train.py", "exec")


def test_guarded_ddp_script_converts_with_its_single_process_path():
    code = convert_source(guarded_script(), "ddp_train.py").code
    assert not TORCH_LEFT.search(_code_only(code)), code
    assert 'int(os.environ.get("RANK_SIZE", "1")) > 1' in code  # torchrun's WORLD_SIZE → msrun's RANK_SIZE
    # without msrun there is no init: the reducer must not be built (it needs the communication group);
    # runtime averaged() checks GlobalComm.INITED
    assert "if averaged(optimizer.parameters) else nn.Identity()" in code
    assert "model = data_parallel(net) if distributed else net" in code


# ---- where each rank records, and how the launchers are started -------------------------------------


@pytest.mark.parametrize(
    "nproc,env,side,want",
    [
        (1, {"RANK": "1"}, "torch", "torch"),  # one process: the user's RANK is not ours
        (1, {"RANK_ID": "1"}, "ms", "ms"),
        (2, {}, "torch", "torch"),
        (2, {"RANK": "0"}, "torch", "torch"),
        (2, {"RANK": "1"}, "torch", "torch.rank1"),
        (4, {"RANK": "3"}, "torch_noise", "torch_noise.rank3"),
        (2, {"RANK_ID": "0"}, "ms", "ms"),
        (2, {"RANK_ID": "1"}, "ms", "ms.rank1"),
        (2, {"RANK_ID": "1"}, "torch", "torch.rank1"),  # MindSpore's rank 1 replays torch's rank 1
        (2, {"RANK_ID": "0", "MS_ROLE": "MS_SCHED"}, "ms", "ms.sched"),
    ],
)
def test_each_rank_records_in_its_own_folder(monkeypatch, tmp_path, nproc, env, side, want):
    for name in ("RANK", "RANK_ID", "MS_ROLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert side_dir({"work": str(tmp_path), "nproc": nproc}, side) == tmp_path / want


def test_launch_commands(tmp_path):
    config = tmp_path / "config.json"
    assert torch_command(None, config) == [sys.executable, torch_command(None, config)[1], str(config)]
    t = torch_command("/opt/py", config, 2)
    assert t[:3] == ["/opt/py", "-m", "torch.distributed.run"] and "--nproc_per_node=2" in t
    assert t[-2].endswith("torch_boot.py") and t[-1] == str(config)
    assert any(a.startswith("--master_port=") for a in t)
    m = ms_command(config, 3)
    assert m[:3] == [sys.executable, "-m", "mindspore.parallel.cluster.run"]
    assert "--worker_num=3" in m and "--local_worker_num=3" in m and "--join=True" in m
    launcher = Path(m[-2])
    assert launcher.parent == tmp_path and m[-1] == str(config)
    compile(launcher.read_text(encoding="utf-8"), str(launcher), "exec")  # msrun runs a file
    assert "MS_SCHED" in launcher.read_text(encoding="utf-8")


def test_msrun_scheduler_runs_the_script_bare(tmp_path):
    """msrun's scheduler process runs the script too (up to init()): no instrumentation, no record, the
    script's arguments as given."""
    script = tmp_path / "train.py"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write('ran')\n", encoding="utf-8")
    config = write_config(tmp_path / "work", steps=2, ms_script=str(script), args=[str(tmp_path / "ran.txt")], nproc=2)
    launcher = ms_command(config, 2)[-2]
    env = {**_child_env(0), "MS_ROLE": "MS_SCHED", "RANK_ID": "0"}
    done = subprocess.run([sys.executable, launcher, str(config)], env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0 and (tmp_path / "ran.txt").read_text() == "ran"
    assert not list((tmp_path / "work").glob("ms*/record.json"))


def _fake_rank(work: Path, side: str, rank: int, steps: int, params: dict[str, np.ndarray]) -> dict:
    folder = ranks.rank_dir(work, side, rank)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "final_model0.npz", **params)
    rec = {
        "events": [{"step": i + 1} for i in range(steps)],
        "models": [{"key": "model0", "final": "final_model0.npz"}],
    }
    (folder / "record.json").write_text(json.dumps(rec), encoding="utf-8")
    return rec


@pytest.mark.parametrize(
    "case,kinds,severity",
    [
        ("agree", [], None),
        ("params", ["ms"], "difference"),  # MindSpore's replicas parted, torch's did not: the conversion's
        ("steps", ["torch"], "difference"),
        ("missing", ["ms"], "difference"),
        ("both", ["torch", "ms"], "warning"),  # the script's own doing (no DDP on this device, say)
    ],
)
def test_ranks_are_compared_with_rank_0(tmp_path, case, kinds, severity):
    w = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(3, np.float32)}
    moved = {**w, "b": w["b"] + 1e-3}
    records = {}
    for side in ("torch", "ms"):
        records[side] = _fake_rank(tmp_path, side, 0, 4, w)
        if case == "missing" and side == "ms":
            continue
        other = moved if (case == "params" and side == "ms") or case == "both" else w
        _fake_rank(tmp_path, side, 1, 3 if case == "steps" and side == "torch" else 4, other)
    findings, line = ranks.compare_ranks(tmp_path, 2, records)
    named = sorted({f["message"].split()[0] for f in findings})
    assert named == sorted({"torch" if k == "torch" else "MindSpore" for k in kinds}), findings
    assert all(f["severity"] == severity for f in findings)
    assert "2 processes per side" in line
    if case in ("params", "both"):
        assert "model0:b" in findings[-1]["message"] and "1.0e-03" in findings[-1]["message"]


@pytest.fixture
def _wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.mark.parametrize("args,words", [(["--nproc", "0"], "--nproc 0"), (["--nproc", "2", "--api"], "--api")])
def test_nproc_usage_errors(capsys, tmp_path, _wide_terminal, args, words):
    script = tmp_path / "t.py"
    script.write_text("x = 1\n", encoding="utf-8")
    rc = main(["compare-train", "--torch", str(script), "--ms", str(script), *args, "--out", str(tmp_path / "o")])
    text = " ".join((lambda o: o.out + o.err)(capsys.readouterr()).split())
    assert rc == 2 and words in text and "Traceback" not in text


# ---- the real thing: torchrun and msrun, 2 CPU processes each ------------------------------------------------

STEPS = 4


def _converted(tmp_path: Path, combo: tuple[str, ...], bug: tuple[str, str] | None = None) -> tuple[Path, Path]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ddp_train.py").write_text(ddp_script(*combo), encoding="utf-8")
    out = tmp_path / "ms"
    convert_tree(str(src), str(out))
    if bug is not None:
        code = (out / "ddp_train.py").read_text(encoding="utf-8")
        assert bug[0] in code, f"the conversion no longer contains {bug[0]!r}: update the injection"
        (out / "ddp_train.py").write_text(code.replace(bug[0], bug[1]), encoding="utf-8")
    return src / "ddp_train.py", out / "ddp_train.py"


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(
    "combo,mode",
    [
        (("positional", "attribute", "module_path", "function"), "pynative"),
        *([(("keywords", "alias", "from_data", "module"), "graph")] if full_matrix() else []),
    ],
    ids=["imagenet-style-pynative", *(["alias-module-level-graph"] if full_matrix() else [])],
)
def test_ddp_script_under_torchrun_and_msrun_trains_the_same(tmp_path, combo, mode):
    torch_script, ms_script = _converted(tmp_path, combo)
    rep = compare_train(
        str(torch_script),
        str(ms_script),
        steps=STEPS,
        nproc=2,
        mode=mode,
        cwd=str(tmp_path),
        timeout=300,
        out_dir=str(tmp_path / "out"),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.sides)
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= 1e-4
    work = tmp_path / "out"
    for side in ("torch", "ms"):  # both ranks of both sides trained and recorded
        rec1 = json.loads((work / f"{side}.rank1" / "record.json").read_text(encoding="utf-8"))
        assert len(rec1["events"]) == STEPS
    t0 = np.load(work / "torch" / "batches.npz")
    t1 = np.load(work / "torch.rank1" / "batches.npz")
    assert any(not np.array_equal(t0[k], t1[k]) for k in t0.files)  # the ranks trained on different shards
    assert any("2 processes per side" in c and "torch 0.0e+00" in c for c in rep.conditions), rep.conditions


@pytest.mark.slow
@pytest.mark.differential
def test_gradients_not_averaged_across_msrun_workers_are_named(tmp_path):
    combo = ("positional", "attribute", "module_path", "function")
    torch_script, ms_script = _converted(tmp_path, combo, ("grads = grad_reducer(grads)", "pass"))
    rep = compare_train(
        str(torch_script),
        str(ms_script),
        steps=STEPS,
        nproc=2,
        cwd=str(tmp_path),
        timeout=300,
        out_dir=str(tmp_path / "out"),
    )
    assert rep.status == "different" and rep.error is None, (rep.error, rep.findings)
    assert rep.first_divergence is not None and rep.first_divergence["step"] == 2  # step 1 starts equal
    rank_findings = [f["message"] for f in rep.findings if f["kind"] == "ranks"]
    assert rank_findings and all(m.startswith("MindSpore rank 1 ends with other parameters") for m in rank_findings)


@pytest.mark.slow
@pytest.mark.differential
def test_ddp_script_without_a_launcher_trains_alone_the_same(tmp_path):
    """World size 1: the converted DDP script run with plain python (no msrun) against torch's (no torchrun)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "ddp_train.py").write_text(guarded_script(), encoding="utf-8")
    convert_tree(str(src), str(tmp_path / "ms"))
    rep = compare_train(
        str(src / "ddp_train.py"),
        str(tmp_path / "ms" / "ddp_train.py"),
        steps=STEPS,
        cwd=str(tmp_path),
        out_dir=str(tmp_path / "out"),
    )
    assert rep.status == "same", (rep.error, rep.findings)
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= 1e-4
    assert not list((tmp_path / "out").glob("*.rank*"))


@pytest.mark.slow
@pytest.mark.differential
def test_never_wrapped_model_trains_apart_in_every_rank_on_both_sides(tmp_path):
    """init_process_group without DDP (imagenet/main.py on CPU): torch averages nothing, its ranks part on their
    shards; the conversion builds no reducer, its ranks part the same way: SAME, the parting named on both sides."""
    combo = ("positional", "attribute", "module_path", "function")
    torch_src = ddp_script(*combo).replace(DDP["attribute"][1], "net").replace("model.module.", "model.")
    src = tmp_path / "src"
    src.mkdir()
    (src / "ddp_train.py").write_text(torch_src, encoding="utf-8")
    convert_tree(str(src), str(tmp_path / "ms"))
    ms_script = tmp_path / "ms" / "ddp_train.py"
    code = ms_script.read_text(encoding="utf-8")
    assert "ms.communication.init()" in code and "DistributedGradReducer" not in code, code
    rep = compare_train(
        str(src / "ddp_train.py"),
        str(ms_script),
        steps=STEPS,
        nproc=2,
        cwd=str(tmp_path),
        timeout=300,
        out_dir=str(tmp_path / "out"),
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.sides)
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= 1e-4
    parted = [f for f in rep.findings if f["kind"] == "ranks"]
    assert {f["message"].split()[0] for f in parted} == {"torch", "MindSpore"}, parted
    assert all(f["severity"] == "warning" for f in parted), parted
