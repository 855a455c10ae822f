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
from .data_pipeline import (
    DECODE,
    TO_PIL,
    _binary_dataset,
    _dataset_pipeline,
    _flag,
    _no_download,
    _operations,
    _usage,
    _workers,
    fetched_root,
    root_folder,
    with_arrays,
)

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
    _root(bound, "CIFAR100")
    root = fetched_root(bound, "CIFAR100")
    ctor = f"mindspore.dataset.Cifar100Dataset({root_folder(root, '/cifar-100-binary')}, usage={_usage(bound)})"
    pipe = _dataset_pipeline(ctor, bound, TO_PIL)
    at = pipe.index(").map(operations=") + 1
    # torchvision returns (image, fine label): MindSpore has image, coarse_label and fine_label columns
    return with_arrays(
        bound, pipe[:at] + ".project(['image', 'fine_label']).rename(['fine_label'], ['label'])" + pipe[at:]
    )


@handler
def svhn(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """SVHN(root, split) → SVHNDataset(root, usage): the same .mat files, digit 0 labelled 0 on both sides."""
    usage = _split(bound, "train", _SVHN_SPLITS)
    _root(bound, "SVHN")
    root = fetched_root(bound, "SVHN/" + usage.strip("'"))
    ctor = f"mindspore.dataset.SVHNDataset({root_folder(root)}, usage={usage})"
    return _dataset_pipeline(ctor, bound, TO_PIL)


@handler
def flowers102(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """Flowers102(root, split) → Flowers102Dataset(root + '/flowers-102', usage, decode=False) + Decode(to_pil=True)."""
    _root(bound, "Flowers102")
    root = fetched_root(bound, "Flowers102")
    ctor = (
        f"mindspore.dataset.Flowers102Dataset({root_folder(root, '/flowers-102')}, task='Classification', "
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


def _voc_base(bound: dict[str, str], name: str) -> str:
    """torchvision's VOC folder for a literal year: <root>/VOCdevkit/VOC<year> (2011 under TrainVal/)."""
    year = literal(bound.get("year", "'2012'"))
    if not isinstance(year, str) or year[:4] not in {str(y) for y in range(2007, 2013)}:
        text = _("year={year}: {name}'s folder is chosen from a literal year ('2007'…'2012')")
        raise Unsupported(text.format(year=bound.get("year"), name=name))
    sub = ("/TrainVal" if year == "2011" else "") + f"/VOCdevkit/VOC{year[:4]}"
    return root_folder(_root(bound, name), sub)


def _pair_pipeline(ctor: str, bound: dict[str, str], target_ops: str | None) -> str:
    """A reader of (image, target) columns: the loader's shuffle/workers, the image decoded to PIL (RGB, as
    torchvision converts it) before ``transform``, ``target_ops`` (with ``target_transform`` spliced) on 'target'."""
    if bound.get("transforms") not in (None, "None"):
        raise Unsupported(
            _("transforms=... (one callable on image and target) has no map form: pass transform/target_transform")
        )
    opts = [f"shuffle={_flag(bound.get('__shuffle__'))}"]
    workers = _workers(bound.get("__workers__"))
    if workers:
        opts.append(f"num_parallel_workers={workers}")
    pipe = f"{ctor[:-1]}, {', '.join(opts)})"
    pipe += f".map(operations={_operations(DECODE, bound.get('transform'))}, input_columns='image')"
    if target_ops is not None:
        pipe += f".map(operations={_operations(target_ops, bound.get('target_transform'))}, input_columns='target')"
    return pipe


def _source(cls: str, args: list[str], bound: dict[str, str]) -> str:
    """A GeneratorDataset over a torch2ms.runtime source that applies target_transform on the plain target."""
    target = bound.get("target_transform")
    args = [*args, target if target is not None and literal(target) is not None else "None"]
    return f"mindspore.dataset.GeneratorDataset(torch2ms.runtime.{cls}({', '.join(args)}), column_names=['image', 'target'])"


@handler
def voc_segmentation(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """VOCSegmentation(root, year, image_set) → VOCDataset(<VOC folder>, task='Segmentation', decode=False).

    The image is decoded to RGB PIL and the mask opened as it is stored (mode 'P': class indices), as
    torchvision does."""
    _no_download(bound, "VOCDataset")
    usage = bound.get("image_set", "'train'")
    ctor = f"mindspore.dataset.VOCDataset({_voc_base(bound, 'VOCSegmentation')}, task='Segmentation', usage={usage}, decode=False)"
    return _pair_pipeline(ctor, bound, "torch2ms.runtime.open_image")


@handler
def voc_detection(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """VOCDetection(root, year, image_set) → GeneratorDataset over torch2ms.runtime.VOCDetection (the XML as a dict)."""
    _no_download(bound, "VOCDataset")
    _voc_base(bound, "VOCDetection")  # the same literal-year check
    args = [_root(bound, "VOCDetection"), bound.get("year", "'2012'"), bound.get("image_set", "'train'")]
    return _pair_pipeline(_source("VOCDetection", args, bound), bound, None)


@handler
def coco_detection(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """CocoDetection(root, annFile, target_transform) → GeneratorDataset over torch2ms.runtime.CocoDetection.

    Only with a target_transform: a MindSpore column cannot hold the raw target, a list of dicts.
    """
    if bound.get("target_transform") in (None, "None"):
        raise Unsupported(
            _(
                "CocoDetection's target (a list of annotation dicts) cannot be a MindSpore column: pass a "
                "target_transform that returns arrays, or read mindspore.dataset.CocoDataset(task='Detection') columns"
            )
        )
    args = [_root(bound, "CocoDetection"), bound.get("annFile") or _missing("annFile")]
    return _pair_pipeline(_source("CocoDetection", args, bound), bound, None)


@handler
def coco_captions(bound: dict[str, str], receiver: str | None, entry: Entry) -> str:
    """CocoCaptions(root, annFile) → GeneratorDataset over torch2ms.runtime.CocoCaptions (a list of captions)."""
    args = [_root(bound, "CocoCaptions"), bound.get("annFile") or _missing("annFile")]
    return _pair_pipeline(_source("CocoCaptions", args, bound), bound, None)


def _missing(arg: str) -> str:
    raise Unsupported(_("{arg} is required").format(arg=arg))
