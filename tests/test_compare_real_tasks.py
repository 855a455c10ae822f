"""R24/R26 on models as real projects write them (issue 13): a factory with arguments, a UNet-style
segmentation net trained with per-pixel cross-entropy, a language model whose vocabulary is smaller than
the default integer range, a model that returns (logits, loss), a dict output — and hints that name what
actually differs (a layer's configuration, its type, or a container's own forward code).

Real torch and real MindSpore run on the same seeded inputs and weights; the MindSpore side is the
converter's output, broken by hand in one place where a test needs a bug.
"""

from __future__ import annotations

import io
import textwrap

import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

UNET = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class DoubleConv(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.double_conv = nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        def forward(self, x):
            return self.double_conv(x)


    class Up(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(cin, cout)

        def forward(self, x1, x2):
            x1 = self.up(x1)
            x = torch.cat([x2, x1], dim=1)
            return self.conv(x)


    class UNet(nn.Module):
        def __init__(self, n_channels, n_classes, width=4):
            super().__init__()
            self.inc = DoubleConv(n_channels, width)
            self.pool = nn.MaxPool2d(2)
            self.down = DoubleConv(width, 2 * width)
            self.up1 = Up(3 * width, width)
            self.outc = nn.Conv2d(width, n_classes, 1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down(self.pool(x1))
            return self.outc(self.up1(x2, x1))
""")

LANGUAGE = textwrap.dedent("""
    import torch.nn as nn
    import torch.nn.functional as F


    class TinyLM(nn.Module):
        def __init__(self, vocab=11, dim=8):  # fewer ids than the default integer range (16)
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.ln = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx, targets=None):
            logits = self.head(self.ln(self.emb(idx)))
            if targets is None:
                return logits
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss


    class DictNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 4)

        def forward(self, x):
            return {"logits": self.fc(x), "features": x}
""")

ATTENTION = textwrap.dedent("""
    import torch.nn as nn


    class Attn(nn.Module):
        def __init__(self, vocab=13, dim=16):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
            self.head = nn.Linear(dim, vocab)

        def forward(self, idx):
            x = self.emb(idx)
            y, _ = self.attn(x, x, x, need_weights=False)
            return self.head(y)
""")

UNET_SPEC = "UNet(n_channels=3, n_classes=2)"
UNET_BUGS = {
    # a swapped concatenation inside Up.construct: the container is at fault, not its first child
    "cat_order": ("cat([x2, x1], axis=1)", "cat([x1, x2], axis=1)"),
    "align_corners": ("align_corners=True)", "align_corners=False)"),
    "layer_type": ("nn.MaxPool2d(2, stride=2, pad_mode='pad', padding=0)", "nn.AvgPool2d(2, stride=2)"),
}


def _convert(d, name: str, source: str) -> str:
    (d / f"{name}_torch.py").write_text(source, encoding="utf-8")
    converted = convert_source(source)
    assert not converted.error, converted.error
    (d / f"{name}_ms.py").write_text(converted.code, encoding="utf-8")
    return converted.code


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    d = tmp_path_factory.mktemp("real")
    code = _convert(d, "unet", UNET)
    for bug, (old, new) in UNET_BUGS.items():
        assert old in code, f"converter output changed: {old!r} not found"
        (d / f"unet_{bug}.py").write_text(code.replace(old, new, 1), encoding="utf-8")
    _convert(d, "lm", LANGUAGE)
    _convert(d, "attn", ATTENTION)
    return d


def test_r26_unet_factory_with_arguments_trains_with_per_pixel_cross_entropy(models):
    from rich.console import Console

    from torch2ms.align import CompareOptions, TrainOptions, compare_models
    from torch2ms.progress import RichProgress

    screen = io.StringIO()
    opts = CompareOptions(input_shapes=[(2, 3, 8, 8)], train=TrainOptions(steps=3, optimizer="adam", lr=1e-3))
    with RichProgress(Console(file=screen, force_terminal=True, width=120)) as progress:
        rep = compare_models(f"{models}/unet_torch.py:{UNET_SPEC}", f"{models}/unet_ms.py:{UNET_SPEC}", opts, progress)
    assert rep.status == "match" and rep.first_divergence is None, (rep.first_divergence, rep.problems)
    assert rep.output["graph"].ok and rep.output["pynative"].ok
    tr = rep.training
    assert tr.ok and tr.loss == "ce" and len(tr.ms_losses) == 3 and tr.max_loss_rel <= 1e-4
    shown = screen.getvalue()
    for phase in ("torch side", "torch: training steps", "MindSpore: GRAPH_MODE compile", "MindSpore: training steps"):
        assert phase in shown, phase
    assert "3/3" in shown  # each training step is counted


@pytest.mark.parametrize(
    "bug, layer, kind, hint",
    [
        ("cat_order", "up1", "input", "calling up1.conv: the order of concatenated or stacked tensors"),
        ("align_corners", "up1.up", "values", "Upsample align_corners differs: torch align_corners=True"),
        ("layer_type", "pool", "values", "layer type differs: torch nn.MaxPool2d maps to mindspore.nn.MaxPool2d"),
    ],
)
def test_r24_hint_names_what_differs(models, bug, layer, kind, hint):
    from torch2ms.align import CompareOptions, compare_models

    opts = CompareOptions(input_shapes=[(1, 3, 8, 8)], graph=False)
    rep = compare_models(f"{models}/unet_torch.py:{UNET_SPEC}", f"{models}/unet_{bug}.py:{UNET_SPEC}", opts)
    fd = rep.first_divergence
    assert rep.status == "divergence" and fd is not None
    assert (fd.layer, fd.kind) == (layer, kind), fd
    assert hint in fd.hint, fd.hint
    assert "KB (" not in fd.hint  # what differs was found: no generic pitfall note


def test_r26_sequence_targets_and_embedding_range(models):
    from torch2ms.align import CompareOptions, TrainOptions, compare_models

    # int64 ids drawn below the Embedding's 11 rows (not the default 16, which torch would reject)
    opts = CompareOptions(input_shapes=[(2, 5)], input_dtypes=["int64"], train=TrainOptions(steps=3, loss="ce:-1"))
    rep = compare_models(f"{models}/lm_torch.py:TinyLM", f"{models}/lm_ms.py:TinyLM", opts)
    assert rep.status == "match", (rep.first_divergence, rep.problems)
    assert rep.training.ok and rep.training.loss == "ce:-1"


def test_r26_model_that_returns_logits_and_loss(models):
    from torch2ms.align import CompareOptions, TrainOptions, compare_models

    train = TrainOptions(steps=3, loss="model", output_index=1, optimizer="adamw", lr=1e-2)
    opts = CompareOptions(input_shapes=[(2, 5), (2, 5)], input_dtypes=["int64"], train=train, graph=False)
    rep = compare_models(f"{models}/lm_torch.py:TinyLM", f"{models}/lm_ms.py:TinyLM", opts)
    assert rep.status == "match", (rep.first_divergence, rep.problems)
    assert rep.training.ok and len(rep.training.ms_losses) == 3 and rep.training.loss == "model"


def test_r26_dict_output_needs_a_key_and_trains_with_it(models):
    from torch2ms.align import CompareOptions, CompareUsageError, TrainOptions, compare_models

    specs = (f"{models}/lm_torch.py:DictNet", f"{models}/lm_ms.py:DictNet")
    with pytest.raises(CompareUsageError, match=r"returns a dict with keys \['logits', 'features'\]"):
        compare_models(*specs, CompareOptions(input_shapes=[(3, 6)], train=TrainOptions(steps=2), graph=False))
    opts = CompareOptions(input_shapes=[(3, 6)], train=TrainOptions(steps=2, loss="mse", output_index="logits"))
    rep = compare_models(*specs, opts)
    assert rep.status == "match" and rep.training.ok and rep.output["graph"].ok


def test_r26_attention_key_bias_drift_is_a_note_not_a_divergence(models):
    from torch2ms.align import CompareOptions, TrainOptions, compare_models
    from torch2ms.align.report_format import training_lines

    # The key part of in_proj_bias does not change the output (softmax ignores a constant per query): its
    # gradient is rounding noise, which AdamW scales to full steps differently in each framework.
    train = TrainOptions(steps=5, loss="ce:-1", optimizer="adamw", lr=1e-3)
    opts = CompareOptions(input_shapes=[(2, 6)], input_dtypes=["int64"], train=train, graph=False)
    rep = compare_models(f"{models}/attn_torch.py:Attn", f"{models}/attn_ms.py:Attn", opts)
    tr = rep.training
    assert tr.worst_param == "attn.in_proj_bias" and not tr.params_ok  # it does drift apart...
    assert tr.losses_ok and tr.post_checked and tr.post_layers_ok  # ...while everything the output sees agrees
    assert rep.status == "match" and tr.ok and rep.first_divergence is None
    assert [state for state, _ in training_lines(tr)] == ["ok", "note", "ok"]
