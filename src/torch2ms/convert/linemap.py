"""The line map ``convert`` writes into OUT: each converted line back to its original line, and the
KB entries the converter used on that original line (``compare --api`` names lines with it).

Format (``torch2ms-linemap.json``)::

    {"version": 1, "source": "/abs/path/of/SRC",
     "files": {"pkg/model.py": {"lines": {"12": 13, ...},            # converted line -> original line
                                "kb": {"13": [{"api": "torch.nn.functional.gelu", "note": "..."}]},
                                "sha256": "..."}}}                   # the converted text's, 16 hex digits

The converter's output itself is untouched; the map is computed from the two texts (matching lines
first, then the changed runs between them line by line) and from the changes the converter recorded.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LINEMAP_JSON = "torch2ms-linemap.json"
_MARK = "# torch2ms:"


def line_map(original: str, converted: str, memo: dict[tuple[str, str], float] | None = None) -> dict[int, int]:
    """Converted line number → original line number (1-based); lines the converter added are absent.
    ``memo``: exact line ratios computed so far, by pair (the moved-line pass asks again, and the files of
    one project share many rewritten lines); one is made when not given."""
    a, b = [s.strip() for s in original.splitlines()], [s.strip() for s in converted.splitlines()]
    out: dict[int, int] = {}
    if memo is None:
        memo = {}
    matcher = _LineMatcher(a, b)  # difflib.SequenceMatcher(None, a, b, autojunk=False), faster
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.update({j1 + k + 1: i1 + k + 1 for k in range(j2 - j1)})
        elif tag == "replace":
            out.update({j + 1: i + 1 for j, i in _similar_lines(a, b, i1, i2, j1, j2, memo).items()})
    _moved_lines(a, b, out, memo)
    return out


_MOVED_MIN = 0.75  # similarity a moved statement keeps with its original (ops.x for F.x, a renamed method)


def _moved_lines(a: list[str], b: list[str], out: dict[int, int], memo: dict[tuple[str, str], float]) -> None:
    """Statements the converter moved out of order (a training loop's forward and loss into the
    ``forward_fn`` it writes before the loop) that no monotone pairing can reach: a converted line
    unlike the original it was paired with takes the most similar original line that no converted line
    maps to, when that one is similar enough."""
    orphans = sorted(set(range(1, len(a) + 1)) - set(out.values()))
    orphans = [i for i in orphans if a[i - 1] and not a[i - 1].startswith("#")]
    unlike = [
        j
        for j in sorted(out)
        if b[j - 1]
        and not b[j - 1].startswith("#")
        and _ratio(a[out[j] - 1], b[j - 1], _MOVED_MIN, None, memo) < _MOVED_MIN
    ]
    if len(unlike) * len(orphans) > _MAX_CELLS:  # a big rewrite: the monotone pairing stands (bounded work)
        return
    for j in unlike:
        text = b[j - 1]
        if not orphans:
            break
        # the most similar orphan, max((ratio, i)); one that cannot reach the floor or the best so far is not
        # compared character by character (its ratio could not be the maximum that is taken)
        counts = Counter(text)
        best: tuple[float, int] | None = None
        for i in orphans:
            floor = _MOVED_MIN if best is None else max(_MOVED_MIN, best[0])
            ratio = _ratio(a[i - 1], text, floor, counts, memo)
            if ratio >= floor and (best is None or (ratio, i) > best):
                best = (ratio, i)
        if best is not None:
            out[j] = best[1]
            orphans.remove(best[1])


def _ratio(
    x: str,
    y: str,
    floor: float,
    counts: Counter[str] | None = None,
    memo: dict[tuple[str, str], float] | None = None,
) -> float:
    """``difflib.SequenceMatcher(None, x, y).ratio()`` where it is at least ``floor``; below it, some value
    below ``floor`` (the cheap upper bounds, by length and by characters, decide most pairs).
    ``counts``: ``Counter(y)`` when the caller has it; ``memo``: the exact ratios computed before, by pair."""
    if x == y and len(y) < _AUTOJUNK:  # (from 200 characters difflib's autojunk may match less of equal texts)
        return 1.0
    total = len(x) + len(y)
    if 2.0 * min(len(x), len(y)) / total < floor:  # real_quick_ratio
        return -1.0
    known = memo.get((x, y)) if memo is not None else None
    if known is not None:
        return known
    if 2.0 * sum((Counter(x) & (counts or Counter(y))).values()) / total < floor:  # quick_ratio
        return -1.0
    if len(y) < _AUTOJUNK:
        matched = _matched(x, y)
    else:
        matched = sum(block.size for block in difflib.SequenceMatcher(None, x, y).get_matching_blocks())
    ratio = 2.0 * matched / total  # (difflib's ratio(), the same float)
    if memo is not None:
        memo[(x, y)] = ratio
    return ratio


_AUTOJUNK = 200  # from this length of its second text on, difflib leaves out that text's frequent characters


def _matched(a: str, b: str) -> int:
    """The characters of ``difflib.SequenceMatcher(None, a, b).get_matching_blocks()`` (b shorter than
    ``_AUTOJUNK``): the same recursion over the same blocks (``_longest``)."""
    total = 0
    queue = [(0, len(a), 0, len(b))]
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        i, j, size = _longest(a, b, alo, ahi, blo, bhi)
        if size:
            total += size
            if alo < i and blo < j:
                queue.append((alo, i, blo, j))
            if i + size < ahi and j + size < bhi:
                queue.append((i + size, ahi, j + size, bhi))
    return total


def _longest(a: str, b: str, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int]:
    """``SequenceMatcher.find_longest_match`` without junk: the longest common block of ``a[alo:ahi]`` and
    ``b[blo:bhi]``, of those the earliest in ``a``, then in ``b`` (difflib's choice), ``(alo, blo, 0)`` for
    none. Found by C string searches (a block one longer than the best so far, from each start in ``a``)
    instead of difflib's loop over every pair of equal items: about 3x faster on converted lines."""
    window = b[blo:bhi]
    start, size = alo, 0
    for i in range(alo, ahi):
        if i + size >= ahi:
            break
        while i + size < ahi and a[i : i + size + 1] in window:
            size += 1
            start = i
    if not size:
        return alo, blo, 0
    return start, window.find(a[start : start + size]) + blo, size


class _LineMatcher(difflib.SequenceMatcher):
    """``difflib.SequenceMatcher(None, a, b, autojunk=False)`` over two lists of lines, the same opcodes:
    each distinct line is one character of a string, and each longest block is found by ``_longest``."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        codes: dict[str, str] = {}
        for line in (*a, *b):
            if line not in codes:
                codes[line] = chr(len(codes))  # (a file has far fewer distinct lines than code points)
        self._codes_a = "".join(map(codes.__getitem__, a))
        self._codes_b = "".join(map(codes.__getitem__, b))
        super().__init__(None, self._codes_a, self._codes_b, False)

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        a, b = self._codes_a, self._codes_b
        i, j, size = _longest(a, b, alo, len(a) if ahi is None else ahi, blo, len(b) if bhi is None else bhi)
        return difflib.Match(i, j, size)


_MAX_CELLS = 40_000  # a changed run larger than this is mapped proportionally


def _similar_lines(
    a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int, memo: dict[tuple[str, str], float] | None = None
) -> dict[int, int]:
    """Inside a run of changed lines: the monotone pairing with the most similar text (a small dynamic
    programme over character similarity); a converted line left unpaired (an added statement, or the
    continuation of an expanded one) takes the original line of the paired line above it."""
    n, m = i2 - i1, j2 - j1
    if n * m > _MAX_CELLS:
        return {j: i1 + min(n - 1, (j - j1) * n // m) for j in range(j1, j2) if not b[j].startswith(_MARK)}
    if n == 1 and m == 1:  # one line for one: paired whatever their similarity (the gap filling below would)
        return {} if b[j1].startswith(_MARK) else {j1: i1}
    # ratios[j][i]: the converted line's characters counted once; below 0.4 not needed
    ratios = []
    for j in range(j1, j2):
        counts = Counter(b[j])
        ratios.append([_ratio(a[i], b[j], 0.4, counts, memo) for i in range(i1, i2)])
    score = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            ratio = ratios[j - 1][i - 1]
            pair = score[i - 1][j - 1] + ratio if ratio >= 0.4 else -1.0
            score[i][j] = max(score[i - 1][j], score[i][j - 1], pair)
    pairs: dict[int, int] = {}
    i, j = n, m
    while i and j:
        if score[i][j] == score[i - 1][j]:
            i -= 1
        elif score[i][j] == score[i][j - 1]:
            j -= 1
        else:
            pairs[j1 + j - 1] = i1 + i - 1
            i, j = i - 1, j - 1
    _fill_gaps(pairs, i1, i2, j1, j2)
    out, last = {}, None
    for jj in range(j1, j2):
        last = pairs.get(jj, last)
        if last is not None and not b[jj].startswith(_MARK):
            out[jj] = last
    return out


def _fill_gaps(pairs: dict[int, int], i1: int, i2: int, j1: int, j2: int) -> None:
    """Between two paired lines, the unpaired lines of each side pair up in order (a statement the
    converter rewrote beyond recognition sits where its original sat)."""
    fences = [(i1 - 1, j1 - 1)] + sorted((i, j) for j, i in pairs.items()) + [(i2, j2)]
    for (ia, ja), (ib, jb) in zip(fences, fences[1:]):
        for i, j in zip(range(ia + 1, ib), range(ja + 1, jb)):
            pairs[j] = i


def _kb_by_line(changes: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    kb: dict[str, list[dict[str, str]]] = {}
    for change in changes:
        if change.get("line") and change.get("action") != "not-converted":
            kb.setdefault(str(change["line"]), []).append({"api": change["api"], "note": change.get("note", "")})
    return kb


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def prior_line_map(base: Path) -> dict[str, Any]:
    """The line map of an earlier conversion when BASE is that conversion's output, untouched (every file
    it maps still holds the text it was written with), else ``{}``: converting an output again keeps
    pointing at the first pass's originals. An edited output gets a fresh map of the text it holds."""
    try:
        data = json.loads((base / LINEMAP_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("files"), dict):
        return {}
    for rel, entry in data["files"].items():
        try:
            text = (base / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {}
        if not isinstance(entry, dict) or entry.get("sha256") != _digest(text):
            return {}
    return data


def write_line_map(tmp: Path, base: Path, files: Iterable[Any]) -> None:
    """Write LINEMAP_JSON into TMP (the OUT being built) for every converted file of ``files``."""
    # An untouched output given again: its map stands (its files convert to themselves), and a file the
    # first pass left as it was (so BASE holds the first source's text) adds its own entry beside them.
    prior = prior_line_map(base)
    entries: dict[str, Any] = dict(prior.get("files", {}))
    memo: dict[tuple[str, str], float] = {}  # line ratios, shared by the files
    for result in files:
        if not result.changed or result.error or result.path in entries:
            continue
        try:
            original = (base / result.path).read_text(encoding="utf-8", errors="replace")
            converted = (tmp / result.path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = line_map(original, converted, memo)
        entries[result.path] = {
            "lines": {str(k): v for k, v in lines.items()},
            "kb": _kb_by_line(result.changes),
            "sha256": _digest(converted),
        }
    data = {"version": 1, "source": prior.get("source") or str(base.resolve()), "files": entries}
    (tmp / LINEMAP_JSON).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
