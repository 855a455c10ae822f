"""Helpers for converted data pipelines (convert/constructs/data_pipeline.py writes their calls)."""

from __future__ import annotations

from typing import Any

__all__ = ["DictSource", "SampledSource", "Subset", "dataset_of", "dataset_source", "random_split", "sampled_dataset"]


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
    return sampled_dataset(dataset, column_names, shuffle, num_parallel_workers, sampler)


class SampledSource:
    """A map-style dataset read in a Python sampler's order, one index at a time, as torch's DataLoader
    does. MindSpore draws a whole epoch of a Python sampler's indices before the first batch
    (``Sampler.get_indices``): 1e6 samples took 1.5 s on CPU, and minGPT's
    ``RandomSampler(replacement=True, num_samples=int(1e10))`` grows memory without bound."""

    def __init__(self, dataset: Any, sampler: Any) -> None:
        self.dataset, self.sampler = dataset, sampler

    def __iter__(self) -> Any:
        for index in self.sampler:
            yield self.dataset[index]

    def __len__(self) -> int:
        return len(self.sampler)


def sampled_dataset(
    dataset: Any,
    column_names: list[str],
    shuffle: Any = None,
    num_parallel_workers: int | None = None,
    sampler: Any = None,
) -> Any:
    """``DataLoader(dataset, sampler=...)``: a GeneratorDataset that draws a Python sampler's indices lazily
    (SampledSource); no sampler, or one of MindSpore's own (drawn in C++), goes to GeneratorDataset as is."""
    import mindspore.dataset as ds

    workers = {"num_parallel_workers": num_parallel_workers} if num_parallel_workers else {}
    if sampler is None or isinstance(sampler, ds.BuiltinSampler) or not hasattr(sampler, "__iter__"):
        return ds.GeneratorDataset(dataset, column_names=column_names, shuffle=shuffle, sampler=sampler, **workers)
    return ds.GeneratorDataset(SampledSource(dataset, sampler), column_names=column_names, **workers)


class Subset:
    """torch's ``Subset``: the samples of ``dataset`` at ``indices``, read lazily (a GeneratorDataset source)."""

    def __init__(self, dataset: Any, indices: Any) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return [self.dataset[self.indices[int(i)]] for i in index]
        return self.dataset[self.indices[int(index)]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Any, lengths: Any, generator: Any = None) -> list[Subset]:
    """torch's ``random_split``: lengths (or fractions, the remainder dealt round-robin as torch does) of a
    random permutation. The permutation is numpy's (the generator's stream: torch2ms.runtime.Generator,
    else numpy's global one), not torch's: the parts hold other samples than torch's parts."""
    import math

    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    from . import generators  # looked up at the call: compare-train serves torch's permutation through it

    perm = generators.permutation(n, generator if hasattr(generator, "_rng") else None)
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, perm[start : start + size]))
        start += size
    return out
