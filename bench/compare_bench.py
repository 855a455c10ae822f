"""`torch2ms compare` speed: a full layer-by-layer comparison of ResNet-50 (batch 1, 224×224)
against the two plain forwards it replaces (torch eager + MindSpore PyNative), in one run.

The converted torchvision package is also called ``torchvision``, so (as a user with two
environments would) the torch side runs in its own process (--torch-python) and this process only
imports MindSpore. Reported, in seconds:
  * plain forwards: torch (own subprocess, after import) and MindSpore PyNative (here), first call and warm;
  * the comparison: wall time of compare_models (imports, weight conversion and the GRAPH_MODE
    compile included) and its layer-by-layer core (hooked forwards + float64 noise replay + MindSpore
    leaf replay + metrics), and the hook overhead on each side.
Target: core ≤ 3× (torch + MindSpore plain forwards). Timing lives here, never in tests.

    python bench/compare_bench.py [CONVERTED_DIR]   # CONVERTED_DIR/torchvision: reuse a converted tree
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TORCH_PLAIN = r"""
import json, sys, time, torch, torchvision
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
m = torchvision.models.resnet50().eval()
x = torch.from_numpy(__import__("numpy").random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32"))
ts = []
with torch.no_grad():
    for _ in range(4):
        t = time.perf_counter(); m(x); ts.append(time.perf_counter() - t)
print(json.dumps({"first": ts[0], "warm": min(ts[1:])}))
"""


def main() -> None:
    from torch2ms.convert import convert_tree

    threads = 1
    spec = importlib.util.find_spec("torchvision")
    if spec is None:
        sys.exit("bench needs torchvision (make venv)")
    tv = Path(list(spec.submodule_search_locations)[0])
    with tempfile.TemporaryDirectory(prefix="t2m-cmpbench-") as tmp:
        if len(sys.argv) > 1:  # an already converted tree: DIR holding torchvision/
            root = Path(sys.argv[1]).resolve()
        else:
            root = Path(tmp) / "conv"
            t = time.perf_counter()
            convert_tree(tv, root / "torchvision")
            print(f"convert torchvision: {time.perf_counter() - t:.1f} s (setup, not measured)")
        tp = json.loads(
            subprocess.run(
                [sys.executable, "-c", TORCH_PLAIN, str(threads)], capture_output=True, text=True, check=True
            )
            .stdout.strip()
            .splitlines()[-1]
        )

        import mindspore as ms

        from torch2ms.align import CompareOptions, compare_models
        from torch2ms.align.ms_side import build_net

        ms_spec = f"{root}/torchvision/models/resnet.py:resnet50"
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        net = build_net(ms_spec, 0)
        net.set_train(False)
        ts = []
        for _ in range(4):
            t = time.perf_counter()
            net(ms.Tensor(x))
            ts.append(time.perf_counter() - t)
        mp = {"first": ts[0], "warm": min(ts[1:])}
        del net
        t = time.perf_counter()
        opts = CompareOptions(inputs={"x": x}, torch_python=sys.executable, threads=threads, out_dir=Path(tmp) / "out")
        rep = compare_models("torchvision.models:resnet50", ms_spec, opts)
        wall = time.perf_counter() - t
    tm = rep.timings
    core = tm["torch_forward_hooked"] + tm["torch_noise_f64"] + tm["ms_forward_hooked"] + tm["ms_replay_and_metrics"]
    plain_first, plain_warm = tp["first"] + mp["first"], tp["warm"] + mp["warm"]
    print(f"status {rep.status}; {len(rep.layers)} layer calls; first divergence {rep.first_divergence}")
    print(
        f"plain forwards      torch {tp['first']:.2f} (warm {tp['warm']:.2f}), MindSpore PyNative "
        f"{mp['first']:.2f} (warm {mp['warm']:.2f}); sum {plain_first:.2f} (warm {plain_warm:.2f})"
    )
    print(
        f"layer-by-layer core {core:.2f} s = torch hooked {tm['torch_forward_hooked']:.2f} + float64 noise "
        f"{tm['torch_noise_f64']:.2f} + MindSpore hooked {tm['ms_forward_hooked']:.2f} + replay/metrics "
        f"{tm['ms_replay_and_metrics']:.2f}"
    )
    print(
        f"ratio core / plain  {core / plain_first:.2f}× (vs first calls), {core / plain_warm:.2f}× (vs warm)  "
        f"[target ≤ 3×]"
    )
    print(
        f"hook overhead       torch {tm['torch_forward_hooked'] / tp['first']:.2f}× first call, MindSpore "
        f"{tm['ms_forward_hooked'] / mp['first']:.2f}× first call"
    )
    print(
        f"compare_models wall {wall:.2f} s (torch process incl. imports {tm['torch_side']:.2f}, MindSpore build+load "
        f"{tm['ms_build_and_load']:.2f}, GRAPH_MODE check {tm.get('ms_graph_check', 0):.2f})"
    )


if __name__ == "__main__":
    main()
