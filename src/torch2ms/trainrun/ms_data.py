"""MindSpore data for ``compare-train``: torch's recorded batches replayed through the dataset
iterators, and ``--fake-data`` stand-ins for MindSpore's file datasets (MNIST, CIFAR, ImageFolder)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import mindspore as ms
import numpy as np

from . import fake_data
from .common import Recorder, array_stats, set_stream_state


class Replay:
    """torch's k-th DataLoader iterator ↔ the k-th MindSpore dataset iterator, batch for batch."""

    def __init__(self, torch_dir: Path, meta: dict[str, Any], rec: Recorder) -> None:
        self.file = np.load(torch_dir / "batches.npz") if meta.get("batches") else None
        self.counts: list[int] = meta.get("iterators", [])
        self.leaves: list[int] = meta.get("leaves", [])
        self.created = 0
        self.busy = False
        self.rec = rec
        rec.replay = {"torch_iterators": len(self.counts), "ms_iterators": 0, "batches": 0, "note": meta.get("note")}

    def next_iterator(self, dataset: Any, output_numpy: bool, dict_columns: bool) -> Any | None:
        if self.busy:  # output_types() below iterates the pipeline itself
            return None
        k = self.created
        self.created += 1
        self.rec.replay["ms_iterators"] = self.created
        if self.file is None or k >= len(self.counts):
            return None
        self.busy = True
        try:
            dtypes = _dataset_dtypes(dataset)
            columns = _columns(dataset) if dict_columns else None
        finally:
            self.busy = False
        return ReplayIterator(self, k, dtypes, output_numpy, columns)

    def batch(self, k: int, b: int) -> list[np.ndarray]:
        assert self.file is not None
        self.rec.replay["batches"] += 1
        if f"i{k}_b{b}_streams" in self.file.files:
            set_stream_state(self.file[f"i{k}_b{b}_streams"])
        return [self.file[f"i{k}_b{b}_l{i}"] for i in range(self.leaves[k])]


def _dataset_dtypes(dataset: Any) -> list[Any] | None:
    try:
        return [np.dtype(ms.dtype_to_nptype(t)) if not isinstance(t, np.dtype) else t for t in dataset.output_types()]
    except Exception:  # noqa: BLE001 - a pipeline that cannot run here: fall back to the default casts
        return None


def _columns(dataset: Any) -> list[str] | None:
    try:
        return list(dataset.get_col_names())
    except Exception:  # noqa: BLE001
        return None


def _cast(a: np.ndarray, want: Any) -> np.ndarray:
    """torch's dtype → what the MindSpore pipeline yields (its labels are int32, say); no pipeline: the
    MindSpore defaults (int64 → int32, float64 → float32)."""
    if want is not None and np.dtype(want).kind == a.dtype.kind:
        return a.astype(want)
    if want is None and a.dtype == np.int64:
        return a.astype(np.int32)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    return a


class ReplayIterator:
    def __init__(self, replay: Replay, k: int, dtypes: list[Any] | None, output_numpy: bool, columns: Any) -> None:
        self.replay, self.k, self.b = replay, k, 0
        self.dtypes, self.output_numpy, self.columns = dtypes, output_numpy, columns

    def __iter__(self) -> ReplayIterator:
        return self

    def __next__(self) -> Any:
        if self.b >= self.replay.counts[self.k]:
            raise StopIteration
        arrays = self.replay.batch(self.k, self.b)
        self.b += 1
        want = self.dtypes if self.dtypes and len(self.dtypes) == len(arrays) else [None] * len(arrays)
        items = [_cast(a, w) for a, w in zip(arrays, want)]
        self.replay.rec.batch_stats = array_stats(items[0], items[1:]) if items else None
        out = items if self.output_numpy else [ms.Tensor(a) for a in items]
        if self.columns and len(self.columns) == len(out):
            return dict(zip(self.columns, out))
        return out

    def get_next(self) -> Any:
        return self.__next__()

    def stop(self) -> None:
        pass


MS_ROOT = str(Path(ms.__file__).parent)


def _called_by_mindspore() -> bool:
    """An iterator MindSpore makes for itself (GeneratorDataset checks a dataset source with iter())."""
    frame = sys._getframe(2)  # whoever called create_*_iterator
    if frame.f_code.co_name == "__iter__" and frame.f_back is not None:
        frame = frame.f_back
    return frame.f_code.co_filename.startswith(MS_ROOT)


class Watched:
    """The script's own dataset iterator (--own-data, or more passes than torch made): each batch's
    first column is summarised for the per-step batch comparison."""

    def __init__(self, it: Any, rec: Recorder) -> None:
        self.it, self.rec = it, rec

    def __iter__(self) -> Watched:
        return self

    def __next__(self) -> Any:
        item = next(self.it)
        columns = list(item.values()) if isinstance(item, dict) else list(item or [])
        arrays = [c.asnumpy() if hasattr(c, "asnumpy") else np.asarray(c) for c in columns]
        if arrays:
            self.rec.batch_stats = array_stats(arrays[0], arrays[1:])
        return item

    def __getattr__(self, name: str) -> Any:
        return getattr(self.it, name)


