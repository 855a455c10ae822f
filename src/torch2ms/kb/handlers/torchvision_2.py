"""Handlers for torchvision datasets beyond MNIST/CIFAR10/ImageFolder (kb/data/torchvision_datasets.toml).

They build the same pipelines as ``data_pipeline`` (reader, the decode step first, the transform mapped
on 'image' before batching, int32 labels, shuffle written): MindSpore reads the files torchvision
downloads, from the folder torchvision keeps them in.
"""

from __future__ import annotations

from ...i18n import _
from ..schema import Entry
from ..source import literal
from ..transforms import Unsupported, handler
from .data_pipeline import DECODE, TO_PIL, _binary_dataset, _dataset_pipeline, _no_download, _usage

# torchvision's split → MindSpore's usage, per dataset ('val' is 'valid')
_SVHN_SPLITS = {"train": "'train'", "test": "'test'", "extra": "'extra'"}
_FLOWERS_SPLITS = {"train": "'train'", "test": "'test'", "val": "'valid'"}


@handler
def fashion_mnist(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """FashionMNIST(root, train) → FashionMnistDataset(root + '/FashionMNIST/raw', usage) + ToPIL first + int32 labels."""
    return _binary_dataset(bound, "FashionMNIST", "FashionMnistDataset", "/FashionMNIST/raw")


@handler
def kmnist(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """KMNIST(root, train) → KMnistDataset(root + '/KMNIST/raw', usage) + ToPIL first + int32 labels."""
    return _binary_dataset(bound, "KMNIST", "KMnistDataset", "/KMNIST/raw")


def _root(bound: dict[str, str], name: str) -> str:
    root = bound.get("root")
    if root is None:
        raise Unsupported(_("{name}() needs a root").format(name=name))
    return root


def _split(bound: dict[str, str], default: str, splits: dict[str, str]) -> str:
    """torchvision's split string → MindSpore's usage: only literals, as the reader checks it when built."""
    split = bound.get("split", repr(default))
    value = literal(split)
    if isinstance(value, str) and value in splits:
        return splits[value]
    text = _("split={split}: MindSpore's usage takes {values} as literals")
    raise Unsupported(text.format(split=split, values=", ".join(map(repr, splits))))


@handler
def cifar100(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """CIFAR100(root, train) → Cifar100Dataset(root + '/cifar-100-binary', usage), its fine labels as 'label'."""
    _no_download(bound, "Cifar100Dataset")
    ctor = f"mindspore.dataset.Cifar100Dataset(str({_root(bound, 'CIFAR100')}) + '/cifar-100-binary', usage={_usage(bound)})"
    pipe = _dataset_pipeline(ctor, bound, TO_PIL)
    at = pipe.index(").map(operations=") + 1
    # torchvision returns (image, fine label): MindSpore has image, coarse_label and fine_label columns
    return pipe[:at] + ".project(['image', 'fine_label']).rename(['fine_label'], ['label'])" + pipe[at:]


@handler
def svhn(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """SVHN(root, split) → SVHNDataset(root, usage): the same .mat files, digit 0 labelled 0 on both sides."""
    _no_download(bound, "SVHNDataset")
    ctor = f"mindspore.dataset.SVHNDataset(str({_root(bound, 'SVHN')}), usage={_split(bound, 'train', _SVHN_SPLITS)})"
    return _dataset_pipeline(ctor, bound, TO_PIL)


@handler
def flowers102(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Flowers102(root, split) → Flowers102Dataset(root + '/flowers-102', usage, decode=False) + Decode(to_pil=True)."""
    _no_download(bound, "Flowers102Dataset")
    root = _root(bound, "Flowers102")
    ctor = (
        f"mindspore.dataset.Flowers102Dataset(str({root}) + '/flowers-102', task='Classification', "
        f"usage={_split(bound, 'train', _FLOWERS_SPLITS)}, decode=False)"
    )
    return _dataset_pipeline(ctor, bound, DECODE)


@handler
def fake_data(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """FakeData(size, image_size, num_classes) → GeneratorDataset over torch2ms.runtime.FakeData."""
    args = [bound.get(k, d) for k, d in (("size", "1000"), ("image_size", "(3, 224, 224)"), ("num_classes", "10"))]
    args.append(bound.get("random_offset", "0"))
    source = f"torch2ms.runtime.FakeData({', '.join(args)})"
    ctor = f"mindspore.dataset.GeneratorDataset({source}, column_names=['image', 'label'])"
    return _dataset_pipeline(ctor, bound, TO_PIL)
