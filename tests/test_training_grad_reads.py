"""Issue 23 §2.1: training loops that read gradients, with GradScaler, autocast and clipping, convert whole.

The failure class: a loop whose step reads ``.grad`` anywhere but in ``for p in model.parameters()``
(``for name, p in model.named_parameters()``, ``model.fc1.weight.grad`` in a log line, a TensorBoard
histogram of ``value.grad``) was left as a skeleton that ran the forward twice, and a ``GradScaler``
with ``enabled=`` was not converted. Now the gradient tuple of ``value_and_grad`` serves every read,
``GradScaler(enabled=...)`` is a DynamicLossScaler or a static scale of 1, and a CUDA autocast is dropped
on CPU (torch's does nothing there) with a mark that says so.

The matrix (tests/grad_loop_support.py): scaler (none / cuda / disabled / enabled=flag / cpu / imported
name) × autocast spelling (none / cpu disabled / torch.cuda.amp / device expression / torch.amp / imported
name) × clipping (none / norm / value) × gradient read (none / named_parameters norms / direct attribute
log / tensorboard histogram) × where the loop lives (function / method / module level).
"""

from __future__ import annotations

import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from matrix_support import covering
from requires_support import require_module

from torch2ms.convert import convert_source, convert_tree

sys.path.insert(0, str(Path(__file__).parent))
import grad_loop_support as g
from script_support import load_script

LEFT = re.compile(r"^[^#\"]*(\.backward\(|\.grad\b|\btorch\.|autocast|GradScaler)")


def _leftovers(code: str) -> list[str]:
    return [ln for ln in code.splitlines() if "not converted" in ln or (LEFT.search(ln) and "import" not in ln)]


@pytest.mark.parametrize("case", g.pairwise(), ids="-".join)
def test_gradient_reading_loops_convert_whole(case):
    res = convert_source(g.script(*case))
    assert not res.error, res.error
    assert not _leftovers(res.code), _leftovers(res.code)
    compile(res.code, "<converted>", "exec")
    body = res.code
    assert body.count("forward_fn(") == 1 or "TrainStep" in body  # one forward per step, not a skeleton's two
    scaler, autocast, clip, read, _place = case
    if read != "none":
        assert ("grad_of(" in body) == (read == "logging"), body
    if scaler == "disabled":
        assert "DisabledLossScaler()" in body
    if scaler in ("flag", "imported"):
        assert "if amp else DisabledLossScaler()" in body
    if autocast in ("cuda_amp", "device_expr", "amp_cuda", "imported"):
        assert "dropped on CPU" in body and 'ms.get_context("device_target") == "CPU"' in body
    if clip == "value":
        assert "clip_by_value" in body or "clamp" in body


def test_gradient_writes_are_refused_with_a_reason():
    src = g.script("none", "none", "none", "norm", "function").replace(
        "norms[name] = p.grad.norm().item()", "p.grad.data.mul_(0.5)"
    )
    code = convert_source(src).code
    assert "changes .grad in place" in code, code


# ---- differential --------------------------------------------------------------------------------


def _covering() -> list[tuple[str, str, str, str, str]]:
    """Every value of every axis at least once (6 runs; the whole matrix: make test-full, tests/matrix_support.py)."""
    s, a, c, r = list(g.SCALERS), list(g.AUTOCASTS), list(g.CLIPS), list(g.READS)
    runs = [(s[i], a[(i + 1) % 6], c[i % 3], r[i % 4], g.PLACES[i % 3]) for i in range(6)]
    return covering(g.matrix(), keep=runs.__contains__)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", _covering(), ids="-".join)
def test_compare_train_says_same(case, tmp_path):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    src_dir, out_dir = tmp_path / "t", tmp_path / "m"
    src_dir.mkdir()
    (src_dir / "train.py").write_text(g.script(*case), encoding="utf-8")
    convert_tree(str(src_dir), str(out_dir))
    assert not _leftovers((out_dir / "train.py").read_text())
    rep = compare_train(
        str(src_dir / "train.py"), str(out_dir / "train.py"), steps=12, out_dir=str(tmp_path / "o"), cwd=str(tmp_path)
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == 12 and all(r["same_inputs"] for r in rep.rows)
    assert rep.status == "same", (rep.first_divergence, rep.findings)


@pytest.mark.differential
def test_logged_gradients_equal_torch(tmp_path, monkeypatch):
    """What the loop logs from ``.grad`` (norms by parameter name, a direct attribute read in a print) is
    torch's, step by step, from the same initial weights and batches."""
    torch = require_module("torch")
    ms = require_module("mindspore")
    monkeypatch.chdir(tmp_path)
    got = {}
    for read in ("norm", "logging"):
        src = g.script("cpu", "none", "norm", read, "function")
        (tmp_path / f"t_{read}.py").write_text(src, encoding="utf-8")
        (tmp_path / f"m_{read}.py").write_text(convert_source(src).code, encoding="utf-8")
        tmod = load_script(tmp_path / f"t_{read}.py", f"t2m_gr_t_{read}")
        mmod = load_script(tmp_path / f"m_{read}.py", f"t2m_gr_m_{read}")
        torch.manual_seed(0)
        tnet, mnet = tmod.Net(), mmod.Net()
        for name, p in mnet.parameters_and_names():
            p.set_data(ms.Tensor(tnet.state_dict()[name].numpy()))
        mloader = mmod.ds.NumpySlicesDataset(
            (mmod.X.asnumpy(), mmod.Y.asnumpy()), column_names=["data", "label"], shuffle=False
        ).batch(8)
        for side, mod, net, loader, crit in (
            (
                "t",
                tmod,
                tnet,
                tmod.DataLoader(tmod.TensorDataset(tmod.X, tmod.Y), batch_size=8),
                tmod.nn.CrossEntropyLoss(),
            ),
            ("m", mmod, mnet, mloader, mmod.CrossEntropyLoss()),
        ):
            norms: dict = {}
            losses: list = []
            buf = io.StringIO()
            with redirect_stdout(buf):
                mod.train(net, loader, crit, _Writer(), norms, losses)
            got[side, read] = norms, [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", buf.getvalue())], losses
    for read in ("norm", "logging"):
        (t_norms, t_logged, t_losses), (m_norms, m_logged, m_losses) = got["t", read], got["m", read]
        assert len(t_losses) == len(m_losses) == 12
        np.testing.assert_allclose(m_losses, t_losses, rtol=1e-5)
        if read == "logging":
            assert len(t_logged) == len(m_logged) == 2 * len(t_losses)
            np.testing.assert_allclose(m_logged, t_logged, rtol=1e-4, atol=1e-7)
        else:  # the last step's gradient norms, by torch's parameter names
            assert sorted(t_norms) == sorted(m_norms) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
            np.testing.assert_allclose(
                [m_norms[k] for k in sorted(t_norms)], [t_norms[k] for k in sorted(t_norms)], rtol=1e-4
            )


class _Writer:
    def add_histogram(self, *args, **kwargs) -> None:
        pass
