"""Run-time helpers that converted code imports where a static rewrite cannot be exact.

Needs MindSpore only (never torch). Each helper is named in the conversion report where used.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path
from typing import Any

from . import vision_functional, vision_io, vision_ops, vision_transforms, vision_utils  # noqa: F401 - vision_ops.nms(...)
from .vision import (  # noqa: F401 - re-exported: converted torchvision code imports them from here
    ImageClassification,
    InterpolationMode,
    load_state_dict_from_url,
    torch_assert,
    tv_models,
    tv_ops,
)


def as_parameters(state: Any) -> dict[str, Any]:
    """A state dict for ``mindspore.load_param_into_net``, which takes Parameters only: torch's
    ``load_state_dict`` takes plain tensors too (``{k: torch.tensor(v)}``)."""
    import mindspore as ms

    return {
        k: v if isinstance(v, ms.Parameter) else ms.Parameter(v if isinstance(v, ms.Tensor) else ms.Tensor(v), name=k)
        for k, v in dict(state).items()
    }


def load_param_into_net_strict(net: Any, params: Any) -> None:
    """``mindspore.load_param_into_net`` that raises as torch's strict ``load_state_dict`` does when a
    parameter of ``net`` gets no value or the checkpoint holds one ``net`` has not: MindSpore's returns
    both lists and loads the rest, a silent partial load."""
    import mindspore as ms

    missing, unexpected = ms.load_param_into_net(net, params)
    if missing or unexpected:
        errors = [
            f"{what} key(s) in state_dict: " + ", ".join(f'"{k}"' for k in keys) + ". "
            for what, keys in (("Missing", missing), ("Unexpected", unexpected))
            if keys
        ]
        raise RuntimeError(f"Error(s) in loading state_dict for {type(net).__name__}:\n\t" + "\n\t".join(errors))


def add_module(cell: Any, name: str, child: Any) -> None:
    """torch ``Module.add_module``: also appends to a SequentialCell's run order, as torch does."""
    import mindspore

    cell.insert_child_to_cell(name, child)
    if isinstance(cell, mindspore.nn.SequentialCell):
        # insert_child_to_cell alone registers the parameters but construct() would skip the child.
        cell.cell_list = list(cell._cells.values())


