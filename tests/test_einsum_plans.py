"""Issue 21 §3: torch.einsum converts to the plain ops a MindSpore engineer writes (``ops.matmul``,
``swapaxes``, ``ops.diagonal``, ``.sum``, a broadcast ``*``), one expression with each operand written once:
no immediately-invoked lambda binding the operands, no helper, no ``x.shape[i]`` read back.

A generated matrix — named equations of every kind (matmul, batch matmul, transpose, trace and diagonal,
outer, sums over axes, '...', a repeated operand, three operands, implicit output) in every spelling of the
call (``torch.einsum``, ``th.einsum``, ``from torch import einsum``, ``torch.functional.einsum``; operands
written out, as a list, as a tuple, as expressions) plus seeded random equations — converted in one file
and run in PyNative and GRAPH_MODE against torch on the same inputs.
"""

from __future__ import annotations

import ast
import itertools
import random
import string

import numpy as np
import pytest
from matrix_support import covering, full_matrix
from rc_models_support import MODES, convert_pair, ms_mode, relative_error
from requires_support import require_modules

pytestmark = pytest.mark.differential

# (equation, operand shapes): each kind the handler plans differently
NAMED = {
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)]),
    "batch_matmul": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "attention_scores": ("b h i d, b h j d -> b h i j", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    "attention_values": ("bhij,bhjd->bhid", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    "batch_in_middle": ("bhwc,hkc->bhwk", [(2, 3, 4, 5), (3, 6, 5)]),
    "two_summed": ("bijk,bjkl->bil", [(2, 3, 4, 5), (2, 4, 5, 6)]),
    "two_free_each_side": ("aibj,jcd->abicd", [(2, 3, 4, 5), (5, 3, 2)]),
    "transpose": ("ij->ji", [(3, 4)]),
    "permute": ("abc->cab", [(2, 3, 4)]),
    "trace": ("ii", [(4, 4)]),
    "diagonal": ("ii->i", [(4, 4)]),
    "diagonal_then_sum": ("iij->j", [(3, 3, 2)]),
    "batch_diagonal": ("bii->bi", [(2, 3, 3)]),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "batch_outer": ("bi,bj->bij", [(2, 3), (2, 4)]),
    "sum_all": ("ij->", [(3, 4)]),
    "sum_one_axis": ("ijk->ik", [(2, 3, 4)]),
    "dot": ("i,i->", [(5,), (5,)]),
    "matrix_vector": ("ij,j->i", [(3, 4), (4,)]),
    "vector_matrix": ("j,jk->k", [(4,), (4, 5)]),
    "hadamard": ("ij,ij->ij", [(3, 4), (3, 4)]),
    "ellipsis_matmul": ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    "ellipsis_transpose": ("...ij->...ji", [(2, 3, 4)]),
    "ellipsis_permute": ("...ijk->...kij", [(2, 3, 4, 5)]),
    "ellipsis_diagonal": ("...ii->...i", [(2, 4, 4)]),
    "ellipsis_implicit": ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    "implicit_matmul": ("ij,jk", [(3, 4), (4, 5)]),
    "implicit_sorted": ("ba", [(3, 4)]),
    "bilinear": ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    "chain": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    "three_batch": ("bij,bjk,bkl->bli", [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
}
REPEATED = {  # the same tensor twice: the call names it twice
    "gram": ("bid,bjd->bij", "x0, x0", [(2, 3, 4)]),
    "square_sum": ("ij,ij->", "x0, x0", [(3, 4)]),
}

# (call spelling, operand form)
SPELLINGS = {
    "torch": "torch.einsum({eq!r}, {ops})",
    "alias": "th.einsum({eq!r}, {ops})",
    "from_import": "einsum({eq!r}, {ops})",
    "functional": "torch.functional.einsum({eq!r}, {ops})",
    "list": "torch.einsum({eq!r}, [{ops}])",
    "tuple": "torch.einsum({eq!r}, ({ops},))",
}
OPERAND_FORMS = {"names": "x{i}", "expressions": "(x{i} * 2 + 1)"}
SPELLED = ("matmul", "batch_in_middle", "outer", "ellipsis_matmul", "chain", "trace")  # × every spelling and form


def _random_equations(count: int, seed: int = 21) -> dict[str, tuple[str, list[tuple[int, ...]]]]:
    """Seeded random equations: 1–3 operands of rank 1–4 over shared labels, sometimes a leading '...',
    the output a random subset of the labels in a random order (or implicit)."""
    rng = random.Random(seed)
    out: dict[str, tuple[str, list[tuple[int, ...]]]] = {}
    while len(out) < count:
        labels = rng.sample(string.ascii_lowercase[:8], rng.randint(2, 5))
        size = {c: rng.randint(2, 4) for c in labels}
        operands = [rng.sample(labels, rng.randint(1, min(4, len(labels)))) for _ in range(rng.randint(1, 3))]
        used = sorted(set(itertools.chain(*operands)))
        ell = rng.random() < 0.25
        implicit = rng.random() < 0.2
        rhs = rng.sample(used, rng.randint(0, len(used)))
        prefix = "..." if ell else ""
        lhs = ",".join(prefix + "".join(o) for o in operands)
        eq = lhs if implicit else f"{lhs}->{prefix}{''.join(rhs)}"
        shapes = [(2,) * ell + tuple(size[c] for c in o) for o in operands]
        out[f"random_{len(out)}_{eq.replace('...', 'E').replace(',', '_').replace('->', '_to_')}"] = (eq, shapes)
    return out


def _cases() -> dict[str, tuple[str, list[tuple[int, ...]]]]:
    cases: dict[str, tuple[str, list[tuple[int, ...]]]] = {}
    for name, (eq, shapes) in NAMED.items():
        cases[name] = (f"torch.einsum({eq!r}, {', '.join(f'x{i}' for i in range(len(shapes)))})", shapes)
    for name, (spelling, call), (form, operand) in itertools.product(SPELLED, SPELLINGS.items(), OPERAND_FORMS.items()):
        eq, shapes = NAMED[name]
        ops = ", ".join(operand.format(i=i) for i in range(len(shapes)))
        cases[f"{name}-{spelling}-{form}"] = (call.format(eq=eq, ops=ops), shapes)
    for name, (eq, ops, shapes) in REPEATED.items():
        cases[name] = (f"torch.einsum({eq!r}, {ops})", shapes)
    for name, (eq, shapes) in _random_equations(40).items():
        cases[name] = (f"torch.einsum({eq!r}, {', '.join(f'x{i}' for i in range(len(shapes)))})", shapes)
    return cases


CASES = _cases()


def _slice() -> list[str]:
    """make test's cases (tests/matrix_support.py): every named plan and repeated operand; of the spellings'
    matrix every plan, spelling and operand form once; the first 12 random equations (all: make test-full)."""
    spelled = [tuple(name.split("-")) for name in CASES if name.count("-") == 2]
    kept = {"-".join(c) for c in covering(spelled)}
    randoms = [name for name in CASES if name.startswith("random_")]
    keep = set(randoms if full_matrix() else randoms[:12])
    return [n for n in CASES if (n.count("-") != 2 and not n.startswith("random_")) or n in kept or n in keep]


SOURCE_HEAD = "import torch\nimport torch as th\nimport torch.nn as nn\nfrom torch import einsum\n"


def _source() -> str:
    parts = [SOURCE_HEAD]
    for k, (call, shapes) in enumerate(CASES.values()):
        args = ", ".join(f"x{i}" for i in range(len(shapes)))
        parts.append(f"\n\nclass Case{k}(nn.Module):\n    def forward(self, {args}):\n        return {call}\n")
    return "".join(parts)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    require_modules("torch", "mindspore")
    return convert_pair(_source(), tmp_path_factory.mktemp("einsum"))


def test_the_converted_einsums_are_plain_expressions(converted):
    # no lambda, no helper call, no shape read back: each forward returns one expression of ms ops
    _, _, code = converted
    tree = ast.parse(code)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    assert ".shape" not in code and "torch2ms_runtime" not in code and "einsum" not in code


@pytest.mark.parametrize("case", _slice())
def test_einsum_matches_torch_in_both_modes(converted, case):
    import mindspore as ms
    import torch

    tmod, mmod, _ = converted
    k = list(CASES).index(case)
    shapes = CASES[case][1]
    rng = np.random.default_rng(k)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    with torch.no_grad():
        expected = getattr(tmod, f"Case{k}")()(*[torch.from_numpy(x) for x in xs])
    for mode in MODES:
        with ms_mode(mode):
            got = getattr(mmod, f"Case{k}")()(*[ms.Tensor(x) for x in xs])
        assert relative_error(expected, got) <= 1e-5, (mode, CASES[case][0])
