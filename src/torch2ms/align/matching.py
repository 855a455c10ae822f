"""Pair torch module calls with MindSpore cell calls.

First by qualified name and call number (the converter keeps attribute names, so ``layer1.0.conv1``
is ``layer1.0.conv1`` on both sides), then what is left by call order and output shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any


def _sig(ev: dict[str, Any]) -> tuple:
    return (ev["leaf"], tuple(tuple(s) for s in ev["out_shapes"]))


def match_events(t_events: Sequence[dict[str, Any]], m_events: Sequence[dict[str, Any]]) -> tuple[dict[int, int], str]:
    """{torch event index: MindSpore event index}, and how the leftovers were paired ("name", "name+order")."""
    by_key = {(e["name"], e["call"]): i for i, e in enumerate(m_events)}
    pairs: dict[int, int] = {}
    for i, e in enumerate(t_events):
        j = by_key.get((e["name"], e["call"]))
        if j is not None:
            pairs[i] = j
    t_left = [i for i in range(len(t_events)) if i not in pairs]
    used = set(pairs.values())
    m_left = [j for j in range(len(m_events)) if j not in used]
    how = "name"
    if t_left and m_left:
        sm = SequenceMatcher(
            a=[_sig(t_events[i]) for i in t_left], b=[_sig(m_events[j]) for j in m_left], autojunk=False
        )
        for block in sm.get_matching_blocks():
            for k in range(block.size):
                pairs[t_left[block.a + k]] = m_left[block.b + k]
                how = "name+order"
    return pairs, how