def patch_iterators(replay: Replay | None, rec: Recorder) -> None:
    from mindspore.dataset.engine.datasets import Dataset

    tuple_it, dict_it = Dataset.create_tuple_iterator, Dataset.create_dict_iterator

    def create_tuple_iterator(
        self: Any, columns: Any = None, num_epochs: int = -1, output_numpy: bool = False, **kw: Any
    ) -> Any:
        if _called_by_mindspore():
            return tuple_it(self, columns, num_epochs, output_numpy, **kw)
        it = replay.next_iterator(self, output_numpy, dict_columns=False) if replay else None
        return it if it is not None else Watched(tuple_it(self, columns, num_epochs, output_numpy, **kw), rec)

    def create_dict_iterator(self: Any, num_epochs: int = -1, output_numpy: bool = False, **kw: Any) -> Any:
        if _called_by_mindspore():
            return dict_it(self, num_epochs, output_numpy, **kw)
        it = replay.next_iterator(self, output_numpy, dict_columns=True) if replay else None
        return it if it is not None else Watched(dict_it(self, num_epochs, output_numpy, **kw), rec)

    Dataset.create_tuple_iterator = create_tuple_iterator  # type: ignore[method-assign]
    Dataset.create_dict_iterator = create_dict_iterator  # type: ignore[method-assign]


# -- --fake-data ---------------------------------------------------------------------------------------
MS_DATASETS = {
    "MnistDataset": "MNIST",
    "FashionMnistDataset": "FashionMNIST",
    "KMnistDataset": "KMNIST",
    "EMnistDataset": "EMNIST",
    "Cifar10Dataset": "CIFAR10",
    "Cifar100Dataset": "CIFAR100",
    "SVHNDataset": "SVHN",
    "ImageFolderDataset": "ImageFolder",
}


class FakeSource:
    """Random-access source for GeneratorDataset with the real dataset's columns and dtypes."""

    def __init__(self, name: str, train: bool, seed: int) -> None:
        spec = fake_data.SPECS[name]
        n = fake_data.TRAIN_SIZE if train else fake_data.TEST_SIZE
        self.images, self.labels = fake_data.fake_arrays(spec, n, fake_data.split_seed(name, train, seed))
        self.name = name

    def __len__(self) -> int:
        return len(self.labels)

    def arrays(self) -> tuple[Any, Any]:
        """The whole set as torchvision holds it: MNIST family (N, H, W) uint8 and int64 Tensors, CIFAR an
        (N, H, W, C) uint8 array and a list of ints."""
        if self.images.shape[-1] == 1:
            return ms.Tensor(self.images[..., 0]), ms.Tensor(self.labels.astype(np.int64))
        return self.images, [int(v) for v in self.labels]

    def __getitem__(self, i: int) -> tuple[np.ndarray, ...]:
        image, label = self.images[i], self.labels[i]
        if self.name == "ImageFolder":  # ImageFolderDataset yields the encoded file; Decode comes after
            from PIL import Image

            buf = io.BytesIO()
            Image.fromarray(image).save(buf, format="PNG")
            return np.frombuffer(buf.getvalue(), np.uint8).copy(), np.array(label, np.int32)
        if self.name == "CIFAR100":
            return image, np.array(label, np.uint32), np.array(label, np.uint32)
        return image, np.array(label, np.uint32)


def patch_fake_datasets(rec: Recorder, seed: int) -> None:
    import mindspore.dataset as ds

    used = rec.randomness.setdefault("fake_data", [])
    for ms_name, name in MS_DATASETS.items():
        real = getattr(ds, ms_name, None)
        if real is not None:
            setattr(ds, ms_name, _fake_factory(ds, real, name, used, seed))


def _fake_factory(ds: Any, real: Any, name: str, used: list[str], seed: int) -> Any:
    def build(dataset_dir: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if name == "ImageFolder" and dataset_dir and os.path.isdir(dataset_dir):
            return real(dataset_dir, *args, **kwargs)
        usage = kwargs.get("usage") or "train"
        source = FakeSource(name, usage in ("train", "all"), seed)
        columns = ["image", "coarse_label", "fine_label"] if name == "CIFAR100" else ["image", "label"]
        used.append(f"{name}({usage}, {len(source)} images)")
        shuffle = kwargs.get("shuffle")
        gen = ds.GeneratorDataset(source, column_names=columns, shuffle=True if shuffle is None else shuffle)
        gen.__dict__["_torch2ms_arrays"] = source.arrays()  # what with_torchvision_arrays serves as .data/.targets
        return gen

    return build
