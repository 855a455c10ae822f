"""torch.fft's Hermitian transforms after conversion: torch2ms.runtime.hfft/ihfft/hfft2/ihfft2/hfftn/ihfftn.

MindSpore 2.10's CPU ops.hfft family alternates between torch's values and other ones from call to call in
one process; the helpers compute through the real transforms (irfft of the conjugate, conjugate of rfft,
with the norm's direction swapped). Real torch and real MindSpore on the same inputs: every transform ×
norm (None/backward/forward/ortho) × size given or not × dim, each called several times, equals torch's
every time. The identities themselves are checked on torch alone, and the real transforms MindSpore
computes through are checked to give the same values on every call.
"""

from __future__ import annotations

import numpy as np
import pytest
from requires_support import require_module

torch = require_module("torch")
ms = require_module("mindspore")

from mindspore import ops  # noqa: E402

from torch2ms.convert import convert_source  # noqa: E402
from torch2ms.runtime import hermitian_fft  # noqa: E402

pytestmark = pytest.mark.differential

NORMS = [None, "backward", "forward", "ortho"]
SWAPPED = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
# transform → (its real twin, the input is complex, the size/dim forms: {} is the defaults)
FORMS = {
    "hfft": ("irfft", True, [{}, {"n": 5}, {"dim": 0}, {"n": 7, "dim": 1}]),
    "ihfft": ("rfft", False, [{}, {"n": 5}, {"dim": 0}, {"n": 6, "dim": 1}]),
    "hfft2": ("irfft2", True, [{}, {"s": (5, 7)}, {"dim": (0, 2)}, {"s": (3, 6), "dim": (0, 1)}]),
    "ihfft2": ("rfft2", False, [{}, {"s": (4, 4)}, {"dim": (0, 2)}, {"s": (3, 5), "dim": (1, 2)}]),
    "hfftn": ("irfftn", True, [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"s": (3, 6), "dim": (1, 2)}]),
    "ihfftn": ("rfftn", False, [{}, {"s": (3, 5)}, {"dim": (1, 2)}, {"s": (3, 5, 4), "dim": (0, 1, 2)}]),
}
CASES = [(op, norm, kw) for op, (_, _, kws) in FORMS.items() for norm in NORMS for kw in kws]
REPEATS = 4


def _input(complex_: bool) -> np.ndarray:
    rng = np.random.default_rng(7)
    if complex_:
        return (rng.standard_normal((3, 4, 6)) + 1j * rng.standard_normal((3, 4, 6))).astype(np.complex64)
    return rng.standard_normal((3, 4, 6)).astype(np.float32)


def _torch(op: str, x: np.ndarray, norm, kw) -> np.ndarray:
    return getattr(torch.fft, op)(torch.from_numpy(x), norm=norm, **kw).resolve_conj().numpy()


def _check(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op,norm,kw", CASES, ids=[f"{o}-{n}-{sorted(k)}" for o, n, k in CASES])
def test_the_identity_holds_in_torch(op, norm, kw):
    """torch's own hfft is irfft of the conjugate (ihfft: the conjugate of rfft) with the norm swapped."""
    real, complex_, _ = FORMS[op]
    x = torch.from_numpy(_input(complex_))
    want = getattr(torch.fft, op)(x, norm=norm, **kw).resolve_conj()
    if complex_:
        via = getattr(torch.fft, real)(x.conj(), norm=SWAPPED[norm], **kw)
    else:
        via = getattr(torch.fft, real)(x, norm=SWAPPED[norm], **kw).conj()
    torch.testing.assert_close(via.resolve_conj(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op,norm,kw", CASES, ids=[f"{o}-{n}-{sorted(k)}" for o, n, k in CASES])
def test_the_helper_equals_torch_on_every_call(op, norm, kw):
    _, complex_, _ = FORMS[op]
    x = _input(complex_)
    want = _torch(op, x, norm, kw)
    for _ in range(REPEATS):  # a fresh MindSpore tensor each call, as converted code makes them
        _check(getattr(hermitian_fft, op)(ms.Tensor(x), norm=norm, **kw).asnumpy(), want)


@pytest.mark.parametrize("real", ["rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn"])
def test_the_real_transforms_give_the_same_values_on_every_call(real):
    """The helpers rest on these: unlike ops.hfft's family, they do not alternate."""
    x = _input(real.startswith("i"))
    want = getattr(torch.fft, real)(torch.from_numpy(x)).numpy()
    for _ in range(REPEATS):
        _check(getattr(ops, real)(ms.Tensor(x)).asnumpy(), want)


@pytest.mark.parametrize("op", sorted(FORMS))
def test_converted_code_calls_the_helper_and_agrees_every_time(op):
    """User code calling torch.fft.<op> several times: converted, run with MindSpore alone, torch's values each time."""
    _, complex_, kws = FORMS[op]
    kw = kws[-1]  # both the size and dim given
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    src = (
        "import torch\n\n\n"
        "def run(x):\n"
        f"    return [torch.fft.{op}(x, {args}, norm=norm) for norm in (None, 'backward', 'forward', 'ortho')"
        " for _ in range(3)]\n"
    )
    out = convert_source(src).code
    assert f"from torch2ms.runtime import {op}\n" in out and f"ops.{op}(" not in out, out
    namespace: dict = {}
    exec(compile(out, f"<converted {op}>", "exec"), namespace)
    x = _input(complex_)
    got = namespace["run"](ms.Tensor(x))
    norms = [n for n in (None, "backward", "forward", "ortho") for _ in range(3)]
    for g, norm in zip(got, norms, strict=True):
        _check(g.asnumpy(), _torch(op, x, norm, kw))
