"""Helpers for converted data pipelines (convert/constructs/data_pipeline.py writes their calls)."""

from __future__ import annotations

from typing import Any

__all__ = ["DictSource", "dataset_of", "dataset_source"]


def _numpy(value: Any) -> Any:
    """A column value as GeneratorDataset takes it: numpy (a MindSpore Tensor's asnumpy(), a number's array)."""
    import numpy as np

    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    return np.asarray(value)


class DictSource:
    """A dataset whose samples are dicts (``{'image': ..., 'mask': ...}``) as a GeneratorDataset source:
    one numpy column per key, in ``columns`` order; batches come back as dicts from
    ``create_dict_iterator()``, keyed like torch's collated batches."""

    def __init__(self, source: Any, columns: list[str]) -> None:
        self.source, self.columns = source, list(columns)

    def __getitem__(self, index: Any) -> tuple:
        sample = self.source[int(index)]
        return tuple(_numpy(sample[c]) for c in self.columns)

    def __len__(self) -> int:
        return len(self.source)


def dataset_of(loader: Any) -> Any:
    """torch's ``loader.dataset`` for a converted loader: the user's dataset object a GeneratorDataset
    reads, else MindSpore's source dataset (before ``.map``/``.batch``). ``len()`` of it counts samples,
    as torch's ``len(loader.dataset)`` does (``len(loader)`` counts batches on both sides)."""
    if not hasattr(loader, "children"):
        return loader.dataset  # not a MindSpore dataset: whatever it calls its dataset
    node = loader
    while getattr(node, "children", None):
        node = node.children[0]
    source = getattr(node, "source", None)
    if isinstance(source, DictSource):
        source = source.source
    return source if source is not None and hasattr(source, "__len__") else node


def dataset_source(
    dataset: Any,
    column_names: list[str],
    shuffle: Any = False,
    num_parallel_workers: int | None = None,
    sampler: Any = None,
    shuffled: bool = False,
) -> Any:
    """What a DataLoader reads when its dataset is a MindSpore dataset in some branches of the script and a
    Python (map-style) dataset in others: the MindSpore one as it is (shuffled unless its constructor did
    it already), the Python one through a GeneratorDataset, as the converter writes for each alone."""
    import mindspore.dataset as ds

    if isinstance(dataset, ds.Dataset):
        if shuffle and not shuffled:
            return dataset.shuffle(dataset.get_dataset_size())
        return dataset
    workers = {"num_parallel_workers": num_parallel_workers} if num_parallel_workers else {}
    return ds.GeneratorDataset(dataset, column_names=column_names, shuffle=shuffle, sampler=sampler, **workers)
