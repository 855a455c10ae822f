"""The one switch between a matrix's covering slice (``make test``) and the whole matrix (``make test-full``).

A differential or compare-train matrix is the product of a few axes (where the loop lives × the optimizer ×
the spelling …). ``make test`` runs a fixed-seed slice of it in which every value of every axis appears at
least once (with ``pairs=True`` every pair of values of two axes that the matrix holds, too); the whole matrix
runs with ``TORCH2MS_FULL_MATRIX=1`` (``make test-full``). One import, one call::

    from matrix_support import covering

    CASES = covering(list(itertools.product(SCALERS, FORMS, PLACES)), pairs=True)

    @pytest.mark.parametrize("scaler, form, place", CASES)
    def test_...(scaler, form, place): ...

The slice is the same in every pytest-xdist worker (no hashing, a fixed seed) and keeps the cases' own ids,
so ``-k`` finds a case of the whole matrix only under the switch. Cases may be tuples (each position an axis),
``pytest.param(...)`` (its values) or anything with ``axes=`` saying its values; ``keep=`` names cases that must
stay in the slice (the rows a bug was first seen on). Budgets and the measured cost per file:
bench/test_time.md.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

FULL_ENV = "TORCH2MS_FULL_MATRIX"


def full_matrix(*legacy: str) -> bool:
    """True where the whole matrix is asked for: ``TORCH2MS_FULL_MATRIX=1`` (or a file's older switch in
    ``legacy``, set to ``all`` or ``1``)."""
    names = (FULL_ENV, *legacy)
    return any(os.environ.get(name, "").strip().lower() in ("1", "all", "yes", "true") for name in names)


def _values(case: Any) -> tuple[Any, ...]:
    values = getattr(case, "values", None)  # pytest.param(...)
    if isinstance(values, tuple):
        return values
    return tuple(case) if isinstance(case, tuple) else (case,)


def covering(
    cases: Iterable[Any],
    *,
    pairs: bool = False,
    axes: Callable[[Any], Sequence[Any]] | None = None,
    keep: Callable[[Any], bool] | None = None,
    seed: int = 0,
    legacy: Sequence[str] = (),
) -> list[Any]:
    """The cases ``make test`` runs: all of them under the switch, else a greedy covering slice (in the
    matrix's order) in which every value of every axis appears, and with ``pairs`` every pair of values
    the matrix holds; ``keep(case)`` cases always stay."""
    cases = list(cases)
    if full_matrix(*legacy) or len(cases) <= 1:
        return cases
    order, covered = covering_order(cases, pairs=pairs, axes=axes, keep=keep, seed=seed)
    return [cases[i] for i in sorted(order[:covered])]


def covering_order(
    cases: Sequence[Any],
    *,
    pairs: bool = False,
    axes: Callable[[Any], Sequence[Any]] | None = None,
    keep: Callable[[Any], bool] | None = None,
    seed: int = 0,
) -> tuple[list[int], int]:
    """Every case's index, in the order the greedy cover picks them (``keep`` cases first, then the case
    that covers most of what is still uncovered), then the rest in the matrix's order; and how many of the
    first indices are the covering slice."""
    axes = axes or _values
    needs: list[set[tuple[Any, ...]]] = []
    for case in cases:
        vals = [repr(v) for v in axes(case)]
        need = {(i, v) for i, v in enumerate(vals)}
        if pairs:
            need |= {(i, vals[i], j, vals[j]) for i, j in itertools.combinations(range(len(vals)), 2)}
        needs.append(need)
    chosen = [i for i, case in enumerate(cases) if keep is not None and keep(case)]
    uncovered = set().union(*needs) - set().union(*(needs[i] for i in chosen))
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    while uncovered:
        best = max(order, key=lambda i: len(needs[i] & uncovered))  # the first best in the seeded order
        chosen.append(best)
        uncovered -= needs[best]
    picked = list(dict.fromkeys(chosen))
    taken = set(picked)
    return picked + [i for i in range(len(cases)) if i not in taken], len(picked)


def product(*axes: Iterable[Any], pairs: bool = True, **kwargs: Any) -> list[tuple[Any, ...]]:
    """``covering(itertools.product(*axes))``: the slice of a product of axes (pairwise by default)."""
    return covering(itertools.product(*axes), pairs=pairs, **kwargs)


def convert_cases(root: Path, cases: Sequence[tuple[Any, ...]], script: Callable[..., str]) -> dict[Any, str]:
    """Each case's script (``script(*case)``) written into ``root/src`` and converted as one tree (one
    conversion for the whole matrix): case → its converted text."""
    from torch2ms.convert import convert_tree

    (root / "src").mkdir()
    for i, case in enumerate(cases):
        (root / "src" / f"case_{i}.py").write_text(script(*case), encoding="utf-8")
    convert_tree(str(root / "src"), str(root / "out"))
    return {case: (root / "out" / f"case_{i}.py").read_text(encoding="utf-8") for i, case in enumerate(cases)}


def converted_trains_like_torch(tmp_path: Path, source: str, mode: str, steps: int = 3) -> Any:
    """``source`` as train.py, converted as a one-file project, and compare-train's report on the pair
    (run from ``tmp_path``: the torch script's own folder)."""
    from torch2ms.convert import convert_tree
    from torch2ms.trainrun import compare_train

    (tmp_path / "train.py").write_text(source)
    (tmp_path / "c" / "src").mkdir(parents=True)
    (tmp_path / "c" / "src" / "train.py").write_text(source)
    convert_tree(str(tmp_path / "c" / "src"), str(tmp_path / "c" / "out"))
    return compare_train(
        str(tmp_path / "train.py"),
        str(tmp_path / "c" / "out" / "train.py"),
        steps=steps,
        mode=mode,
        out_dir=str(tmp_path / "cmp"),
        cwd=str(tmp_path),
    )
