"""R13: autocast / GradScaler training loops → MindSpore O1 mixed precision + DynamicLossScaler.

What the generated code looks like (before/after), that a converted AMP script trains like the torch one
for 20 steps, and that the loss-scaler logic matches torch's GradScaler on an injected inf gradient
(the step is skipped, the scale halves, later grows again).

Tolerance, honestly: torch's CUDA autocast/GradScaler switch themselves off on a CPU-only torch, so the
torch side runs in float32, while the converted code really runs MindSpore's float16 O1 on CPU (its
conv/dense kernels exist there). The curves agree to ≤ 2e-3 relative (float16 rounding; measured 2.4e-5).
"""

from __future__ import annotations

import re
import sys
import warnings

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_training import _copy_weights, _load

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3)))
"""

AMP_LOOP = (
    NET
    + """

def train(model, images, labels, steps):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler()
    model.train()
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            outputs = model(images)
            loss = criterion(outputs, labels)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses
"""
)

# Linear only (no BN running stats for a nan batch to poison); GradScaler("cpu") is active on CPU torch.
SCALER_LOOP = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def train(model, batches, labels):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    losses = []
    for x in batches:
        optimizer.zero_grad()
        loss = criterion(model(x), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    return losses, scaler
"""


def _body(code: str) -> str:
    return code[code.index("def train") :]


# ---- before/after ------------------------------------------------------------------------------


def test_r13_autocast_and_gradscaler_become_o1_and_dynamic_loss_scaling():
    res = convert_source(AMP_LOOP)
    assert not res.error and "not converted" not in res.code, res.code
    code = _body(res.code)
    expected = [
        'amp_model = model if ms.get_context("device_target") == "CPU" else '
        'ms.amp.auto_mixed_precision(model, "O1", dtype=ms.float16)',
        "scaler = ms.amp.DynamicLossScaler(scale_value=65536.0, scale_factor=2, scale_window=2000)",
        "outputs = amp_model(images)",
        "return scaler.scale(loss), outputs",
        "@ms.jit",
        "loss = scaler.unscale(loss)",
        "grads = scaler.unscale(grads)",
        "grads_finite = scaler_finite(scaler, grads)",
        "grads = ops.clip_by_norm(grads, 5.0)",
        "if grads_finite:",
        "scaler.adjust(grads_finite)",
        "loss, outputs = train_step()",
    ]
    for line in expected:
        assert line in code, (line, code)
    # the torch-only statements are gone, not left behind
    assert not re.search(r"^\s*(with .*autocast|scaler\.(step|update|unscale_)\(|.*\.backward\(\)\s*$)", code, re.M), (
        code
    )
    # clip after unscale, the optimizer only under the finite check
    assert code.index("grads = scaler.unscale(grads)") < code.index("grads_finite = ") < code.index("clip_by_norm")
    assert re.search(r"if grads_finite:.*\n\s+optimizer\(grads\)\n", code)
    compile(res.code, "<converted>", "exec")
    apis = {(c.api, c.action) for c in res.changes}
    assert ("torch.autocast", "converted") in apis and ("torch.Tensor.backward", "converted") in apis


@pytest.mark.parametrize(
    "header, dtype",
    [
        ("torch.cuda.amp.autocast()", "float16"),
        ('torch.amp.autocast("cuda", dtype=torch.bfloat16)', "bfloat16"),
        ('torch.autocast("cpu")', "bfloat16"),  # torch's CPU default
        ("torch.cpu.amp.autocast()", "bfloat16"),
    ],
)
def test_r13_autocast_forms_and_dtypes(header, dtype):
    src = AMP_LOOP.replace('torch.autocast(device_type="cuda", dtype=torch.float16)', header)
    code = _body(convert_source(src).code)
    cast = f'ms.amp.auto_mixed_precision(model, "O1", dtype=ms.{dtype})'
    assert cast in code, code
    # MindSpore 2.10 CPU has no bfloat16 kernels; torch's CUDA autocast does nothing on a CPU: float32 there,
    # said in the code
    assert f'amp_model = model if ms.get_context("device_target") == "CPU" else {cast}' in code
    assert ("float32 on CPU" if dtype == "bfloat16" else "dropped on CPU") in code
    assert "autocast" not in code.split("amp_model =")[0]


