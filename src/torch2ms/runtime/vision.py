"""Run-time helpers for converted torchvision code: models, ops, utils, transforms that need code.

MindSpore (and numpy, PIL) only, imported where used; nothing from torch2ms, so a converted project
can carry this file on its own.
"""

from __future__ import annotations

import enum
import functools
import importlib
import itertools
import os
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = [
    "ImageClassification",
    "InterpolationMode",
    "load_state_dict_from_url",
    "log_api_usage_once",
    "make_ntuple",
    "torch_assert",
    "tv_models",
    "tv_ops",
]

GENERATED_PACKAGE = "torchvision_ms"


class ConvertedTorchvision:
    """A module of ``torchvision_ms`` (torchvision's architectures converted by ``torch2ms convert``
    into the output tree), imported on first attribute access."""

    def __init__(self, module: str) -> None:
        self._module_name = module
        self._classes: dict[str, type] = {}

    def _module(self) -> Any:
        try:
            return importlib.import_module(f"{GENERATED_PACKAGE}.{self._module_name}")
        except ImportError as exc:
            raise ImportError(
                f"{GENERATED_PACKAGE} is not importable ({exc}): torch2ms convert writes it at the root of the "
                "converted project; run from there or put that folder on PYTHONPATH"
            ) from exc

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._module(), name)
        if isinstance(value, type):
            if name not in self._classes:
                self._classes[name] = _sized_subclass(value)
            return self._classes[name]
        if callable(value) and name[:1].islower():
            return _with_torch_sizes(value)
        return value

    def __repr__(self) -> str:
        return f"<converted torchvision.{self._module_name} ({GENERATED_PACKAGE}.{self._module_name})>"

    # ``torchvision.models.__dict__`` converts to this object: a read-only mapping of the converted module's
    # public names, each as attribute access gives it (``models.__dict__[name]()`` builds the converted model)
    def keys(self) -> list[str]:
        return [n for n in vars(self._module()) if not n.startswith("_")]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, name: object) -> bool:
        return name in self.keys()

    def __getitem__(self, name: str) -> Any:
        if name not in self.keys():
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self.keys() else default

    def items(self) -> list[tuple[str, Any]]:
        return [(n, getattr(self, n)) for n in self.keys()]

    def values(self) -> list[Any]:
        return [getattr(self, n) for n in self.keys()]

    def __dir__(self) -> list[str]:
        return self.keys()


def _add_torch_sizes(model: Any) -> Any:
    """What users do to a torchvision model's head works: Dense layers also answer torch's
    ``in_features`` / ``out_features`` (``nn.Linear(backbone.fc.in_features, n)``), and replacing a
    named child of a Sequential (``vit.heads.head = ...``) replaces it in the run order too."""
    import mindspore

    if isinstance(model, mindspore.nn.Cell):
        for _, cell in model.cells_and_names():
            if isinstance(cell, mindspore.nn.Dense):
                cell.in_features, cell.out_features = cell.in_channels, cell.out_channels
            if type(cell) is mindspore.nn.SequentialCell:
                cell.__class__ = _replaceable_sequential()
    return model


@functools.cache
def _replaceable_sequential() -> type:
    import mindspore

    class SequentialCell(mindspore.nn.SequentialCell):
        """MindSpore's SequentialCell runs ``cell_list``, which ``seq.name = cell`` leaves stale."""

        def __setattr__(self, name: str, value: Any) -> None:
            super().__setattr__(name, value)
            if isinstance(value, mindspore.nn.Cell) and "_cells" in self.__dict__:
                object.__setattr__(self, "cell_list", list(self._cells.values()))

    return SequentialCell


def _with_torch_sizes(builder: Any) -> Any:
    """A model builder (``resnet18``) whose models get torch's layer sizes (``_add_torch_sizes``)."""

    @functools.wraps(builder)
    def build(*args: Any, **kwargs: Any) -> Any:
        return _add_torch_sizes(builder(*args, **kwargs))

    return build


def _sized_subclass(cls: type) -> type:
    """A model class (``ResNet``) whose instances get torch's layer sizes; still subclassable."""
    import mindspore

    if not issubclass(cls, mindspore.nn.Cell):
        return cls
    base: Any = cls

    class Sized(base):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            _add_torch_sizes(self)

    Sized.__name__, Sized.__qualname__, Sized.__module__ = cls.__name__, cls.__qualname__, cls.__module__
    Sized.__doc__ = cls.__doc__
    return Sized


tv_models = ConvertedTorchvision("models")
tv_ops = ConvertedTorchvision("ops")


def log_api_usage_once(obj: Any) -> None:
    """torchvision's usage logging (``torch._C._log_api_usage_once``): nothing to log in MindSpore."""


def make_ntuple(x: Any, n: int) -> tuple[Any, ...]:
    """``x`` repeated ``n`` times unless it is already an iterable (torchvision.utils._make_ntuple)."""
    if isinstance(x, Iterable):
        return tuple(x)
    return tuple(itertools.repeat(x, n))


def torch_assert(condition: Any, message: str) -> None:
    """``torch._assert(condition, message)``: raise when the condition does not hold."""
    if not condition:
        raise AssertionError(message)


def hub_checkpoint_dir() -> str:
    """Where torch.hub keeps downloaded checkpoints: ``$TORCH_HOME/hub/checkpoints``."""
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")), "torch"
    )
    return os.path.join(home, "hub", "checkpoints")


def load_state_dict_from_url(
    url: str, model_dir: str | None = None, *args: Any, file_name: str | None = None, **kwargs: Any
) -> dict[str, Any]:
    """torch.hub's pretrained weights, as the MindSpore checkpoint ``torch2ms weights`` made of them.

    MindSpore cannot read torch's ``.pth``: convert the downloaded file once, next to it
    (``torch2ms weights ~/.cache/torch/hub/checkpoints/resnet18-f37072fd.pth -o
    ~/.cache/torch/hub/checkpoints/resnet18-f37072fd.ckpt``); this loads ``<name>.ckpt`` from there.
    """
    import mindspore

    folder = model_dir or hub_checkpoint_dir()
    name = file_name or os.path.basename(url.split("?", 1)[0])
    stem = name.rsplit(".", 1)[0]
    ckpt = os.path.join(folder, stem + ".ckpt")
    if not os.path.exists(ckpt):
        pth = os.path.join(folder, name)
        raise FileNotFoundError(
            f"pretrained weights {ckpt} not found. Download {url} to {pth} (torch does it on first use), then "
            f"convert it: torch2ms weights {pth} -o {ckpt}"
        )
    return mindspore.load_checkpoint(ckpt)


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes (same values), for the converted weights' presets."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class ImageClassification:
    """The preprocessing of torchvision's classification weights (``weights.transforms()``) on a PIL image:
    resize, center crop, to a CHW float32 array in [0, 1], normalize. Returns a numpy array."""

    def __init__(
        self,
        *,
        crop_size: int,
        resize_size: int = 256,
        mean: tuple[float, ...] = (0.485, 0.456, 0.406),
        std: tuple[float, ...] = (0.229, 0.224, 0.225),
        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
        antialias: bool | None = True,
    ) -> None:
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def __call__(self, img: Any) -> Any:
        from mindspore.dataset import vision

        inter = getattr(vision.Inter, self.interpolation.name, vision.Inter.BILINEAR)
        ops = [
            vision.Resize(self.resize_size, inter),
            vision.CenterCrop(self.crop_size),
            vision.ToTensor(),
            vision.Normalize(self.mean, self.std, is_hwc=False),
        ]
        for op in ops:
            img = op(img)
        return img
