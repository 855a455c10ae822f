"""R29: `torch2ms export` writes the converted, weight-loaded model as MindIR, and that file gives
the ORIGINAL torch model's output (convert → weights → export → mindspore.load + GraphCell)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from torch2ms.cli import main

ROOT = Path(__file__).resolve().parents[1]
CNN = ROOT / "examples" / "simple_cnn"
SHAPE = (2, 3, 16, 16)


def _err(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())  # rich wraps long lines


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The simple CNN converted, its torch weights converted to .ckpt, and the .pth / torch model."""
    import torch

    from torch2ms.convert import convert_tree
    from torch2ms.weights import convert_checkpoint

    tmp = tmp_path_factory.mktemp("export")
    convert_tree(CNN, tmp / "ms_cnn", jobs=1)
    spec = importlib.util.spec_from_file_location("t2m_export_torch_cnn", CNN / "model.py")
    tmod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tmod)  # type: ignore[union-attr]
    torch.manual_seed(0)
    tnet = tmod.build()
    with torch.no_grad():  # non-trivial running statistics, so eval-mode BN is really compared
        for m in tnet.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    tnet.eval()
    torch.save(tnet.state_dict(), tmp / "cnn.pth")
    net_spec = f"{tmp / 'ms_cnn' / 'model.py'}:build"
    res = convert_checkpoint(tmp / "cnn.pth", tmp / "cnn.ckpt", net=net_spec)
    assert res.ok, res.report
    return tmp, net_spec, tnet


@pytest.mark.differential
@pytest.mark.slow
def test_r29_exported_mindir_matches_torch(exported, capsys):
    import mindspore as ms
    import torch

    tmp, net_spec, tnet = exported
    out = tmp / "cnn.mindir"
    rc = main(
        [
            "export",
            "--net",
            net_spec,
            "--ckpt",
            str(tmp / "cnn.ckpt"),
            "--input-shape",
            ",".join(map(str, SHAPE)),
            "-o",
            str(out),
        ]
    )
    text = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert rc == 0, text
    assert out.is_file() and "max abs diff" in text and "verified" in text
    x = np.random.default_rng(7).standard_normal(SHAPE).astype(np.float32)
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x)).numpy()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    graph = ms.nn.GraphCell(ms.load(str(out)))
    got = graph(ms.Tensor(x)).asnumpy()
    assert got.shape == expected.shape == (SHAPE[0], 10)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)


def test_r29_missing_checkpoint_and_bad_factory(exported, capsys):
    tmp, net_spec, _ = exported
    rc = main(
        [
            "export",
            "--net",
            net_spec,
            "--ckpt",
            str(tmp / "nope.ckpt"),
            "--input-shape",
            "1,3,16,16",
            "-o",
            str(tmp / "x.mindir"),
        ]
    )
    assert rc == 2 and "no such checkpoint file" in _err(capsys)
    rc = main(
        [
            "export",
            "--net",
            net_spec.replace(":build", ":no_such_factory"),
            "--ckpt",
            str(tmp / "cnn.ckpt"),
            "--input-shape",
            "1,3,16,16",
            "-o",
            str(tmp / "x.mindir"),
        ]
    )
    assert rc == 2 and "has no attribute 'no_such_factory'" in _err(capsys)
    rc = main(
        [
            "export",
            "--net",
            net_spec,
            "--ckpt",
            str(tmp / "cnn.ckpt"),
            "--input-shape",
            "1,3,a,16",
            "-o",
            str(tmp / "x.mindir"),
        ]
    )
    assert rc == 2 and "comma-separated integers" in _err(capsys)
    assert not (tmp / "x.mindir").exists()


def test_r29_checkpoint_missing_parameters_refused(exported, capsys):
    import mindspore as ms

    tmp, net_spec, _ = exported
    params = ms.load_checkpoint(str(tmp / "cnn.ckpt"))
    partial = [{"name": k, "data": v} for k, v in params.items() if k != "fc.weight"]
    ms.save_checkpoint(partial, str(tmp / "partial.ckpt"))
    rc = main(
        [
            "export",
            "--net",
            net_spec,
            "--ckpt",
            str(tmp / "partial.ckpt"),
            "--input-shape",
            "1,3,16,16",
            "-o",
            str(tmp / "p.mindir"),
        ]
    )
    err = _err(capsys)
    assert rc == 1 and "fc.weight" in err and "not in" in err
    assert not (tmp / "p.mindir").exists()


@pytest.mark.slow
def test_r29_wrong_input_shape_is_a_clear_error(exported):
    # A separate process: a failed PyNative op can leave MindSpore reporting it again on the next call.
    tmp, net_spec, _ = exported
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch2ms",
            "export",
            "--net",
            net_spec,
            "--ckpt",
            str(tmp / "cnn.ckpt"),
            "--input-shape",
            "1,3,16",
            "-o",
            str(tmp / "w.mindir"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = " ".join(proc.stderr.split())
    assert "does not run on an input of shape [1, 3, 16] float32" in err and "--input-shape" in err
    assert not (tmp / "w.mindir").exists()
