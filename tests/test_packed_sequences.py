"""Issue 24, class 4: packed sequences through the recurrent layers, as torch lays them out.

A generated matrix — layer (LSTM/GRU/RNN) × directions × layers × batch_first × how the batch is packed
(pack_padded_sequence sorted, enforce_sorted=False, pack_sequence) × an initial state or none — is
converted from torch source and run in PyNative and GRAPH_MODE against torch: the packed output's
``.data`` (and ``[0]``, into a Linear: the captioning decoder that gave [2, 6, 40] for torch's [10, 40]),
``.batch_sizes``, ``pad_packed_sequence`` with ``total_length`` and the final states.
"""

from __future__ import annotations

import numpy as np
import pytest
from rc_models_support import convert_pair, ms_mode, relative_error

pytestmark = pytest.mark.differential

SOURCE = """\
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pack_sequence, pad_packed_sequence


class Net(nn.Module):
    def __init__(self, lengths):
        super().__init__()
        self.lengths = lengths
        self.rnn = nn.{layer}(4, 5, num_layers={layers}, bidirectional={bidi}, batch_first={bf})
        self.linear = nn.Linear({out}, 3)

    def forward(self, x, lengths=None{hx_arg}):
        lengths = self.lengths if lengths is None else lengths
        packed = {pack}
        hiddens, state = self.rnn(packed{hx})
        padded, lens = pad_packed_sequence(hiddens, batch_first={bf}, total_length=7)
        return self.linear(hiddens[0]), hiddens[1], packed[0], padded, lens, state

    def fields(self, x, lengths):
        packed = {pack}
        hiddens, _ = self.rnn(packed)
        return hiddens.data, hiddens.batch_sizes, packed.data, packed.batch_sizes
"""
PACKS = {
    "sorted": "pack_padded_sequence(x, lengths, batch_first={bf})",
    "unsorted": "pack_padded_sequence(x, lengths, batch_first={bf}, enforce_sorted=False)",
    "pack_sequence": "pack_sequence([{seqs}], enforce_sorted=False)",
}
LENGTHS = {"sorted": [6, 4, 4, 1], "unsorted": [3, 6, 1, 4], "pack_sequence": [3, 6, 1, 4]}
# every layer meets every packing twice; layers, directions, layout and an initial state rotate through
# them so that each value of each meets each layer (the whole product is 144 GRAPH compiles)
MATRIX = [
    (layer, 1 + (k + j) % 2, bool((k + j // 2) % 2), bool((k + j + 1) % 2) if j else bool(k % 2), pack, bool(j % 2))
    for k, layer in enumerate(("LSTM", "GRU", "RNN"))
    for j, pack in enumerate(p for p in PACKS for _ in range(2))
]


def _source(layer, layers, bidi, bf, pack, hx):
    seqs = ", ".join(f"x[{i}, :{n}]" if bf else f"x[:{n}, {i}]" for i, n in enumerate(LENGTHS[pack]))
    return SOURCE.format(
        layer=layer,
        layers=layers,
        bidi=bidi,
        bf=bf,
        out=10 if bidi else 5,
        pack=PACKS[pack].format(bf=bf, seqs=seqs),
        hx_arg=", h0=None, c0=None" if hx else "",
        hx=(", (h0, c0)" if layer == "LSTM" else ", h0") if hx else "",
    )


@pytest.mark.parametrize(("layer", "layers", "bidi", "bf", "pack", "hx"), MATRIX)
def test_packed_sequence_through_recurrent_layers_matches_torch(tmp_path, layer, layers, bidi, bf, pack, hx):
    import mindspore as ms
    import torch

    tmod, mmod, code = convert_pair(_source(layer, layers, bidi, bf, pack, hx), tmp_path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 4) if bf else (6, 4, 4)).astype(np.float32)
    states = [rng.standard_normal((layers * (1 + bidi), 4, 5)).astype(np.float32) for _ in range(2)]
    lengths = LENGTHS[pack]
    torch.manual_seed(0)
    tnet = tmod.Net(lengths).eval()
    hx = [torch.from_numpy(s) for s in states[: 2 * hx]]
    with torch.no_grad():
        expected = tnet(torch.from_numpy(x), None, *hx)
        fields = tnet.fields(torch.from_numpy(x), torch.tensor(lengths))
    weights = {k: v.detach().numpy() for k, v in tnet.state_dict().items()}
    mhx = [ms.Tensor(h.numpy()) for h in hx]
    for mode in ("PYNATIVE_MODE", "GRAPH_MODE"):
        with ms_mode(
            mode
        ):  # GRAPH_MODE: the lengths are constants (an attribute); a length Tensor needs dynamic shapes
            mnet = mmod.Net(lengths)
            _load(mnet, weights)
            got = mnet(ms.Tensor(x), None, *mhx)
        assert relative_error(expected, got) <= 1e-5, (mode, code)
    # PyNative: the lengths as a forward argument (a list, a Tensor) and the fields by name
    assert relative_error(expected, mnet(ms.Tensor(x), lengths, *mhx)) <= 1e-5
    assert relative_error(fields, mnet.fields(ms.Tensor(x), ms.Tensor(lengths))) <= 1e-5


def _load(mnet, weights):
    """torch's weights by name: the recurrent layers keep torch's parameter names, Linear too."""
    import mindspore as ms

    params = {p.name: p for p in mnet.get_parameters()}
    assert sorted(params) == sorted(weights), (sorted(params), sorted(weights))
    for name, w in weights.items():
        params[name].set_data(ms.Tensor(w))
