"""torch.special's orthogonal polynomials (Chebyshev, Hermite, Laguerre, Legendre) for MindSpore.

MindSpore 2.10 has none of them. Each is its three-term recurrence, evaluated with ops for an
integer degree ``n`` (GRAPH_MODE unrolls the loop); a tensor ``n`` is evaluated elementwise up to
its largest degree (PyNative only: the loop length is read from the tensor). Degrees below 0 give
0, as in torch. MindSpore is imported at the top: GRAPH_MODE allows no import in these bodies
(and the recurrences are named functions, not lambdas, for its parser).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mindspore
from mindspore import ops

__all__ = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]

Step = Callable[[int, Any, Any, Any], Any]  # (k, x, p_{k-1}, p_k) -> p_{k+1}


def _evaluate(x: Any, n: Any, first: Any, step: Step) -> Any:
    """p_n(x) from p_0 = 1, p_1 = first and the recurrence ``step``."""
    if isinstance(n, mindspore.Tensor):
        return _evaluate_each(x, n, first, step)
    n = int(n)
    if n < 0:
        return ops.zeros_like(x)
    p, q = ops.ones_like(x), first
    if n == 0:
        return p
    for k in range(1, n):
        p, q = q, step(k, x, p, q)
    return q


def _evaluate_each(x: Any, n: Any, first: Any, step: Step) -> Any:
    """An elementwise degree: every p_k up to max(n), each kept where n == k."""
    zero = ops.zeros_like(x) + ops.zeros_like(n, dtype=x.dtype)  # the broadcast shape of x and n
    x, first, n = x + zero, first + zero, n.astype(mindspore.int64) + zero.astype(mindspore.int64)
    p, q = ops.ones_like(x), first
    out = ops.where(n == 0, p, zero)
    out = ops.where(n == 1, q, out)
    for k in range(1, int(n.max())):
        p, q = q, step(k, x, p, q)
        out = ops.where(n == k + 1, q, out)
    return out


def _chebyshev(k: int, x: Any, p: Any, q: Any) -> Any:
    return 2 * x * q - p


def _hermite(k: int, x: Any, p: Any, q: Any) -> Any:
    return 2 * x * q - 2 * k * p


def _hermite_e(k: int, x: Any, p: Any, q: Any) -> Any:
    return x * q - k * p


def _laguerre(k: int, x: Any, p: Any, q: Any) -> Any:
    return ((2 * k + 1 - x) * q - k * p) / (k + 1)


def _legendre(k: int, x: Any, p: Any, q: Any) -> Any:
    return ((2 * k + 1) * x * q - k * p) / (k + 1)


def chebyshev_polynomial_t(input: Any, n: Any) -> Any:
    """T_n: T_0 = 1, T_1 = x, T_{k+1} = 2x T_k - T_{k-1}."""
    return _evaluate(input, n, input, _chebyshev)


def chebyshev_polynomial_u(input: Any, n: Any) -> Any:
    """U_n: U_0 = 1, U_1 = 2x, then Chebyshev's recurrence."""
    return _evaluate(input, n, 2 * input, _chebyshev)


def chebyshev_polynomial_v(input: Any, n: Any) -> Any:
    """V_n: V_0 = 1, V_1 = 2x - 1, then Chebyshev's recurrence."""
    return _evaluate(input, n, 2 * input - 1, _chebyshev)


def chebyshev_polynomial_w(input: Any, n: Any) -> Any:
    """W_n: W_0 = 1, W_1 = 2x + 1, then Chebyshev's recurrence."""
    return _evaluate(input, n, 2 * input + 1, _chebyshev)


def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Any:
    """T*_n(x) = T_n(2x - 1)."""
    return chebyshev_polynomial_t(2 * input - 1, n)


def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Any:
    """U*_n(x) = U_n(2x - 1)."""
    return chebyshev_polynomial_u(2 * input - 1, n)


def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Any:
    """V*_n(x) = V_n(2x - 1)."""
    return chebyshev_polynomial_v(2 * input - 1, n)


def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Any:
    """W*_n(x) = W_n(2x - 1)."""
    return chebyshev_polynomial_w(2 * input - 1, n)


def hermite_polynomial_h(input: Any, n: Any) -> Any:
    """Physicists' H_n: H_0 = 1, H_1 = 2x, H_{k+1} = 2x H_k - 2k H_{k-1}."""
    return _evaluate(input, n, 2 * input, _hermite)


def hermite_polynomial_he(input: Any, n: Any) -> Any:
    """Probabilists' He_n: He_0 = 1, He_1 = x, He_{k+1} = x He_k - k He_{k-1}."""
    return _evaluate(input, n, input, _hermite_e)


def laguerre_polynomial_l(input: Any, n: Any) -> Any:
    """L_n: L_0 = 1, L_1 = 1 - x, L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1)."""
    return _evaluate(input, n, 1 - input, _laguerre)


def legendre_polynomial_p(input: Any, n: Any) -> Any:
    """P_n: P_0 = 1, P_1 = x, P_{k+1} = ((2k + 1) x P_k - k P_{k-1}) / (k + 1)."""
    return _evaluate(input, n, input, _legendre)