def embedding_from_pretrained(
    embeddings: Any,
    freeze: bool = True,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Any:
    """torch.nn.Embedding.from_pretrained: an Embedding whose table is ``embeddings``, every row as given
    (MindSpore's Embedding zeroes the padding row when it is built: torch keeps the row), frozen unless
    ``freeze=False``; with ``padding_idx`` the padding lookups get no gradient, as in torch."""
    import mindspore
    import numpy as np

    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("Embedding.from_pretrained(max_norm=/scale_grad_by_freq=) has no MindSpore form")
    # a copy: MindSpore's constructor zeroes the padding row in place, through the array it was given
    table = np.array(embeddings.asnumpy() if isinstance(embeddings, mindspore.Tensor) else embeddings)
    if table.ndim != 2:
        raise ValueError("Embeddings parameter is expected to be 2-dimensional")
    rows, dim = table.shape
    if padding_idx is not None and padding_idx < 0:
        padding_idx += rows
    cls = globals().get("Embedding") or _embedding()
    globals()["Embedding"] = cls
    cell = cls(rows, dim, embedding_table=mindspore.Tensor(table.copy()), padding_idx=padding_idx)
    cell.embedding_table.set_data(mindspore.Tensor(table))
    cell.embedding_table.requires_grad = not freeze
    return cell


def _sequential_cell():
    import mindspore

    class Sequential(mindspore.nn.SequentialCell):
        """SequentialCell for classes that subclass torch's Sequential and add layers as attributes.

        torch runs every submodule assigned to a Sequential (``self.norm = BatchNorm2d(...)``) in
        order; MindSpore's SequentialCell only runs its ``cell_list``, so keep that list in step.
        """

        def __setattr__(self, name: str, value: Any) -> None:
            super().__setattr__(name, value)
            if isinstance(value, mindspore.nn.Cell) and "_cells" in self.__dict__:
                object.__setattr__(self, "cell_list", list(self._cells.values()))

        def insert_child_to_cell(self, child_name: str, child_cell: Any) -> None:
            super().insert_child_to_cell(child_name, child_cell)
            object.__setattr__(self, "cell_list", list(self._cells.values()))

        def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
            object.__setattr__(self, "_torch2ms_prefix", prefix)
            super().update_parameters_name(prefix, recurse)

        def append(self, cell: Any) -> Any:
            """Named under the Sequential's own name (issue 24: ``input_blocks.1.0.w``, not ``0.1.0.w``)."""
            return self.insert(len(self), cell)

        def extend(self, cells: Any) -> Any:
            for cell in list(cells):
                self.append(cell)
            return self

        def __iadd__(self, cells: Any) -> Any:
            return self.extend(cells)

        def insert(self, index: int, cell: Any) -> Any:
            from .containers import _name_by_path, _own_prefix

            prefix = _own_prefix(self)
            length = len(self._cells)
            index = index if index >= 0 else length + index
            for i in range(length, index, -1):  # as torch's Sequential.insert: the later keys move up one
                self._cells[str(i)] = self._cells[str(i - 1)]
            self._cells[str(index)] = cell
            self._is_dynamic_name.append(True)
            object.__setattr__(self, "cell_list", list(self._cells.values()))
            _name_by_path(self, prefix)
            return self

    return Sequential


@cache
def _helper_modules() -> dict[str, str]:
    """Helper function → its module in this package, read from each module's ``__all__`` without
    importing it (the modules import MindSpore at their top, as GRAPH_MODE compiles the helpers'
    bodies and allows no import statement there). A new helper module only declares ``__all__``."""
    out: dict[str, str] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                out.update(dict.fromkeys(ast.literal_eval(node.value), path.stem))
    return out


def __getattr__(name: str) -> Any:
    module = _helper_modules().get(name)
    if module is not None:  # functions of the helper modules, imported (with MindSpore) on first use
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
    # Classes that need MindSpore are built on first use, so importing this module stays cheap.
    builders = {
        "Sequential": _sequential_cell,
        "ModuleDict": _module_dict_cell,
        "MultiheadAttention": _multihead_attention,
        "Embedding": _embedding,
    }
    if name in builders:
        cls = builders[name]()
        globals()[name] = cls
        return cls
    if name in _DISTRIBUTION_NAMES:  # torch.distributions' classes (and constraints, kl_divergence)
        from . import distributions

        return getattr(distributions, name)
    if name in ("fuse_conv_bn_weights", "fuse_linear_bn_weights"):
        from . import nn_utils

        return getattr(nn_utils, name)
    if name in _NN_LAYER_NAMES:  # torch.nn layers MindSpore has no Cell for (runtime/nn_layers.py)
        from . import nn_layers

        return getattr(nn_layers, name)
    raise AttributeError(name)


def load_helpers() -> None:
    """Bind every helper function here now. GRAPH_MODE resolves ``torch2ms.runtime.<name>`` in the
    module's namespace without ``__getattr__``; converted code imports helpers by name instead."""
    for name in _helper_modules():
        __getattr__(name)


_NN_LAYER_NAMES = frozenset(
    "CircularPad1d CircularPad2d CircularPad3d CosineSimilarity Dropout2d Fold LayerNorm PairwiseDistance RMSNorm Unfold".split()
)
_DISTRIBUTION_NAMES = frozenset(
    "AbsTransform AffineTransform Bernoulli Beta Binomial CatTransform Categorical Cauchy Chi2 ComposeTransform "
    "ContinuousBernoulli CumulativeDistributionTransform Dirichlet Distribution ExpTransform Exponential "
    "ExponentialFamily FisherSnedecor Gamma Geometric Gumbel HalfCauchy HalfNormal Independent IndependentTransform "
    "InverseGamma Kumaraswamy Laplace LogNormal LogisticNormal LowRankMultivariateNormal LowerCholeskyTransform "
    "MixtureSameFamily Multinomial MultivariateNormal NegativeBinomial Normal OneHotCategorical "
    "OneHotCategoricalStraightThrough Pareto Poisson PositiveDefiniteTransform PowerTransform RelaxedBernoulli "
    "RelaxedOneHotCategorical ReshapeTransform SigmoidTransform SoftmaxTransform SoftplusTransform StackTransform "
    "StickBreakingTransform StudentT TanhTransform Transform TransformedDistribution Uniform VonMises Weibull "
    "constraints identity_transform kl_divergence register_kl biject_to transform_to broadcast_all clamp_probs "
    "logits_to_probs probs_to_logits".split()
)


def _module_dict_cell():
    import mindspore

    class ModuleDict(mindspore.nn.Cell):
        """A Cell with torch ModuleDict's interface: what ``nn.ModuleDict`` converts to.

        MindSpore's CellDict refuses CellList/SequentialCell/CellDict values (GPT's
        ``ModuleDict(dict(h=ModuleList(...)))``) and cannot be called inside a GRAPH_MODE network
        (a subclass with its own forward). Children are plain sub-cells: attribute access, ``[key]``
        and ``items()`` work in both modes and parameter names keep torch's key prefixes.
        """

        def __init__(self, modules: Any = None) -> None:
            super().__init__()
            for name, cell in (dict(modules) if modules is not None else {}).items():
                self.insert_child_to_cell(name, cell)

        def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
            object.__setattr__(self, "_torch2ms_prefix", prefix)
            super().update_parameters_name(prefix, recurse)

        def _add(self, key: str, cell: Any) -> None:
            """A child added after the parent named this dict: its parameters are named under the
            dict's own name (``blocks.b0.weight``), as the ones it was built with."""
            self.insert_child_to_cell(key, cell)
            prefix = self.__dict__.get("_torch2ms_prefix")
            if prefix is not None and self._auto_prefix and isinstance(cell, mindspore.nn.Cell):
                cell.update_parameters_name(f"{prefix}{key}.")

        def __getitem__(self, key: str) -> Any:
            return self._cells[key]

        def __setitem__(self, key: str, cell: Any) -> None:
            self._add(key, cell)

        def __len__(self) -> int:
            return len(self._cells)

        def __iter__(self):
            return iter(self._cells)

        def __contains__(self, key: str) -> bool:
            return key in self._cells

        def keys(self):
            return self._cells.keys()

        def values(self):
            return self._cells.values()

        def items(self):
            return self._cells.items()

        def update(self, modules: Any) -> None:
            for name, cell in dict(modules).items():
                self._add(name, cell)

        def pop(self, key: str) -> Any:
            cell = self._cells[key]
            del self._cells[key]
            return cell

    return ModuleDict


def _multihead_attention():
    import mindspore

    class MultiheadAttention(mindspore.nn.MultiheadAttention):
        """mindspore.nn.MultiheadAttention returning torch's (output, None) when need_weights=False, and taking
        query/key/value as keywords (``attn(q, k, value=v)``, DETR): MindSpore's ``__call__`` reads ``args[2]``."""

        def __call__(self, *args, **kwargs):
            args = list(args)
            for name in ("query", "key", "value")[len(args) :]:
                if name not in kwargs:
                    break
                args.append(kwargs.pop(name))
            return super().__call__(*args, **kwargs)

        def construct(
            self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True
        ):
            out = super().construct(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights)
            if need_weights:
                return out
            return out[0], None

    return MultiheadAttention


def _embedding():
    import mindspore
    from mindspore import ops

    class Embedding(mindspore.nn.Embedding):
        """mindspore.nn.Embedding whose padding row gets no gradient, as torch's ``padding_idx``.

        MindSpore only zero-initialises that row and then trains it like any other. Here the looked-up
        vectors of padding ids pass through ``stop_gradient``: the forward is unchanged (whatever the row
        holds), and training leaves the row as it is.
        """

        def construct(self, ids):
            out = super().construct(ids)
            if self.padding_idx is None:
                return out
            pad = ops.expand_dims(ids == self.padding_idx, -1)
            return ops.where(pad, ops.stop_gradient(out), out)

    return Embedding


# ---- families of helpers, one module each (re-exported here by name, imported on first use) ----
