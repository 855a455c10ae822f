"""Issue 23 §1 / 22 §2 (verdict): a GradScaler that is off behaves as torch's disabled scaler.

torch's ``GradScaler(enabled=False)`` scales by nothing and its ``step(optimizer)`` is a plain
``optimizer.step()``: an inf/nan gradient reaches the parameters. The converted step checked
``mindspore.amp.all_finite`` for every scaler and skipped that step. The class: every way a scaler is
switched off or on (a literal, a module flag, a flag passed to the function, the default) × the form the
converter writes (the compiled TrainStep; the general writer, taken when the loop reads a gradient) —
real torch and real MindSpore on the same weights and batches, one batch holding an inf, compared
parameter by parameter (nan where torch has nan, the finite values equal).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from matrix_support import covering

from torch2ms.convert import convert_source

sys.path.insert(0, str(Path(__file__).parent))
from requires_support import require_modules
from script_support import load_script

SCALERS = {
    "literal_off": ("", "torch.cuda.amp.GradScaler(enabled=False)"),
    "flag_off": ("use_amp = False", "torch.cuda.amp.GradScaler(enabled=use_amp)"),
    "amp_module_off": ("use_amp = False", "torch.amp.GradScaler('cpu', enabled=use_amp)"),
    "flag_on": ("use_amp = True", "torch.amp.GradScaler('cpu', enabled=use_amp, init_scale=1024.0)"),
    "default_on": ("", "torch.amp.GradScaler('cpu', init_scale=1024.0)"),
}
FORMS = ("step", "grad_read")
PLACES = ("module", "function")

SCRIPT = """import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

{flag}
rng = np.random.default_rng(0)
X = rng.standard_normal((24, 4)).astype(np.float32)
X[9, 2] = np.inf  # the second batch's gradients are not finite
Y = rng.standard_normal((24, 2)).astype(np.float32)
model = nn.Linear(4, 2)
with torch.no_grad():
    model.weight.copy_(torch.from_numpy(rng.standard_normal((2, 4)).astype(np.float32)))
    model.bias.zero_()
loader = DataLoader(TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)), batch_size=8)
grad_norms = []
{body}
"""
LOOP = """optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = {scaler}
for x, y in loader:
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    scaler.scale(loss).backward()
{read}    scaler.step(optimizer)
    scaler.update()
"""
READ = "    grad_norms.append(model.weight.grad.abs().sum().item())\n"


def script(scaler: str, form: str, place: str) -> str:
    flag, make = SCALERS[scaler]
    loop = LOOP.format(scaler=make, read=READ if form == "grad_read" else "")
    if place == "function":
        body = "def train(model, loader):\n" + "".join("    " + ln + "\n" for ln in loop.splitlines())
        body += "\n\ntrain(model, loader)\n"
    else:
        body = loop
    return SCRIPT.format(flag=flag, body=body)


CASES = list(itertools.product(SCALERS, FORMS, PLACES))


@pytest.mark.parametrize("scaler, form, place", CASES)
def test_scaler_on_or_off_converts_to_its_torch_meaning(scaler, form, place):
    res = convert_source(script(scaler, form, place))
    assert not res.error and "not converted" not in res.code, res.code
    off = scaler.endswith("_off")
    assert ("DisabledLossScaler()" in res.code) == off or scaler.startswith(("flag", "amp_module")), res.code
    assert "scaler_finite(scaler, grads" in res.code, res.code
    assert "ms.amp.all_finite" not in res.code, res.code


def _weights_torch(src: str, tmp: Path, name: str) -> np.ndarray:
    path = tmp / f"{name}_torch.py"
    path.write_text(src, encoding="utf-8")
    m = load_script(path, f"{name}_torch")
    return np.concatenate([m.model.weight.detach().numpy().ravel(), m.model.bias.detach().numpy().ravel()])


def _weights_ms(src: str, tmp: Path, name: str) -> np.ndarray:
    path = tmp / f"{name}_ms.py"
    path.write_text(convert_source(src).code, encoding="utf-8")
    m = load_script(path, f"{name}_ms")
    return np.concatenate([m.model.weight.asnumpy().ravel(), m.model.bias.asnumpy().ravel()])


@pytest.mark.differential
@pytest.mark.parametrize("scaler, form, place", covering(CASES, pairs=True))
def test_inf_gradient_step_is_skipped_only_where_torch_skips_it(scaler, form, place, tmp_path):
    require_modules("torch", "mindspore")
    src = script(scaler, form, place)
    name = f"gs_{scaler}_{form}_{place}"
    want = _weights_torch(src, tmp_path, name)
    got = _weights_ms(src, tmp_path, name)
    off = scaler.endswith("_off")
    # torch's own behaviour, so that the test means what it says: off → the inf reached the weights
    assert bool(np.isnan(want).any() or np.isinf(want).any()) == off, want
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-5, atol=1e-6)
