"""A method chain ``y = x.a().b()...`` converts in work linear in its length (issue 26).

Each link used to write its whole receiver as text, parse it again and walk down the chain to type and
root it: a 240-link chain took ~17 s (O(n²)). The work is counted here, never timed (timings:
bench/chain_bench.py): characters libcst parses as expressions, characters of node text generated,
receiver shapes built and expression types worked out. Per link, none of these may grow with the
chain's length, in every spelling of the chain (where it sits, argument forms, one line or one link
per line with comments).
"""

from __future__ import annotations

import ast
import io
import tokenize

import libcst
import pytest

from torch2ms.analysis import infer
from torch2ms.analysis.headroom import run_with_headroom
from torch2ms.convert import calls, context, convert_source, names
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


# ---- the receiver's stand-in changes no output ---------------------------------------------------------

RECEIVERS = [
    "x",
    "(x + y)",
    "x[0]",
    "x.t()",
    "self.fc(x)",
    "x.flatten()",
    "(x\n            # a comment inside\n            .float())",
    "torch.zeros(3)",
    "x.view(-1, 2)[:, 0]",
    "(-x)",
    "(x @ y)",
    "f(x).data",
]
# Rules that write the receiver once, twice (unflatten), as a function's argument, or read its text (norm).
METHODS = [
    "float()",
    "relu()",
    "unflatten(1, (2, 3))",
    "norm()",
    "type_as(y)",
    "new_zeros(3)",
    "masked_fill(y > 0, 0.0)",
    "max(dim=1)",
    "repeat(2, 1)",
    "expand_as(y)",
    "cuda()",
    "to(torch.float16)",
    "view(-1)",
    "size(0)",
    "scatter_add(0, y, x)",
    "clamp(min=0)",
    "std(dim=0, unbiased=False)",
    "flip(0)",
    "long()",
    "detach().cpu()",
]


def _comments(code: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT]


@pytest.mark.parametrize("receiver", RECEIVERS)
def test_receiver_stand_in_writes_what_the_receiver_text_wrote(monkeypatch: pytest.MonkeyPatch, receiver: str):
    """Every receiver form × every way a rule uses its receiver: the output with the receiver's node put
    back is the output of writing its text into the rule (the way every receiver was converted before)."""
    kb = load_kb()
    head = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x, y):\n"
    sources = [head + f"        z = {receiver}.{method}\n        return z\n" for method in METHODS]
    # The call on a line of its own below a receiver over several lines, inside the statement's brackets.
    sources += [
        head
        + f"        z = (\n            {receiver}\n            .abs()  # c\n            .{method}\n        )\n        return z\n"
        for method in METHODS
    ]
    put_back = [convert_source(s, "m.py", kb=kb) for s in sources]
    monkeypatch.setattr(calls, "_stands_alone", lambda node: False)
    as_text = [convert_source(s, "m.py", kb=kb) for s in sources]
    for i, (source, a, b) in enumerate(zip(sources, put_back, as_text, strict=True)):
        assert a.error is None, source
        compile(a.code, "m.py", "exec")
        if b.error is not None:
            continue  # a rule that writes the text unbracketed (``{receiver}.shape[0]``) failed the file
        if i < len(METHODS):
            assert a.code == b.code, source
        else:
            # A receiver over several lines was written in parentheses as text (its text alone does not
            # parse); its node needs none inside the statement's brackets: the same code, the same comments.
            assert ast.dump(ast.parse(a.code)) == ast.dump(ast.parse(b.code)), source
            assert _comments(a.code) == _comments(b.code), source
    assert sum(a.code != s for a, s in zip(put_back, sources, strict=True)) >= len(METHODS)
