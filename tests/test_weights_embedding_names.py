"""``torch2ms weights`` without ``--net``: a bias-less 2-D weight named like an embedding (``embed_out``,
``token_proj``) is an Embedding only when its neighbours in the state dict agree; the name alone used
to decide, which turned a GPT-NeoX-style head or a projection into an ``embedding_table``.

The state dicts are real torch modules' (their names, shapes and order); the rule sees only those.
"""

from __future__ import annotations

import itertools

import pytest
from requires_support import require_module

torch = require_module("torch")
nn = torch.nn

from torch2ms.kb import load_kb  # noqa: E402
from torch2ms.weights.convert import guess_layer_types  # noqa: E402
from torch2ms.weights.dataflow import embeddings_by_dataflow  # noqa: E402

VOCAB, HIDDEN, INNER = 50, 16, 24
# names the name hint matches, on layers that are Linear
LINEAR_NAMES = ("embed_out", "token_proj", "tok_head", "word_proj", "position_out", "lookup_proj", "wte_head")
EMBEDDING_NAMES = ("wte", "wpe", "tok_emb", "word_embeddings", "position_embeddings", "embed_tokens")


def _types(model: nn.Module) -> dict[str, str]:
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    kb = load_kb()
    return embeddings_by_dataflow(shapes, guess_layer_types(shapes, kb))


class _Head(nn.Module):
    """tokens → embedding → block → norm → a bias-less Linear head named ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.block = nn.Linear(HIDDEN, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        setattr(self, name, nn.Linear(HIDDEN, VOCAB, bias=False))


class _Middle(nn.Module):
    """norm → a bias-less projection named ``name`` → a Linear that reads what it writes."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        setattr(self, name, nn.Linear(HIDDEN, INNER, bias=False))
        self.out = nn.Linear(INNER, HIDDEN)


class _Embeddings(nn.Module):
    """Embeddings side by side (``first``, ``second``) feeding a norm, as GPT-2's wte/wpe or BERT's."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__()
        setattr(self, first, nn.Embedding(VOCAB, HIDDEN))
        setattr(self, second, nn.Embedding(VOCAB // 2 + 3, HIDDEN))
        self.norm = nn.LayerNorm(HIDDEN)
        self.block = nn.Linear(HIDDEN, INNER)


@pytest.mark.parametrize(("name", "where"), list(itertools.product(LINEAR_NAMES, ("head", "middle"))))
def test_a_linear_named_like_an_embedding_stays_linear(name: str, where: str) -> None:
    model = _Head(name) if where == "head" else _Middle(name)
    assert _types(model)[name] == "torch.nn.Linear"


@pytest.mark.parametrize(("first", "second"), list(itertools.permutations(EMBEDDING_NAMES, 2))[::3])
def test_embeddings_named_so_stay_embeddings(first: str, second: str) -> None:
    types = _types(_Embeddings(first, second))
    assert types[first] == types[second] == "torch.nn.Embedding"


def test_the_head_model_keeps_its_real_embedding() -> None:
    assert _types(_Head("embed_out"))["embed"] == "torch.nn.Embedding"
