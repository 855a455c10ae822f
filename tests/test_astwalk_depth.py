"""The worker's nesting guard (project_pool.MAX_NESTING) counts depth level by level (astwalk.depth):
the same number as a recursive walk over ``ast.iter_child_nodes``."""

from __future__ import annotations

import ast

import pytest

from torch2ms.analysis.astwalk import depth, nodes, walked_depth
from torch2ms.convert.project_pool import nesting_depth

SOURCES = [
    "",
    "x = 1\n",
    "x = " + "+".join(["a"] * 300) + "\n",  # a left-leaning chain: deep without brackets
    "x = " + "(" * 60 + "1" + ")" * 60 + "\n",
    "y = [[[[{1: (2, {3})}]]]]\n",
    'f"{a:{b}.{c}f} {d!r:>{e}}"\n',
    "class A:\n    def f(self, x=lambda y: (y, [z for z in y if z])):\n        match x:\n"
    "            case [1, {'k': B(c=2)}]:\n                return -~x[1:2, ...]\n",
    "async def g():\n    async with a as b, c:\n        await (yield (w := 1))\n",
    "try:\n    pass\nexcept* (E, F) as e:\n    raise X from e\n",
]


def _recursive_depth(node: ast.AST) -> int:
    return 1 + max((_recursive_depth(c) for c in ast.iter_child_nodes(node)), default=-1)


@pytest.mark.parametrize("source", SOURCES)
def test_r20_nesting_depth_counts_as_a_recursive_walk(source: str):
    tree = ast.parse(source)
    assert depth(tree) == _recursive_depth(tree)
    assert nesting_depth(source) == _recursive_depth(tree)
    fresh = ast.parse(source)  # walked_depth: the same number, and the walk it leaves is nodes()'s
    assert walked_depth(fresh) == _recursive_depth(tree)
    assert [ast.dump(n) for n in nodes(fresh)] == [ast.dump(n) for n in ast.walk(ast.parse(source))]


def test_r20_nesting_depth_of_text_that_does_not_parse():
    assert nesting_depth("def f(:\n") == -1
