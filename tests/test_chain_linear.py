"""A method chain ``y = x.a().b()...`` converts in work linear in its length (issue 26).

Each link used to write its whole receiver as text, parse it again and walk down the chain to type and
root it: a 240-link chain took ~17 s (O(n²)). The work is counted here, never timed (timings:
bench/chain_bench.py): characters libcst parses as expressions, characters of node text generated,
receiver shapes built and expression types worked out. Per link, none of these may grow with the
chain's length, in every spelling of the chain (where it sits, argument forms, one line or one link
per line with comments).
"""

from __future__ import annotations

import libcst
import pytest

from torch2ms.analysis import infer
from torch2ms.analysis.headroom import run_with_headroom
from torch2ms.convert import context, convert_source, names
from torch2ms.kb import load_kb

LENGTHS = (30, 60, 120, 240)
BARE = (".float()", ".relu()", ".abs()", ".exp()", ".neg()", ".clone()", ".detach()", ".mean()")
MIXED = (".view(-1)", ".sum(0)", ".unsqueeze(dim=0)", ".reshape(-1)", ".transpose(0, -1)", ".sum(dim=0)", ".relu()")
WHERE = {
    "module": "import torch\n\nx = torch.zeros(3)\ny = {chain}\n",
    "function": "import torch\n\n\ndef f(x: torch.Tensor):\n    y = {chain}\n    return y\n",
    "forward": (
        "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        y = {chain}\n        return y\n"
    ),
}


def _chain(n: int, links: tuple[str, ...], layout: str) -> str:
    parts = [links[i % len(links)] for i in range(n)]
    if layout == "one-line":
        return "x" + "".join(parts)
    lines = [f"    {p}  # link {i}" if i % 5 == 0 else f"    {p}" for i, p in enumerate(parts)]
    return "(\n    x\n" + "\n".join(lines) + "\n)"


class _Work:
    """Counters of the work that grew with the chain: text parsed and generated, shapes, types."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts = {"parsed": 0, "generated": 0, "shapes": 0, "types": 0}
        names._parse_short.cache_clear()  # a text parsed by an earlier case is parsed again
        for module, attr, counter, size in (
            (libcst, "parse_expression", "parsed", lambda a, r: len(a[0])),
            (context, "code", "generated", lambda a, r: len(r)),
            (context, "_shape", "shapes", lambda a, r: 1),
            (infer, "_expr_type", "types", lambda a, r: 1),
        ):
            monkeypatch.setattr(module, attr, self._counting(getattr(module, attr), counter, size))

    def _counting(self, fn, counter: str, size):
        def counted(*args, **kwargs):
            out = fn(*args, **kwargs)
            self.counts[counter] += size(args, out)
            return out

        return counted

    def take(self) -> dict[str, int]:
        out, self.counts = self.counts, dict.fromkeys(self.counts, 0)
        return out


@pytest.mark.parametrize("layout", ["one-line", "per-line"])
@pytest.mark.parametrize("args", ["bare", "mixed"])
@pytest.mark.parametrize("where", sorted(WHERE))
def test_chain_work_per_link_does_not_grow(monkeypatch: pytest.MonkeyPatch, where: str, args: str, layout: str):
    kb = load_kb()
    work = _Work(monkeypatch)
    per_link: dict[int, dict[str, float]] = {}
    for n in LENGTHS:
        source = WHERE[where].format(chain=_chain(n, BARE if args == "bare" else MIXED, layout))
        result = run_with_headroom(convert_source, source, f"chain{n}.py", kb=kb)
        assert result.error is None, result.error
        assert "ops." in result.code  # converted, not copied unchanged
        compile(result.code, f"chain{n}.py", "exec")
        per_link[n] = {k: v / n for k, v in work.take().items()}
    shortest, longest = per_link[LENGTHS[0]], per_link[LENGTHS[-1]]
    for kind in shortest:
        # 8× the links: the work per link stays within 1.5× (the fixed cost of the file shrinks per link).
        assert longest[kind] <= 1.5 * shortest[kind] + 1, (kind, per_link)
