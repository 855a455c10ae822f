"""Shared steps of the real-code model tests (tests/test_realcode_models_*.py): convert a torch
source, build both models, carry the weights over with `torch2ms weights` alone (no network given,
no fallback), run one forward in PyNative and in GRAPH_MODE and compare with torch."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from script_support import load_script

from torch2ms.convert import convert_source

_COUNTER = itertools.count()


def import_file(path: Path, name: str) -> Any:
    return load_script(path, name)


def convert_pair(
    source: str, tmp: Path, allow_marks: bool = False, cpu_fast_conv: bool = False
) -> tuple[Any, Any, str]:
    """(torch module, converted MindSpore module, converted code) of one source file
    (``cpu_fast_conv``: as `torch2ms convert --cpu-fast-conv`)."""
    tag = f"t2m_rc_{next(_COUNTER)}"
    res = convert_source(source, f"{tag}.py", cpu_fast_conv=cpu_fast_conv)
    assert res.error is None, res.error
    marks = [c for c in res.changes if c.action == "not-converted"]
    assert allow_marks or not marks, [(c.api, c.note) for c in marks]
    (tmp / f"{tag}_torch.py").write_text(source)
    (tmp / f"{tag}_ms.py").write_text(res.code)
    return (
        import_file(tmp / f"{tag}_torch.py", f"{tag}_torch"),
        import_file(tmp / f"{tag}_ms.py", f"{tag}_ms"),
        res.code,
    )


def weights_by_converter(tnet: Any, tmp: Path) -> Path:
    """The torch state dict saved as a .pth, converted by `torch2ms weights` without --net."""
    import torch

    from torch2ms.weights.convert import convert_checkpoint

    pth, ckpt = tmp / f"w{next(_COUNTER)}.pth", tmp / f"w{next(_COUNTER)}.ckpt"
    torch.save(tnet.state_dict(), pth)
    result = convert_checkpoint(pth, ckpt)
    assert result.written
    return ckpt


def load_all(mnet: Any, ckpt: Path) -> None:
    """Every parameter of the MindSpore net comes from the converted checkpoint."""
    import mindspore as ms

    not_loaded, _ = ms.load_param_into_net(mnet, ms.load_checkpoint(str(ckpt)))
    assert not not_loaded, f"not in the converted checkpoint: {not_loaded}"


def _leaves(out: Any) -> list[np.ndarray]:
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    if out is None:
        return []
    if hasattr(out, "asnumpy"):
        return [out.asnumpy()]
    if hasattr(out, "detach"):
        return [out.detach().numpy()]
    return [np.asarray(out)]


def relative_error(expected: Any, got: Any) -> float:
    """max |ms − torch| / max |torch| over each output leaf (the kit's measure)."""
    exp, act = _leaves(expected), _leaves(got)
    assert len(exp) == len(act), (len(exp), len(act))
    worst = 0.0
    for e, a in zip(exp, act):
        assert e.shape == a.shape, (e.shape, a.shape)
        scale = max(float(np.abs(e).max()), 1e-12) if e.size else 1.0
        worst = max(worst, float(np.abs(e.astype(np.float64) - a.astype(np.float64)).max()) / scale if e.size else 0.0)
    return worst


MODES = ("PYNATIVE_MODE", "GRAPH_MODE")


@contextlib.contextmanager
def ms_mode(mode: str) -> Iterator[None]:
    """MindSpore in ``mode`` ("PYNATIVE_MODE" / "GRAPH_MODE") for the block, PyNative again after it."""
    import mindspore as ms

    ms.set_context(mode=getattr(ms, mode))
    try:
        yield
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def compare_modes(
    tnet: Any,
    build_ms: Callable[[], Any],
    inputs: Sequence[np.ndarray],
    tmp: Path,
    call: Callable[[Any, Sequence[Any]], Any] | None = None,
    weights: Callable[[Any, Path], Path] = weights_by_converter,
) -> dict[str, float]:
    """Relative error of the converted net against torch, per mode (a fresh net per mode, its
    weights from the converted checkpoint: ``weights(tnet, tmp)`` writes it)."""
    import mindspore as ms
    import torch

    call = call or (lambda net, xs: net(*xs))
    tnet.eval()
    with torch.no_grad():
        expected = call(tnet, [torch.from_numpy(x) for x in inputs])
    ckpt = weights(tnet, tmp)
    errors = {}
    for mode in MODES:
        with ms_mode(mode):
            mnet = build_ms()
            load_all(mnet, ckpt)
            mnet.set_train(False)
            errors[mode] = relative_error(expected, call(mnet, [ms.Tensor(x) for x in inputs]))
    return errors
