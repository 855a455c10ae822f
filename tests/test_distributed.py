"""R19: torch DDP scripts → mindspore.communication + data-parallel context + sharded data, run with msrun.

The unit tests check each rewrite before/after. The end-to-end test converts a torch DDP script,
launches the converted script with msrun (2 CPU workers on 127.0.0.1) and checks that both workers
end with the same parameters, equal to a single-process torch run on the full batch: the mean of
the shards' gradients is the full batch's gradient (mean losses, equal shards), so agreement proves
the gradients really are averaged across the workers.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from ports_support import run_on_a_port

from torch2ms.convert import convert_source, pipeline
from torch2ms.convert.constructs import distributed
from torch2ms.convert.state import FileState
from torch2ms.kb import load_kb

DDP_SCRIPT = '''
"""Data-parallel training of a tiny MLP: each rank trains on its shard of a fixed dataset."""
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main(rank, world_size, out_dir):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)
    data = np.load(os.path.join(out_dir, "data.npz"))
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
    net = MLP()
    with torch.no_grad():
        for name, p in net.named_parameters():
            p.copy_(torch.tensor(data[name]))
    model = DDP(net)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
    seen = []
    for xb, yb in loader:
        seen.append(yb)
    rank_sum = torch.tensor([float(rank + 1)])
    dist.all_reduce(rank_sum, op=dist.ReduceOp.SUM)
    from_0 = torch.tensor([float(rank + 10)])
    dist.broadcast(from_0, src=0)
    peak = torch.tensor([float(rank + 5)])
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    dist.barrier()
    state = model.module.state_dict()
    np.savez(os.path.join(out_dir, f"rank{dist.get_rank()}.npz"), rank_arg=np.array(rank),
             world=np.array(dist.get_world_size()), rank_sum=rank_sum.numpy(), from_0=from_0.numpy(),
             peak=peak.numpy(), labels=torch.cat(seen).numpy(), **{k: v.detach().numpy() for k, v in state.items()})
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(2, sys.argv[1]), nprocs=2, join=True)
'''

PARAMS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def _applies(src: str) -> bool:
    """Does the distributed stage take this file?"""
    state = FileState("<string>", textwrap.dedent(src), load_kb())
    pipeline.parse(state)
    return not state.done and distributed.applies(state)


def _code(src: str) -> str:
    res = convert_source(textwrap.dedent(src))
    assert res.error is None, res.error
    return res.code


# ---- before/after of each rewrite ------------------------------------------------------------


def test_r19_init_process_group_becomes_communication_init_and_data_parallel_context():
    out = _code("""
        import torch.distributed as dist
        dist.init_process_group(backend="gloo")
        """)
    assert 'ms.set_device("CPU")' in out  # gloo is torch's CPU backend
    assert "ms.communication.init()" in out
    assert "ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)" in out
    assert "import torch" not in out and "dist." not in out
    nccl = _code("""
        import torch.distributed as dist
        dist.init_process_group("nccl")
        """)
    assert "set_device" not in nccl and "ms.communication.init()" in nccl  # MindSpore picks the backend by device


def test_r19_rank_world_size_collectives_and_teardown():
    out = _code("""
        import torch
        import torch.distributed as dist
        def f(t):
            r, n = dist.get_rank(), dist.get_world_size()
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            dist.all_reduce(t)
            dist.broadcast(t, src=0)
            dist.barrier()
            dist.destroy_process_group()
            return r, n
        """)
    assert "r, n = ms.communication.get_rank(), ms.communication.get_group_size()" in out
    assert "ops.communication.all_reduce(t, op='sum')" in out  # in place, as in torch
    assert "ops.communication.all_reduce(t)\n" in out
    assert "ops.communication.broadcast(t, src=0)" in out
    assert "ops.AllReduce()(ops.zeros(1)).asnumpy()  # torch2ms: torch barrier()" in out  # blocks on CPU too
    assert "ms.communication.release()" in out
    assert "dist." not in out and "import torch" not in out


def test_r19_non_sum_reduce_is_converted_with_a_review_note():
    src = "import torch.distributed as dist\ndef f(t):\n    dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)\n"
    res = convert_source(src)
    assert "ops.communication.all_reduce(t, op='prod')" in res.code
    note = next(c for c in res.changes if c.api == "torch.distributed.all_reduce")
    assert note.action == "review" and "'sum' and 'max' only" in note.note and note.line == 3


def test_r19_ddp_wrapper_is_dropped_with_its_module_attribute_and_import():
    out = _code("""
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        def f(net, rank):
            model = DDP(net, device_ids=[rank])
            return model.module.state_dict(), model(1)
        """)
    assert "model = data_parallel(net)\n" in out  # the model itself, its parameters marked for the reducer
    assert "model.state_dict(), model(1)" in out
    assert "DDP" not in out and "DistributedDataParallel" not in out


def test_r19_spawn_and_torchrun_environment_become_msrun():
    out = _code("""
        import torch.multiprocessing as mp
        import torch.distributed as dist
        def main(rank, world):
            dist.init_process_group("gloo", rank=rank, world_size=world)
        if __name__ == "__main__":
            mp.spawn(main, args=(4,), nprocs=4, join=True)
        """)
    assert 'main(int(os.environ["RANK_ID"]), 4)' in out and "import os\n" in out
    assert "msrun --worker_num=4" in out
    env = _code("""
        import os
        import torch.distributed as dist
        local = int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else 0
        rank, world = int(os.environ.get("RANK", 0)), int(os.getenv('WORLD_SIZE', "1"))
        dist.init_process_group("nccl")
        """)
    assert 'int(os.environ["DEVICE_ID"]) if "DEVICE_ID" in os.environ else 0' in env
    assert 'os.environ.get("RANK_ID", 0)' in env
    assert "os.getenv('RANK_SIZE', \"1\")" in env


def test_r19_converted_file_names_its_msrun_launch_command():
    out = _code("""
        import torch.distributed as dist
        dist.init_process_group("gloo")
        """)
    first = out.lstrip().splitlines()[0]
    assert first.startswith("# torch2ms: distributed data parallel: launch every worker with `msrun --worker_num=N")
    spawned = convert_source(DDP_SCRIPT).code.lstrip().splitlines()[0]  # mp.spawn(..., nprocs=2)
    assert "`msrun --worker_num=2 --local_worker_num=2 --master_addr=127.0.0.1" in spawned


def test_r19_training_step_averages_gradients_only_in_distributed_scripts():
    out = convert_source(DDP_SCRIPT).code
    # a run without msrun (no init) must not reach the reducer: it segfaults uninitialised; averaged()
    # also says False for parameters of a model torch never wrapped in DDP (tests/test_ddp_wrapping.py)
    assert (
        "grad_reducer = nn.DistributedGradReducer(optimizer.parameters, mean=True) "
        "if averaged(optimizer.parameters) else nn.Identity()" in out
    )
    assert "model = data_parallel(net)" in out
    step = out[out.index("def construct(self, xb, yb):") :]
    lines = [ln.strip() for ln in step.splitlines()[1:4]]
    assert lines == ["loss, grads = grad_fn(xb, yb)", "grads = grad_reducer(grads)", "optimizer(grads)"]
    plain = DDP_SCRIPT.replace("model = DDP(net)", "model = net").replace("import torch.distributed as dist\n", "")
    plain = plain[: plain.index("    rank_sum =")]
    plain = plain.replace('    dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)\n', "")
    assert "DistributedGradReducer" not in convert_source(plain).code.replace("DistributedSampler", "")


def test_r19_sampler_composes_with_the_converted_data_pipeline():
    out = convert_source(DDP_SCRIPT).code
    assert "ds.dataloader.DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)" in out
    assert "sampler=sampler" in out


def test_r19_changes_are_reported_on_their_torch_lines():
    res = convert_source(DDP_SCRIPT)
    lines = DDP_SCRIPT.splitlines()
    for c in res.changes:
        if c.api.startswith(("torch.distributed.", "torch.multiprocessing.")) or "DistributedDataParallel" in c.api:
            assert c.action in ("converted", "review"), c
            name = c.api.rsplit(".", 1)[-1].replace("DistributedDataParallel", "DDP")
            assert name in lines[c.line - 1], (c, lines[c.line - 1])


def test_r19_files_without_distributed_code_skip_the_pass():
    assert not _applies("import torch\nx = torch.zeros(2)\n")
    assert not _applies("import torch\n# distributed training notes\nx = torch.zeros(2)\n")
    # asking for the rank is not data parallelism: no msrun header, no gradient reducer
    query = "import torch.distributed as dist\nr = dist.get_rank() if dist.is_initialized() else 0\n"
    assert _applies(query)
    out = _code(query)
    assert "msrun" not in out and "get_rank()" in out


# ---- the real thing: msrun, 2 CPU workers ----------------------------------------------------


def _torch_full_batch(data: dict, epochs: int, batch: int) -> dict[str, np.ndarray]:
    """Single-process torch: the same steps on the union of the shards (the full batch)."""
    import torch

    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)
    with torch.no_grad():
        for name, layer in (("fc1", fc1), ("fc2", fc2)):
            layer.weight.copy_(torch.tensor(data[f"{name}.weight"]))
            layer.bias.copy_(torch.tensor(data[f"{name}.bias"]))
    params = [fc1.weight, fc1.bias, fc2.weight, fc2.bias]
    opt = torch.optim.SGD(params, lr=0.1)
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
    for _ in range(epochs):
        for i in range(0, len(x), batch):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(fc2(torch.relu(fc1(x[i : i + batch]))), y[i : i + batch])
            loss.backward()
            opt.step()
    return dict(zip(PARAMS, (p.detach().numpy() for p in params)))


@pytest.mark.slow
@pytest.mark.differential
def test_r19_msrun_two_cpu_workers_average_gradients_like_full_batch_torch(tmp_path):
    res = convert_source(DDP_SCRIPT, "ddp_train.py")
    assert res.error is None
    script = tmp_path / "ddp_train.py"
    script.write_text(res.code)
    rng = np.random.default_rng(0)
    data = {"x": rng.standard_normal((16, 4)).astype(np.float32), "y": rng.integers(0, 3, 16).astype(np.int64)}
    for name, shape in zip(PARAMS, ((8, 4), (8,), (3, 8), (3,))):
        data[name] = (rng.standard_normal(shape) * 0.5).astype(np.float32)
    np.savez(tmp_path / "data.npz", **data)

    bindir = str(Path(sys.executable).parent)  # msrun starts the workers with `python` from PATH
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        log_dir = tmp_path / f"log-{port}"
        cmd = [os.path.join(bindir, "msrun"), "--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1"]
        return [*cmd, f"--master_port={port}", "--join=True", f"--log_dir={log_dir}", str(script), str(tmp_path)], env

    def worker_logs(port: int) -> str:
        return "".join(p.read_text(errors="replace")[-3000:] for p in sorted((tmp_path / f"log-{port}").glob("*.log")))

    run = run_on_a_port(launch, worker_logs, cwd=tmp_path, timeout=300)
    logs = "".join(worker_logs(int(d.name[4:])) for d in tmp_path.glob("log-*"))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:] + logs

    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in (0, 1)]
    for r, got in enumerate(ranks):
        assert int(got["rank_arg"]) == r and int(got["world"]) == 2  # spawn → RANK_ID agrees with get_rank()
        np.testing.assert_array_equal(got["rank_sum"], [3.0])  # all_reduce summed in place
        np.testing.assert_array_equal(got["from_0"], [10.0])  # broadcast from rank 0 in place
        np.testing.assert_array_equal(got["peak"], [6.0])  # ReduceOp.MAX
        np.testing.assert_array_equal(got["labels"], data["y"][r::2])  # torch's shard: indices r, r+2, ...
    # 2 epochs x 2 steps; per step rank r trains on 4 samples and the union is 8 consecutive ones
    want = _torch_full_batch(data, epochs=2, batch=8)
    for name in PARAMS:
        np.testing.assert_allclose(ranks[0][name], ranks[1][name], rtol=0, atol=1e-7, err_msg=name)
        np.testing.assert_allclose(ranks[0][name], want[name], rtol=0, atol=1e-5, err_msg=name)
        assert np.abs(want[name] - data[name]).max() > 1e-3  # the parameters did move
