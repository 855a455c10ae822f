"""Issue 26: seconds to convert one file holding a long method chain ``y = x.float().view(-1)...``.

Each link used to write its whole receiver as text and parse it again (O(n²): ~17 s for 240 links);
tests/test_chain_linear.py counts that work per link, this prints the seconds. One libcst parse of the
whole file remains, which grows faster than linearly with the nesting on its own (printed apart).

    python bench/chain_bench.py [--lengths 30,60,120,240,480] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import libcst

from torch2ms.analysis.headroom import run_with_headroom
from torch2ms.convert import convert_source
from torch2ms.kb import load_kb

LINKS = (".float()", ".view(-1)", ".relu()", ".sum(0)", ".abs()", ".exp()", ".unsqueeze(0)", ".mean()", ".neg()")


def chain_file(n: int) -> str:
    chain = "x" + "".join(LINKS[i % len(LINKS)] for i in range(n))
    return f"import torch\n\n\ndef f(x: torch.Tensor):\n    y = {chain}\n    return y\n"


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        run_with_headroom(fn)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="30,60,120,240,480")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    kb = load_kb()
    convert_source("import torch\nx = torch.zeros(1).abs()\n", kb=kb)  # warm: KB caches
    print(f"{'links':>6} {'convert s':>10} {'ms/link':>8} {'parse-only s':>13}")
    for n in (int(v) for v in args.lengths.split(",")):
        source = chain_file(n)
        result = run_with_headroom(convert_source, source, "chain.py", kb=kb)
        assert result.error is None and "ops." in result.code, result.error
        secs = best(lambda s=source: convert_source(s, "chain.py", kb=kb), args.rounds)
        parse = best(lambda s=source: libcst.parse_module(s), args.rounds)
        print(f"{n:>6} {secs:>10.3f} {1000 * secs / n:>8.2f} {parse:>13.3f}")


if __name__ == "__main__":
    main()
