"""Issue 24, item 1 (R27): every public name of the runtime package (torch2ms.runtime, vendored into
converted projects as torch2ms_runtime) is accounted for in GRAPH_MODE.

The names are enumerated from the package itself (each helper module's ``__all__``, the names its
``__getattr__`` builds, the functions and classes of ``__init__.py``), so a new helper fails
``test_r27_every_runtime_name_is_accounted_for`` until it is put in one of these tables:

- ``KB_GRAPH`` (computed): a KB entry maps a torch API to the helper and its case runs inside a
  GRAPH_MODE-compiled construct against torch (tests/test_kb_differential.py; re-run here).
- ``CASES``: a case of this file, run inside a GRAPH_MODE construct and in PyNative against torch's
  equivalent; ``MATRIX``: a generated matrix in another test file does that.
- ``NOT_COMPILED``: the helper cannot run inside construct in GRAPH_MODE; the reason, and (where
  converted code could call it there) the converter marks the call.
- ``HOST``: runs outside construct by nature (data, I/O, devices, training loop, construction of a
  net); the reason.
- ``UNPROVEN``: helpers that may run inside construct without a GRAPH case yet — a known gap, listed
  so that it shrinks: a name that gains a KB GRAPH case must leave it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module

import torch2ms.runtime as runtime
from torch2ms.kb import load_kb
from torch2ms.proof.graph import wants_graph

RUNTIME_DIR = Path(runtime.__file__).parent
_HELPER = re.compile(r"torch2ms\.runtime\.([A-Za-z_]\w*)")


def public_names() -> set[str]:
    """Every name converted code can import from the runtime package."""
    names = set(runtime._helper_modules())
    names |= {"Sequential", "ModuleDict", "MultiheadAttention", "Embedding"}  # built by __getattr__
    names |= set(runtime._NN_LAYER_NAMES) | set(runtime._DISTRIBUTION_NAMES)
    names |= {"fuse_conv_bn_weights", "fuse_linear_bn_weights"}
    tree = ast.parse((RUNTIME_DIR / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            names.add(node.name)
        if isinstance(node, ast.ImportFrom) and node.module == "vision":
            names.update(a.asname or a.name for a in node.names)
    return names


def kb_graph_names() -> dict[str, list[str]]:
    """Helper → the KB entries whose GRAPH_MODE case calls it."""
    out: dict[str, list[str]] = {}
    for entry in load_kb():
        if not any(wants_graph(entry, case, i) for i, case in enumerate(entry.cases)):
            continue
        texts = [entry.ms or "", entry.template or ""] + [rule.target or "" for rule in entry.args.values()]
        for name in {m for t in texts for m in _HELPER.findall(t)}:
            out.setdefault(name, []).append(entry.torch)
    return out


def _complex_case(t: str, m: str, shape: tuple[int, ...]):
    """A case of a helper with a complex result, made real: both parts compared, each call's imaginary part
    with its own weight (a call that returned the conjugate shows)."""
    return (
        ("None", f"{t}.resolve_conj().imag - 3 * {t}.resolve_conj().imag + {t}.real"),
        ("None", f"mindspore.ops.imag({m}) - 3 * mindspore.ops.imag({m}) + mindspore.ops.real({m})"),
        {"x": shape},
    )


# name → (torch side: (init, expression)), (MindSpore side: (init, expression)), inputs {name: shape})
# ``self.m`` is what init built; the expressions read the inputs by name.
CASES: dict[str, tuple[tuple[str, str], tuple[str, str], dict[str, tuple[int, ...]]]] = {
    # the Hermitian FFTs (runtime/hermitian_fft.py): called again in one construct, every call torch's
    "hfft": (
        ("None", "torch.fft.hfft(x, norm='ortho') + torch.fft.hfft(x, norm='ortho')"),
        ("None", "hfft(x, None, -1, 'ortho') + hfft(x, None, -1, 'ortho')"),
        {"x": (3, 6)},
    ),
    "ihfft": _complex_case("torch.fft.ihfft(x, n=6, dim=0)", "ihfft(x, 6, 0)", (5, 4)),
    "hfft2": (
        ("None", "torch.fft.hfft2(x, s=(3, 6)) + torch.fft.hfft2(x, s=(3, 6))"),
        ("None", "hfft2(x, (3, 6)) + hfft2(x, (3, 6))"),
        {"x": (2, 3, 5)},
    ),
    "ihfft2": _complex_case("torch.fft.ihfft2(x, norm='forward')", "ihfft2(x, None, (-2, -1), 'forward')", (3, 8)),
    "hfftn": (
        ("None", "torch.fft.hfftn(x, dim=(1, 2)) + torch.fft.hfftn(x, dim=(1, 2))"),
        ("None", "hfftn(x, None, (1, 2)) + hfftn(x, None, (1, 2))"),
        {"x": (2, 3, 5)},
    ),
    "ihfftn": _complex_case("torch.fft.ihfftn(x, s=(3, 5), dim=(0, 1))", "ihfftn(x, (3, 5), (0, 1))", (2, 3, 4)),
    "parse_shape": (
        ("None", "x.reshape(einops.parse_shape(x, 'b c _')['c'], -1)"),
        ("None", "x.reshape(parse_shape(x, 'b c _')['c'], -1)"),
        {"x": (2, 3, 4)},
    ),
    "square_subsequent_mask": (
        ("None", "nn.Transformer.generate_square_subsequent_mask(4) + x"),
        ("None", "square_subsequent_mask(4) + x"),
        {"x": (4, 4)},
    ),
    "interpolate": (
        ("None", "F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)"),
        ("None", "interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)"),
        {"x": (1, 2, 3, 4)},
    ),
    "masked_assign": (
        ("None", "torch.where(x > 0, x + 1.5, x)"),
        ("None", "masked_assign(x, x > 0, 1.5, 'add')"),
        {"x": (3, 4)},
    ),
    "Softmax": (("nn.Softmax(dim=1)", "self.m(x)"), ("Softmax(dim=1)", "self.m(x)"), {"x": (2, 3, 4)}),
    "LogSoftmax": (("nn.LogSoftmax(dim=-1)", "self.m(x)"), ("LogSoftmax(dim=-1)", "self.m(x)"), {"x": (2, 5)}),
    "Softmin": (("nn.Softmin(dim=0)", "self.m(x)"), ("Softmin(dim=0)", "self.m(x)"), {"x": (3, 4)}),
    "Dropout2d": (("nn.Dropout2d(0.5).eval()", "self.m(x)"), ("Dropout2d(0.5)", "self.m(x)"), {"x": (2, 3, 4, 4)}),
    "dropout2d": (
        ("None", "F.dropout2d(x, 0.5, training=False)"),
        ("None", "dropout2d(x, 0.5, training=False)"),
        {"x": (2, 3, 4, 4)},
    ),
    "iinfo": (
        ("None", "x + torch.iinfo(torch.int8).max"),
        ("None", "x + iinfo(mindspore.int8).max"),
        {"x": (2, 3)},
    ),
    "ModuleList": (
        ("nn.ModuleList([nn.ReLU(), nn.Tanh()])", "self.m[1](self.m[0](x))"),
        ("ModuleList([mindspore.nn.ReLU(), mindspore.nn.Tanh()])", "self.m[1](self.m[0](x))"),
        {"x": (2, 3)},
    ),
    "Sequential": (
        ("nn.Sequential(nn.ReLU(), nn.Tanh())", "self.m(x)"),
        ("Sequential(mindspore.nn.ReLU(), mindspore.nn.Tanh())", "self.m(x)"),
        {"x": (2, 3)},
    ),
    "assert_true": (
        ("None", "x * 2"),
        ("None", "assert_true(x.shape[0] == 2, 'batch of 2') or x * 2"),
        {"x": (2, 3)},
    ),
    "torch_assert": (
        ("None", "x * 2"),
        ("None", "torch_assert(x.shape[0] == 2, 'batch of 2') or x * 2"),
        {"x": (2, 3)},
    ),
    "legacy_tensor": (
        ("None", "torch.zeros(3) + x"),
        ("None", "legacy_tensor(3, mindspore.float32) + x"),
        {"x": (2, 3)},
    ),
    "with_int64_indices": (
        ("None", "torch.topk(x, 2)[1]"),
        ("None", "with_int64_indices(mindspore.ops.topk(x, 2))[1]"),
        {"x": (3, 5)},
    ),
    "to_dense": (("None", "x * 2"), ("None", "to_dense(x) * 2"), {"x": (2, 3)}),
    "make_ntuple": (("None", "x * 3"), ("None", "x * make_ntuple(3, 2)[1]"), {"x": (2, 3)}),
    "FrozenBatchNorm2d": (
        ("torchvision.ops.FrozenBatchNorm2d(3)", "self.m(x)"),
        ("FrozenBatchNorm2d(3)", "self.m(x)"),
        {"x": (2, 3, 4, 4)},
    ),
    "box_area": (("None", "torchvision.ops.box_area(b)"), ("None", "box_area(b)"), {"b": (5, 4)}),
    "box_iou": (("None", "torchvision.ops.box_iou(b, c)"), ("None", "box_iou(b, c)"), {"b": (5, 4), "c": (3, 4)}),
    "generalized_box_iou": (
        ("None", "torchvision.ops.generalized_box_iou(b, c)"),
        ("None", "generalized_box_iou(b, c)"),
        {"b": (5, 4), "c": (3, 4)},
    ),
    "distance_box_iou": (
        ("None", "torchvision.ops.distance_box_iou(b, c)"),
        ("None", "distance_box_iou(b, c)"),
        {"b": (5, 4), "c": (3, 4)},
    ),
    "complete_box_iou": (
        ("None", "torchvision.ops.complete_box_iou(b, c)"),
        ("None", "complete_box_iou(b, c)"),
        {"b": (5, 4), "c": (3, 4)},
    ),
    "box_convert": (
        ("None", "torchvision.ops.box_convert(b, 'xyxy', 'cxcywh')"),
        ("None", "box_convert(b, 'xyxy', 'cxcywh')"),
        {"b": (5, 4)},
    ),
    "clip_boxes_to_image": (
        ("None", "torchvision.ops.clip_boxes_to_image(b * 3, (4, 5))"),
        ("None", "clip_boxes_to_image(b * 3, (4, 5))"),
        {"b": (5, 4)},
    ),
}

# torch.distributions in forward (a VAE's log-likelihood, a policy's log-prob): name → (arguments, what is read)
DISTRIBUTIONS = {
    "Normal": ("x, x.abs() + 1", ".log_prob(x * 0.5)"),
    "Bernoulli": ("probs=x.sigmoid()", ".log_prob((x > 0).float())"),
    "Beta": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.sigmoid())"),
    "Binomial": ("total_count=5, probs=x.sigmoid()", ".log_prob((x.abs() * 2).floor())"),
    "Categorical": ("logits=x", ".entropy()"),
    "Cauchy": ("x, x.abs() + 1", ".log_prob(x * 0.5)"),
    "Chi2": ("x.abs() + 1", ".log_prob(x.abs() + 0.1)"),
    "Dirichlet": ("x.exp()", ".log_prob(x.softmax(-1))"),
    "Exponential": ("x.abs() + 1", ".log_prob(x.abs())"),
    "Gamma": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.abs() + 0.1)"),
    "Geometric": ("probs=x.sigmoid()", ".log_prob((x.abs() * 2).floor())"),
    "Gumbel": ("x, x.abs() + 1", ".log_prob(x * 0.5)"),
    "HalfCauchy": ("x.abs() + 1", ".log_prob(x.abs())"),
    "HalfNormal": ("x.abs() + 1", ".log_prob(x.abs())"),
    "Laplace": ("x, x.abs() + 1", ".log_prob(x * 0.5)"),
    "LogNormal": ("x, x.abs() + 1", ".log_prob(x.abs() + 0.1)"),
    "Poisson": ("x.abs() + 1", ".log_prob((x.abs() * 2).floor())"),
    "StudentT": ("x.abs() + 2, x, x.abs() + 1", ".log_prob(x * 0.5)"),
    "Uniform": ("x - 3, x + 3", ".log_prob(x)"),
    "Pareto": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.abs() + 3)"),
    "Weibull": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.abs() + 0.1)"),
    "Kumaraswamy": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.sigmoid())"),
    "InverseGamma": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.abs() + 0.1)"),
    "FisherSnedecor": ("x.abs() + 1, x.abs() + 2", ".log_prob(x.abs() + 0.1)"),
    "ContinuousBernoulli": ("probs=x.sigmoid()", ".log_prob(x.sigmoid())"),
    "NegativeBinomial": ("total_count=5.0, probs=x.sigmoid() * 0.9", ".log_prob((x.abs() * 2).floor())"),
    "OneHotCategorical": ("logits=x", ".entropy()"),
    "Independent": ("Normal(x, x.abs() + 1), 1", ".log_prob(x * 0.5)"),
}
for _name, (_args, _read) in DISTRIBUTIONS.items():
    CASES[_name] = (
        ("None", f"torch.distributions.{_name}({_args.replace('Normal(', 'torch.distributions.Normal(')}){_read}"),
        ("None", f"{_name}({_args}){_read}"),
        {"x": (2, 3)},
    )

# The rest of torch.distributions in forward: name → (torch expression, MindSpore expression), on x [2, 3].
_TD = "torch.distributions."
_TT = "torch.distributions.transforms."
MORE_DISTRIBUTIONS = {
    "VonMises": (f"{_TD}VonMises(x, x.abs() + 1).log_prob(x * 0.5)", "VonMises(x, x.abs() + 1).log_prob(x * 0.5)"),
    "RelaxedBernoulli": (
        f"{_TD}RelaxedBernoulli(torch.tensor(0.5), probs=x.sigmoid()).log_prob(x.sigmoid() * 0.8 + 0.1)",
        "RelaxedBernoulli(mindspore.Tensor(0.5), probs=x.sigmoid()).log_prob(x.sigmoid() * 0.8 + 0.1)",
    ),
    "RelaxedOneHotCategorical": (
        f"{_TD}RelaxedOneHotCategorical(torch.tensor(0.5), logits=x).log_prob(x.softmax(-1))",
        "RelaxedOneHotCategorical(mindspore.Tensor(0.5), logits=x).log_prob(x.softmax(-1))",
    ),
    "OneHotCategoricalStraightThrough": (
        f"{_TD}OneHotCategoricalStraightThrough(logits=x).entropy()",
        "OneHotCategoricalStraightThrough(logits=x).entropy()",
    ),
    "LogisticNormal": (
        f"{_TD}LogisticNormal(x[:, :2], x[:, :2].abs() + 1).log_prob(x.softmax(-1))",
        "LogisticNormal(x[:, :2], x[:, :2].abs() + 1).log_prob(x.softmax(-1))",
    ),
    "MultivariateNormal": (
        f"{_TD}MultivariateNormal(x[0], scale_tril=torch.diag(x[1].abs() + 1)).log_prob(x * 0.5)",
        "MultivariateNormal(x[0], scale_tril=mindspore.ops.diag(x[1].abs() + 1)).log_prob(x * 0.5)",
    ),
    "LowRankMultivariateNormal": (
        f"{_TD}LowRankMultivariateNormal(x[0], x[1:].T, x[1].abs() + 1).log_prob(x * 0.5)",
        "LowRankMultivariateNormal(x[0], x[1:].T, x[1].abs() + 1).log_prob(x * 0.5)",
    ),
    "Multinomial": (
        f"{_TD}Multinomial(4, logits=x).log_prob((x.softmax(-1) * 0 + torch.tensor([1.0, 2.0, 1.0])))",
        "Multinomial(4, logits=x).log_prob((x.softmax(-1) * 0 + mindspore.Tensor([1.0, 2.0, 1.0])))",
    ),
    "MixtureSameFamily": (
        f"{_TD}MixtureSameFamily({_TD}Categorical(logits=x[0]), {_TD}Normal(x[1], x[1].abs() + 1)).log_prob(x[:, 0])",
        "MixtureSameFamily(Categorical(logits=x[0]), Normal(x[1], x[1].abs() + 1)).log_prob(x[:, 0])",
    ),
    "TransformedDistribution": (
        f"{_TD}TransformedDistribution({_TD}Normal(x, x.abs() + 1), [{_TT}ExpTransform()]).log_prob(x.abs() + 0.1)",
        "TransformedDistribution(Normal(x, x.abs() + 1), [ExpTransform()]).log_prob(x.abs() + 0.1)",
    ),
    "AbsTransform": (f"{_TT}AbsTransform()(x)", "AbsTransform()(x)"),
    "AffineTransform": (
        f"{_TT}AffineTransform(1.0, 2.0).log_abs_det_jacobian(x, x * 2 + 1) + {_TT}AffineTransform(1.0, 2.0)(x)",
        "AffineTransform(1.0, 2.0).log_abs_det_jacobian(x, x * 2 + 1) + AffineTransform(1.0, 2.0)(x)",
    ),
    "ExpTransform": (
        f"{_TT}ExpTransform().inv(x.abs() + 1) + {_TT}ExpTransform()(x)",
        "ExpTransform().inv(x.abs() + 1) + ExpTransform()(x)",
    ),
    "SigmoidTransform": (
        f"{_TT}SigmoidTransform().log_abs_det_jacobian(x, x.sigmoid())",
        "SigmoidTransform().log_abs_det_jacobian(x, x.sigmoid())",
    ),
    "TanhTransform": (f"{_TT}TanhTransform().inv(x.tanh() * 0.9)", "TanhTransform().inv(x.tanh() * 0.9)"),
    "SoftplusTransform": (f"{_TT}SoftplusTransform()(x)", "SoftplusTransform()(x)"),
    "PowerTransform": (f"{_TT}PowerTransform(2.0)(x.abs())", "PowerTransform(2.0)(x.abs())"),
    "SoftmaxTransform": (f"{_TT}SoftmaxTransform()(x)", "SoftmaxTransform()(x)"),
    "StickBreakingTransform": (f"{_TT}StickBreakingTransform()(x)", "StickBreakingTransform()(x)"),
    "LowerCholeskyTransform": (
        f"{_TT}LowerCholeskyTransform()(x[:, :2].T @ x[:, :2])",
        "LowerCholeskyTransform()(x[:, :2].T @ x[:, :2])",
    ),
    "PositiveDefiniteTransform": (
        f"{_TT}PositiveDefiniteTransform()(x[:, :2].T @ x[:, :2])",
        "PositiveDefiniteTransform()(x[:, :2].T @ x[:, :2])",
    ),
    "ReshapeTransform": (f"{_TT}ReshapeTransform((2, 3), (6,))(x)", "ReshapeTransform((2, 3), (6,))(x)"),
    "ComposeTransform": (
        f"{_TT}ComposeTransform([{_TT}ExpTransform(), {_TT}AffineTransform(0.0, 2.0)])(x)",
        "ComposeTransform([ExpTransform(), AffineTransform(0.0, 2.0)])(x)",
    ),
    "CatTransform": (
        f"{_TT}CatTransform([{_TT}ExpTransform(), {_TT}AbsTransform()], 0, [1, 1])(x)",
        "CatTransform([ExpTransform(), AbsTransform()], 0, [1, 1])(x)",
    ),
    "StackTransform": (
        f"{_TT}StackTransform([{_TT}ExpTransform(), {_TT}AbsTransform()], 0)(x)",
        "StackTransform([ExpTransform(), AbsTransform()], 0)(x)",
    ),
    "IndependentTransform": (
        f"{_TT}IndependentTransform({_TT}ExpTransform(), 1).log_abs_det_jacobian(x, x.exp())",
        "IndependentTransform(ExpTransform(), 1).log_abs_det_jacobian(x, x.exp())",
    ),
    "CumulativeDistributionTransform": (
        f"{_TT}CumulativeDistributionTransform({_TD}Normal(0.0, 1.0))(x)",
        "CumulativeDistributionTransform(Normal(0.0, 1.0))(x)",
    ),
    "identity_transform": (f"{_TT}identity_transform(x) * 2", "identity_transform(x) * 2"),
    "broadcast_all": (
        "torch.distributions.utils.broadcast_all(x, 1.0)[1] + x",
        "broadcast_all(x, 1.0)[1] + x",
    ),
    "clamp_probs": ("torch.distributions.utils.clamp_probs(x.sigmoid())", "clamp_probs(x.sigmoid())"),
    "logits_to_probs": (
        "torch.distributions.utils.logits_to_probs(x) + torch.distributions.utils.logits_to_probs(x, is_binary=True)",
        "logits_to_probs(x) + logits_to_probs(x, is_binary=True)",
    ),
    "probs_to_logits": (
        "torch.distributions.utils.probs_to_logits(x.softmax(-1))",
        "probs_to_logits(x.softmax(-1))",
    ),
    "constraints": (
        f"{_TD}constraints.interval(-1.0, 1.0).check(x.tanh() * 0.5).float() + x",
        "constraints.interval(-1.0, 1.0).check(x.tanh() * 0.5).float() + x",
    ),
}
for _name, (_t, _m) in MORE_DISTRIBUTIONS.items():
    CASES[_name] = (("None", _t), ("None", _m), {"x": (2, 3)})
_RUNTIME_WORD = re.compile(r"[A-Za-z_]\w*")

# In a generated matrix elsewhere: converted code, equal to torch in PyNative and GRAPH_MODE.
MATRIX = {
    name: "tests/test_einops_graph_matrix.py" for name in ("rearrange", "reduce", "repeat", "Rearrange", "Reduce")
} | {"CellParameters": "tests/test_module_state_in_graph.py", "call_cells": "tests/test_sequential_slice.py"}
# the fast CPU convolutions (convert --cpu-fast-conv): outputs and gradients against torch in both modes
MATRIX |= {
    n: "tests/test_conv_fast_matrix.py" for n in ("Conv2d", "Conv1dTranspose", "Conv2dTranspose", "Conv3dTranspose")
}
# layers built where they are used: compare-train in PyNative and GRAPH_MODE
MATRIX |= {
    n: "tests/test_train_fresh_layers.py"
    for n in ("fresh_linear", "fresh_conv1d", "fresh_conv2d", "fresh_embedding", "fresh_layer_norm")
}
# a compiled @jit step over two instances of one class (SAME); the skipping step compiled as a plain Cell
MATRIX |= {
    "distinct_names": "tests/test_train_same_class_instances.py",
    "StepSkippingUnread": "tests/test_train_unread_params.py",
    # a gradient penalty's nested grad inside the compiled step; parameter updates through ops.assign
    "input_grads": "tests/test_train_gradient_penalty.py",
    "assign_data": "tests/test_train_param_updates.py",
}

# name → (reason, MindSpore init and expression that show it failing to compile)
NOT_COMPILED = {
    "TorchCompat": (
        "applies the KB's argument rules to the actual arguments by eval at call time (its literal check uses "
        "try): the converter marks a torch function that runs through it where construct calls it",
        ("TorchCompat('torch.nn.functional.gelu')", "self.m(x)"),
    ),
    "biject_to": (
        "looks the constraint up in a registry at call time (its unhashable-key check uses try): GRAPH_MODE "
        "rejects the Try statement; the transform it returns compiles (ExpTransform, StickBreakingTransform ... "
        "in CASES): pick it in __init__",
        ("None", "biject_to(constraints.positive)(x)"),
    ),
    "transform_to": (
        "the same registry lookup as biject_to (try inside): GRAPH_MODE rejects the Try statement",
        ("None", "transform_to(constraints.simplex)(x)"),
    ),
    "kl_divergence": (
        "dispatches on the distributions' Python classes through a registry at call time: the GRAPH_MODE "
        "compile fails (TypeError inside the compiler); the converter marks the call where construct calls it "
        "(tests/test_kl_divergence_marked.py)",
        ("None", "kl_divergence(Normal(x, 1.0), Normal(0.0, x.abs() + 1))"),
    ),
}

_DATA = "the data pipeline, on the host before the network (datasets, samplers, image transforms)"
_IO = "file and image I/O on the host"
_BUILD = "builds or loads a network outside construct (__init__, factories, checkpoints, weights)"
_DEVICE = "device queries and placement: plain Python constants, called outside construct"
_TRAIN = "the training loop or tooling around the network (optimizers, logging, testing, export)"
HOST: dict[str, str] = {
    "register_kl": "a decorator that registers a KL function in a table when the module is imported, outside construct",
}
for _names, _why in (
    (
        "DictSource SampledSource dataset_of dataset_source sampled_dataset with_torchvision_arrays fetch_dataset "
        "CocoCaptions CocoDetection FakeData VOCDetection open_image ImageClassification InterpolationMode "
        "ColorJitter GaussianBlur Lambda PILToTensor RandomAffine RandomEqualize RandomPerspective RandomPosterize "
        "RandomSolarize ToDtype ToPILImage affine gaussian_blur perspective adjust_brightness adjust_contrast "
        "adjust_gamma adjust_hue adjust_saturation adjust_sharpness autocontrast center_crop crop equalize erase "
        "five_crop get_dimensions get_image_size hflip invert normalize pad pil_to_tensor posterize resize "
        "resized_crop rgb_to_grayscale rotate solarize ten_crop to_grayscale to_pil_image to_tensor vflip "
        "masks_to_boxes Subset random_split RandomSampler SubsetRandomSampler WeightedRandomSampler sampled_pipeline",
        _DATA,
    ),
    (
        "decode_image decode_jpeg decode_png encode_jpeg encode_png read_file read_image write_file write_jpeg "
        "write_png make_grid save_image",
        _IO,
    ),
    (
        "add_module as_parameters ckpt_path embedding_from_pretrained load_helpers load_param_into_net_strict "
        "load_state_dict_from_url "
        "log_api_usage_once tv_models tv_ops compat_base plain_attribute conv_pad_mode conv_padding weight_norm "
        "remove_weight_norm parametrized_weight_norm fuse_conv_bn_weights fuse_linear_bn_weights "
        "save_checkpoint load_checkpoint EXTRA_KEY",
        _BUILD,
    ),
    (
        "Device torch_device accelerator_available count_devices cuda_available current_accelerator "
        "current_device_index device_guard device_index device_type set_device_index synchronize_device "
        "tensor_device_index torch_backends",
        _DEVICE,
    ),
    (
        "Generator CoupledAdam accumulate_grads SummaryWriter assert_allclose assert_close make_tensor onnx_export "
        "onnx_export_outputs numpy_defers_to_tensors grad_of statistics_kept DisabledLossScaler scaler_finite "
        "set_group_lr tensors_format_like_torch data_parallel averaged torch_parameters torch_named_parameters "
        "distinct_cells",
        _TRAIN,
    ),
):
    HOST.update(dict.fromkeys(_names.split(), _why))

# May run inside construct, no GRAPH case yet (issue 24's open gap; packed sequences: issue 24 item 4).
UNPROVEN = frozenset(
    "PackedSequence pack_padded_sequence pack_sequence pad_packed_sequence RoIAlign roi_align "
    "nms batched_nms remove_small_boxes".split()  # the last three compute in numpy on the host
) | (frozenset(runtime._DISTRIBUTION_NAMES) - set(CASES) - set(NOT_COMPILED) - set(HOST))


def test_r27_every_runtime_name_is_accounted_for():
    names = public_names()
    kb = kb_graph_names()
    tables = {
        "CASES": set(CASES),
        "MATRIX": set(MATRIX),
        "NOT_COMPILED": set(NOT_COMPILED),
        "HOST": set(HOST),
        "UNPROVEN": set(UNPROVEN),
    }
    counted = set().union(*tables.values()) | set(kb)
    assert not names - counted, f"runtime names without a GRAPH_MODE case or a reason: {sorted(names - counted)}"
    assert not set().union(*tables.values()) - names, sorted(set().union(*tables.values()) - names)
    for table, members in tables.items():  # one table per name; a KB GRAPH case is proof enough
        others = set().union(*(m for t, m in tables.items() if t != table))
        assert not members & others, (table, sorted(members & others))
        if table in ("UNPROVEN", "HOST"):
            assert not members & set(kb), (table, sorted(members & set(kb)))
    for name, path in MATRIX.items():
        assert name in (RUNTIME_DIR.parents[2] / path).read_text(encoding="utf-8")


def _boxes(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    xy = rng.uniform(0, 4, (shape[0], 2))
    wh = rng.uniform(0.5, 3, (shape[0], 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


def _inputs(shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        k: _boxes(s, rng) if k in ("b", "c") else rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()
    }


def _ms_module(name: str, init: str, expr: str, args: list[str], tmp: Path):
    others = sorted({w for w in _RUNTIME_WORD.findall(init + expr) if w in runtime._DISTRIBUTION_NAMES} - {name})
    src = (
        f"import mindspore\nfrom torch2ms.runtime import {name}\n"
        + "".join(f"from torch2ms.runtime import {w}\n" for w in others)
        + ("import torch2ms.runtime\n" if name == "TorchCompat" else "")
        + "\n\nclass Case(mindspore.nn.Cell):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        self.m = {init}\n\n"
        f"    def construct(self, {', '.join(args)}):\n"
        f"        return {expr}\n"
    )
    mod = f"t2m_runtime_graph_{name}"
    path = tmp / f"{mod}.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(mod, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[mod] = module  # the graph compiler looks the module up by name
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("name", sorted(CASES))
def test_r27_runtime_helper_in_graph_construct_equals_torch(name, tmp_path):
    torch = require_module("torch")
    ms = require_module("mindspore")
    require_module("einops")
    require_module("torchvision")
    import einops
    import torchvision
    from rc_models_support import MODES, ms_mode, relative_error
    from torch import nn
    from torch.nn import functional as F

    (t_init, t_expr), (m_init, m_expr), shapes = CASES[name]
    inputs = _inputs(shapes)

    namespace = {"torch": torch, "nn": nn, "F": F, "einops": einops, "torchvision": torchvision}

    class _Self:
        m = eval(t_init, namespace)

    with torch.no_grad():
        expected = eval(t_expr, {**namespace, "self": _Self}, {k: torch.from_numpy(v) for k, v in inputs.items()})
    module = _ms_module(name, m_init, m_expr, list(inputs), tmp_path)
    try:
        for mode in MODES:
            with ms_mode(mode):
                got = module.Case()(*[ms.Tensor(v) for v in inputs.values()])
            assert np.asarray(got.asnumpy()).dtype.kind == expected.numpy().dtype.kind, (mode, got.dtype)
            # the distributions' special functions (lgamma, log1p ...) round differently: the kit's tolerance
            assert relative_error(expected, got) <= (
                1e-4 if name in DISTRIBUTIONS or name in MORE_DISTRIBUTIONS else 1e-5
            ), mode
    finally:
        sys.modules.pop(module.__name__, None)


@pytest.mark.slow
@pytest.mark.differential
def test_r27_kb_graph_cases_of_runtime_helpers_equal_torch():
    """The KB entries that prove a runtime helper in GRAPH_MODE, run again (both modes)."""
    require_module("torch")
    require_module("mindspore")
    from torch2ms.proof import GraphBatches, run_entry

    kb = load_kb()
    wanted = {torch for entries in kb_graph_names().values() for torch in entries}
    entries = [e for e in kb if e.torch in wanted and e.status != "no-equivalent"]
    batches = GraphBatches(kb, entries)
    failed = []
    for entry in entries:
        try:
            run_entry(entry, kb, batches)
        except AssertionError as exc:
            failed.append(f"{entry.torch}: {str(exc)[:200]}")
    assert not failed, failed


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NOT_COMPILED))
def test_r27_not_compiled_helper_fails_in_graph_mode(name, tmp_path):
    """The reason is true: GRAPH_MODE refuses the helper inside construct (a fix moves it to CASES)."""
    ms = require_module("mindspore")
    from rc_models_support import ms_mode

    init, expr = NOT_COMPILED[name][1]
    module = _ms_module(name, init, expr, ["x"], tmp_path)
    x = ms.Tensor(np.ones((2, 3), np.float32))
    try:
        module.Case()(x)  # PyNative: it works
        with ms_mode("GRAPH_MODE"), pytest.raises((RuntimeError, TypeError, ValueError)):
            module.Case()(x)
    finally:
        sys.modules.pop(module.__name__, None)


COMPAT_SOURCE = """\
import torch
from torch import nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = F.leaky_relu
        self.fc = nn.Linear(4, 4)
        self.z = F.pad(torch.ones(2), *(1, 1))

    def forward(self, x, *pad):
        x = F.pad(x, *pad)
        return self.helper(self.fc(x))

    def helper(self, x):
        return F.pad(x, *(0, 1))
"""


def test_r27_torch_function_through_torch_compat_is_marked_where_construct_calls_it():
    """A torch function kept as a value (line 9), or called with *args in forward (14) or in a method forward
    calls (18): marked for GRAPH_MODE; one called with *args in __init__ (11) is not."""
    from torch2ms.convert import convert_source

    res = convert_source(COMPAT_SOURCE, "net.py")
    marked = {c.line for c in res.changes if c.action == "review" and "TorchCompat, which GRAPH_MODE" in c.note}
    assert marked == {9, 14, 18}, [(c.line, c.note) for c in res.changes]