def test_r13_autocast_enabled_flag_is_kept():
    src = AMP_LOOP.replace(
        'torch.autocast(device_type="cuda", dtype=torch.float16)', 'torch.autocast("cuda", enabled=steps > 2)'
    )
    code = _body(convert_source(src).code)
    assert (
        'amp_model = (model if ms.get_context("device_target") == "CPU" else '
        'ms.amp.auto_mixed_precision(model, "O1", dtype=ms.float16)) if steps > 2 else model'
    ) in code
    cpu = _body(convert_source(src.replace('"cuda", enabled', '"cpu", dtype=torch.float16, enabled')).code)
    assert 'amp_model = ms.amp.auto_mixed_precision(model, "O1", dtype=ms.float16) if steps > 2 else model' in cpu
    off = _body(
        convert_source(AMP_LOOP.replace('device_type="cuda", dtype=torch.float16', '"cuda", enabled=False')).code
    )
    assert "auto_mixed_precision" not in off and "outputs = model(images)" in off and "with " not in off


def test_r13_autocast_without_scaler_and_scaler_with_accumulation():
    plain = (
        AMP_LOOP.replace("scaler.scale(loss).backward()", "loss.backward()")
        .replace("        scaler.unscale_(optimizer)\n", "")
        .replace("scaler.step(optimizer)", "optimizer.step()")
        .replace("        scaler.update()\n", "")
    )
    code = _body(convert_source(plain).code)
    assert "ms.amp.auto_mixed_precision(" in code and "scaler.scale" not in code
    assert "        optimizer(grads)\n" in code
    accum = AMP_LOOP.replace(
        "        scaler.step(optimizer)\n        scaler.update()\n",
        "        if step % 2 == 1:\n            scaler.step(optimizer)\n            scaler.update()\n",
    )
    res = convert_source(accum)  # issue 11 class 13: the general step keeps torch's .grad across iterations
    assert "not converted" not in res.code
    assert not [ln for ln in res.code.splitlines() if ".backward(" in ln.split("#", 1)[0]]
    assert "grads_model = scaler.unscale(grads_model)" in res.code and "scaler.adjust(grads_finite)" in res.code
    assert "ms.amp.auto_mixed_precision(" in res.code


# ---- differential --------------------------------------------------------------------------------


def _torch_quiet(fn, *args):
    with warnings.catch_warnings():  # "CUDA is not available. Disabling" (autocast and GradScaler)
        warnings.simplefilter("ignore")
        return fn(*args)


@pytest.mark.differential
@pytest.mark.parametrize("mode", ["PYNATIVE_MODE", "GRAPH_MODE"])
def test_r13_amp_loop_loss_curve_matches_torch(tmp_path, monkeypatch, mode):
    ms = require_module("mindspore")
    monkeypatch.chdir(tmp_path)  # O1 (mindspore.rewrite) writes ./rewritten_network/NetOpt_*.py
    torch = require_module("torch")
    # autocast on the CPU in float16: torch really runs it there, and the converted code keeps MindSpore's O1
    # on CPU (a CUDA autocast is dropped on a CPU on both sides: test_r13_autocast_forms_and_dtypes)
    src = AMP_LOOP.replace('device_type="cuda"', 'device_type="cpu"')
    conv = convert_source(src)
    assert 'amp_model = ms.amp.auto_mixed_precision(model, "O1", dtype=ms.float16)' in conv.code
    (tmp_path / "t.py").write_text(src, encoding="utf-8")
    (tmp_path / "m.py").write_text(conv.code, encoding="utf-8")
    tmod, mmod = _load(tmp_path / "t.py", f"t2m_amp_t_{mode}"), _load(tmp_path / "m.py", f"t2m_amp_m_{mode}")
    try:
        torch.manual_seed(0)
        tnet, mnet = tmod.Net(), mmod.Net()
        _copy_weights(tnet, mnet)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((16, 3, 8, 8)).astype(np.float32)
        y = rng.integers(0, 10, 16)
        expected = np.array(_torch_quiet(tmod.train, tnet, torch.from_numpy(x), torch.from_numpy(y), 20))
        ms.set_context(mode=getattr(ms, mode))
        try:
            got = np.array(mmod.train(mnet, ms.Tensor(x), ms.Tensor(y), 20))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    finally:
        sys.modules.pop(f"t2m_amp_t_{mode}", None)
        sys.modules.pop(f"t2m_amp_m_{mode}", None)
    assert len(got) == len(expected) == 20 and expected[-1] < expected[0]
    rel = np.abs(got - expected) / np.abs(expected)
    print(f"{mode}: max rel diff over 20 steps (MindSpore float16 O1 vs torch CPU float16 autocast): {rel.max():.2e}")
    assert rel.max() <= 2e-3, list(zip(expected, got))


