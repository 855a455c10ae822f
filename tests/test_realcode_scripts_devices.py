"""Issue 11, class 5: torch's device idioms in scripts and models, converted, mean the same in MindSpore.

Each idiom (``x.is_cuda`` / ``is_xpu`` / ``is_mps``, ``x.device.type``, ``torch.accelerator.*``,
``with torch.device(...)``, ``torch.cuda.set_device``, ``torch.backends.*`` flags) becomes a helper of
``torch2ms.runtime`` that answers for MindSpore's one device target. The script below runs with torch
(on this machine's CPU) and, converted, with MindSpore alone (torch blocked from import): it must print
the same answers. The model's device tests must also compile in GRAPH_MODE and give torch's numbers.
"""

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
from requires_support import CORPUS, require_kit, require_module

from torch2ms.convert import convert_source

ROOT = Path(__file__).resolve().parents[1]
# torch's device API, still spelled as torch (the runtime's torch_backends.cudnn is the converted form)
LEFT_BEHIND = re.compile(r"torch\.accelerator|torch\.cuda\.|torch\.backends|(?<!torch_backends\.)cudnn\.|\.is_xpu")

MODEL = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, ngpu):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(nn.Linear(4, 3), nn.Tanh())

    def forward(self, input):
        if (input.is_cuda or input.is_xpu or input.is_mps) and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        if input.device.type == "cuda":
            output = output * 2
        return output + input.get_device()
"""

SCRIPT = (
    MODEL
    + """

def main():
    import json
    import torch.backends.cudnn as cudnn

    cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    use_accel = torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(0)
        torch.accelerator.set_device_index(0)
    x = torch.ones(2, 4).to(device)
    net = Net(2).to(device)
    with torch.device(device):
        y = net(x)
    facts = {
        "device": str(device), "type": device.type, "index": device.index,
        "cuda": torch.cuda.is_available(), "cuda_count": torch.cuda.device_count(),
        "accel": use_accel, "accel_count": torch.accelerator.device_count(),
        "mps": torch.backends.mps.is_available(), "xpu": torch.xpu.is_available(),
        "is_cuda": x.is_cuda, "is_xpu": x.is_xpu, "is_mps": x.is_mps, "is_cpu": x.is_cpu,
        "x_device": str(x.device), "x_type": x.device.type, "get_device": x.get_device(),
        "same_device": x.device == device, "default": str(torch.get_default_device()),
        "benchmark": cudnn.benchmark, "deterministic": torch.backends.cudnn.deterministic,
        "enabled": torch.backends.cudnn.enabled, "tf32": torch.backends.cuda.matmul.allow_tf32,
        "shape": list(y.shape),
    }
    print(json.dumps(facts, sort_keys=True))


if __name__ == "__main__":
    main()
"""
)


def _run(path: Path, block_torch: bool) -> dict:
    """Run a script in a fresh interpreter (MindSpore side: torch cannot be imported) → its JSON line."""
    prelude = "import sys; sys.modules['torch'] = None; " if block_torch else ""
    code = f"{prelude}import runpy; runpy.run_path({str(path)!r}, run_name='__main__')"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.differential
def test_r8_device_idioms_script_answers_as_torch(tmp_path):
    conv = convert_source(SCRIPT)
    assert not conv.error, conv.error
    assert "not converted" not in conv.code, conv.code
    assert "import torch" not in conv.code
    (tmp_path / "t.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "m.py").write_text(conv.code, encoding="utf-8")
    expected = _run(tmp_path / "t.py", block_torch=False)
    got = _run(tmp_path / "m.py", block_torch=True)
    assert got == expected


@pytest.mark.differential
@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
def test_r27_device_tests_inside_construct_match_torch(tmp_path, mode):
    """``if (x.is_cuda or x.is_xpu) and ngpu > 1: data_parallel(...)`` and ``x.device.type`` in forward."""
    ms = require_module("mindspore")
    torch = require_module("torch")
    from torch2ms.kb import load_kb
    from torch2ms.proof import copy_torch_weights

    conv = convert_source(MODEL)
    assert "not converted" not in conv.code, conv.code
    (tmp_path / "t2m_dev_model.py").write_text(conv.code, encoding="utf-8")
    tns: dict = {}
    exec(compile(MODEL, "<torch model>", "exec"), tns)
    sys.path.insert(0, str(tmp_path))
    try:
        import t2m_dev_model  # MindSpore compiles construct from its source file

        torch.manual_seed(0)
        tnet, mnet = tns["Net"](2), t2m_dev_model.Net(2)
        copy_torch_weights(tnet, mnet, load_kb())
        x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
        expected = tnet(torch.from_numpy(x)).detach().numpy()
        ms.set_context(mode=getattr(ms, mode))
        try:
            got = mnet(ms.Tensor(x)).asnumpy()
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("t2m_dev_model", None)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_r8_kit_device_idioms_all_converted(tmp_path):
    """The kit's scripts: no torch.accelerator / torch.cuda / torch.backends / is_xpu left behind."""
    require_kit(CORPUS)
    files = [
        p
        for p in sorted(CORPUS.rglob("*.py"))
        if any(k in p.read_text(encoding="utf-8") for k in ("torch.accelerator", "is_cuda", "cudnn", "set_device"))
    ]
    assert len(files) >= 10
    for path in files:
        conv = convert_source(path.read_text(encoding="utf-8"), str(path))
        left = [
            line for line in conv.code.splitlines() if LEFT_BEHIND.search(line) and not line.lstrip().startswith("#")
        ]
        assert not left, f"{path.relative_to(CORPUS)}: {left}"


@pytest.mark.differential
def test_r8_data_parallel_on_a_gpu_equals_the_module(tmp_path):
    """Where torch has a GPU: torch's data_parallel over one device ≡ the converted ``module(inputs)``."""
    torch = require_module("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch.nn.parallel.data_parallel needs a GPU (the KB case compares with the module off a GPU)")
    ms = require_module("mindspore")
    code = convert_source(
        textwrap.dedent(
            """
            import torch
            def run(net, x):
                return torch.nn.parallel.data_parallel(net, x, [0])
            """
        )
    ).code
    assert "data_parallel" not in code, code
    ns: dict = {}
    exec(code, ns)
    torch.manual_seed(0)
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh())
    mnet = ms.nn.SequentialCell(ms.nn.Dense(4, 3), ms.nn.Tanh())
    for (_, p), w in zip(mnet.parameters_and_names(), tnet.parameters()):
        p.set_data(ms.Tensor(w.detach().numpy()))
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    expected = torch.nn.parallel.data_parallel(tnet.cuda(), torch.from_numpy(x).cuda(), [0]).cpu().detach().numpy()
    np.testing.assert_allclose(ns["run"](mnet, ms.Tensor(x)).asnumpy(), expected, rtol=1e-5, atol=1e-6)
