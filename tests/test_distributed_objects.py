"""torch.distributed object collectives, groups and monitored barriers, converted to mindspore.mint.distributed
and run under msrun with 2 CPU workers, against the same script run by torch (gloo, 2 processes).

The KB entries of all_gather_object, new_group and monitored_barrier (kb/data/devices_runtime.toml) name
this file as their proof: a collective needs a process group, which no single-process case has.
Measured with the same setup (mindspore.communication.init() under msrun, CPU): most other
mint.distributed calls fail there ('kernel DistComm... unregistered', 'group hccl_world_group does not
exist'), and their entries say so.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from ports_support import run_on_a_port
from requires_support import require_module

from torch2ms.convert import convert_source

SCRIPT = '''
"""Object collectives on 2 ranks."""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main(rank, world_size, out_dir):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("TORCH_TEST_PORT", "29533"))
    dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)
    gathered = [None] * world_size
    dist.all_gather_object(gathered, {"rank": dist.get_rank(), "tag": "r%d" % dist.get_rank()})
    group = dist.new_group([0, 1])
    dist.monitored_barrier()
    total = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(total, group=group)
    with open(os.path.join(out_dir, "rank%d.json" % dist.get_rank()), "w") as fh:
        json.dump({"gathered": gathered, "total": float(total[0])}, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(2, sys.argv[1]), nprocs=2, join=True)
'''


def test_object_collectives_convert_to_mint_distributed():
    res = convert_source(SCRIPT, "objs.py")
    assert res.error is None
    code = res.code
    assert "mint.distributed.all_gather_object(gathered, " in code
    assert "group = ms.mint.distributed.new_group([0, 1])" in code
    assert "ms.mint.distributed.barrier()" in code
    assert "import torch" not in code and "not converted" not in code


def _results(out_dir: Path) -> list[dict]:
    return [json.loads((out_dir / f"rank{r}.json").read_text()) for r in (0, 1)]


@pytest.mark.slow
@pytest.mark.differential
def test_msrun_two_cpu_workers_gather_objects_like_torch(tmp_path):
    require_module("torch")
    bindir = str(Path(sys.executable).parent)  # msrun starts the workers with `python` from PATH
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    torch_dir, ms_dir = tmp_path / "torch", tmp_path / "ms"
    torch_dir.mkdir()
    ms_dir.mkdir()
    (torch_dir / "objs.py").write_text(SCRIPT)
    run = run_on_a_port(
        lambda port: ([sys.executable, "objs.py", str(torch_dir)], {**env, "TORCH_TEST_PORT": str(port)}),
        cwd=torch_dir,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]

    (ms_dir / "objs.py").write_text(convert_source(SCRIPT, "objs.py").code)

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        log_dir = ms_dir / f"log-{port}"
        cmd = [os.path.join(bindir, "msrun"), "--worker_num=2", "--local_worker_num=2", "--master_addr=127.0.0.1"]
        return [*cmd, f"--master_port={port}", "--join=True", f"--log_dir={log_dir}", "objs.py", str(ms_dir)], env

    def worker_logs(port: int) -> str:
        return "".join(p.read_text(errors="replace")[-2000:] for p in sorted((ms_dir / f"log-{port}").glob("*.log")))

    run = run_on_a_port(launch, worker_logs, cwd=ms_dir, timeout=300)
    logs = "".join(worker_logs(int(d.name[4:])) for d in ms_dir.glob("log-*"))
    assert run.returncode == 0, run.stdout[-2000:] + logs

    want, got = _results(torch_dir), _results(ms_dir)
    assert want[0]["gathered"] == [{"rank": 0, "tag": "r0"}, {"rank": 1, "tag": "r1"}]
    assert got == want  # every rank gathered both objects; the all_reduce over the new group summed 1 + 2