@pytest.mark.differential
@pytest.mark.parametrize(
    "steps, scale, mode", [(4, 512.0, "PYNATIVE_MODE"), (7, 1024.0, "PYNATIVE_MODE"), (7, 1024.0, "GRAPH_MODE")]
)
def test_r13_injected_inf_gradient_skips_step_and_halves_scale_like_torch(tmp_path, steps, scale, mode):
    """Batch 2 holds an inf: torch's GradScaler and the converted code both skip that step and halve the
    scale (1024 → 512); three finite steps later (growth_interval=3) both double it again."""
    ms = require_module("mindspore")
    torch = require_module("torch")
    conv = convert_source(SCALER_LOOP)
    assert "not converted" not in conv.code, conv.code
    (tmp_path / "ts.py").write_text(SCALER_LOOP, encoding="utf-8")
    (tmp_path / "ms_.py").write_text(conv.code, encoding="utf-8")
    tag = f"{steps}_{mode}"
    tmod, mmod = _load(tmp_path / "ts.py", f"t2m_sc_t_{tag}"), _load(tmp_path / "ms_.py", f"t2m_sc_m_{tag}")
    try:
        torch.manual_seed(0)
        tnet, mnet = tmod.Net(), mmod.Net()
        _copy_weights(tnet, mnet)
        rng = np.random.default_rng(1)
        xs = rng.standard_normal((steps, 6, 4)).astype(np.float32)
        xs[2, 0, 1] = np.inf
        y = rng.integers(0, 3, 6)
        t_losses, t_scaler = tmod.train(tnet, [torch.from_numpy(a) for a in xs], torch.from_numpy(y))
        ms.set_context(mode=getattr(ms, mode))
        try:
            m_losses, m_scaler = mmod.train(mnet, [ms.Tensor(a) for a in xs], ms.Tensor(y))
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
    finally:
        sys.modules.pop(f"t2m_sc_t_{tag}", None)
        sys.modules.pop(f"t2m_sc_m_{tag}", None)
    t_losses, m_losses = np.array(t_losses), np.array(m_losses)
    assert not np.isfinite(t_losses[2]) and not np.isfinite(m_losses[2])
    np.testing.assert_allclose(np.delete(m_losses, 2), np.delete(t_losses, 2), rtol=1e-5)
    assert t_scaler.get_scale() == scale
    assert float(m_scaler.scale_value.asnumpy()) == scale
    # the skipped step left the weights finite and both sides moved them identically
    for (name, p), tp in zip(mnet.parameters_and_names(), tnet.parameters()):
        np.testing.assert_allclose(p.asnumpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


TRAINER = (
    NET
    + """

class Trainer:
    def __init__(self, model: nn.Module):
        model.train()
        self.model = model
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda")

    def fit(self, images, labels, steps):
        losses = []
        for _ in range(steps):
            self.optimizer.zero_grad()
            with torch.cuda.amp.autocast():
                loss = self.criterion(self.model(images), labels)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            losses.append(loss.item())
        return losses
"""
)


@pytest.mark.differential
def test_r13_trainer_class_with_self_attributes(tmp_path, monkeypatch):
    """self.model / self.optimizer / self.scaler: inside TrainStep.construct `self` is the step Cell,
    so the generated code binds them to locals first."""
    ms = require_module("mindspore")
    monkeypatch.chdir(tmp_path)  # O1 (mindspore.rewrite) writes ./rewritten_network/NetOpt_*.py
    torch = require_module("torch")
    conv = convert_source(TRAINER)
    code = _body(conv.code) if "def train" in conv.code else conv.code
    assert "not converted" not in code, code
    assert 'ms.amp.auto_mixed_precision(self.model, "O1", dtype=ms.float16)' in code
    assert "optimizer = self.optimizer" in code and "scaler = self.scaler" in code
    construct = code[code.index("def construct(self):") : code.index("train_step = TrainStep()")]
    assert not re.search(r"^[^#]*self\.", construct, re.M), construct
    (tmp_path / "tt.py").write_text(TRAINER, encoding="utf-8")
    (tmp_path / "mt.py").write_text(conv.code, encoding="utf-8")
    tmod, mmod = _load(tmp_path / "tt.py", "t2m_amp_tr_t"), _load(tmp_path / "mt.py", "t2m_amp_tr_m")
    try:
        torch.manual_seed(0)
        tnet, mnet = tmod.Net(), mmod.Net()
        _copy_weights(tnet, mnet)
        rng = np.random.default_rng(2)
        x = rng.standard_normal((8, 3, 8, 8)).astype(np.float32)
        y = rng.integers(0, 10, 8)
        expected = np.array(_torch_quiet(lambda: tmod.Trainer(tnet).fit(torch.from_numpy(x), torch.from_numpy(y), 8)))
        got = np.array(mmod.Trainer(mnet).fit(ms.Tensor(x), ms.Tensor(y), 8))
    finally:
        sys.modules.pop("t2m_amp_tr_t", None)
        sys.modules.pop("t2m_amp_tr_m", None)
    assert np.max(np.abs(got - expected) / np.abs(expected)) <= 2e-3, list(zip(expected, got))
