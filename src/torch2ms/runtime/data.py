"""Helpers for converted data pipelines (convert/constructs/data_pipeline.py writes their calls)."""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = [
    "DictSource",
    "RandomSampler",
    "SampledSource",
    "Subset",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "dataset_of",
    "dataset_source",
    "random_split",
    "sampled_dataset",
    "sampled_pipeline",
]


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
        if sampler is not None:
            return sampled_pipeline(dataset, sampler, shuffle if shuffle else None, shuffled)
        if shuffle and not shuffled:
            return dataset.shuffle(dataset.get_dataset_size())
        return dataset
    return sampled_dataset(dataset, column_names, shuffle, num_parallel_workers, sampler)


class SampledSource:
    """A map-style dataset read in a Python sampler's order, one index at a time, as torch's DataLoader
    does. MindSpore draws a whole epoch of a Python sampler's indices before the first batch
    (``Sampler.get_indices``): 1e6 samples took 1.5 s on CPU, and minGPT's
    ``RandomSampler(replacement=True, num_samples=int(1e10))`` grows memory without bound."""

    def __init__(self, dataset: Any, sampler: Any, tree: int | None = None) -> None:
        self.dataset, self.sampler, self.tree, self.epochs, self.trees = dataset, sampler, tree, 0, 0

    def view(self) -> SampledSource:
        """This source as one pipeline reads it (a RandomSampler's epochs keyed by pipeline and epoch)."""
        self.trees += 1
        return SampledSource(self.dataset, self.sampler, self.trees)

    def __iter__(self) -> Any:
        indices = self.sampler
        if self.tree is not None and isinstance(self.sampler, RandomSampler):
            indices, self.epochs = self.sampler.epoch((self.tree, self.epochs)), self.epochs + 1
        for index in indices:
            yield self.dataset[index]

    def __len__(self) -> int:
        return len(self.sampler)


@cache
def _keyed_generator_dataset() -> Any:
    """GeneratorDataset whose pipelines each read their own view of a SampledSource (built on the main
    thread, where the pipeline is). MindSpore's pipeline threads start an iterator's next epoch ahead (a
    ``for`` over a new ``create_tuple_iterator()`` each epoch leaves the last one prefetching): a sampler
    drawing from one stream then gives an order that depends on thread timing. A RandomSampler's epoch is
    instead keyed by (pipeline, epoch), so a seeded script gets the same order on every run."""
    import mindspore.dataset as ds

    class KeyedGeneratorDataset(ds.GeneratorDataset):
        def parse(self, children: Any = None) -> Any:
            base = getattr(self, "t2ms_base", None) or getattr(self, "source")  # noqa: B009 - untyped in MindSpore
            self.t2ms_base, self.source = base, base.view()
            return super().parse(children)

    return KeyedGeneratorDataset


def sampled_dataset(
    dataset: Any,
    column_names: list[str],
    shuffle: Any = None,
    num_parallel_workers: int | None = None,
    sampler: Any = None,
    generator: Any = None,
) -> Any:
    """``DataLoader(dataset, sampler=...)``: a GeneratorDataset that draws a Python sampler's indices lazily
    (SampledSource); no sampler, or one of MindSpore's own (drawn in C++), goes to GeneratorDataset as is.
    ``shuffle`` with ``generator=`` (a converted torch.Generator) shuffles as torch's DataLoader does then:
    a RandomSampler drawing from that generator, the same order on every run of a seeded script."""
    import mindspore.dataset as ds

    if generator is not None and shuffle and sampler is None:
        sampler, shuffle = RandomSampler(dataset, generator=generator), None

    if isinstance(dataset, ds.Dataset):  # a MindSpore dataset reached through a name the converter could not follow
        return sampled_pipeline(dataset, sampler, shuffle if shuffle else None)
    workers = {"num_parallel_workers": num_parallel_workers} if num_parallel_workers else {}
    if sampler is None or isinstance(sampler, ds.BuiltinSampler) or not hasattr(sampler, "__iter__"):
        return ds.GeneratorDataset(dataset, column_names=column_names, shuffle=shuffle, sampler=sampler, **workers)
    if isinstance(sampler, RandomSampler):
        return _keyed_generator_dataset()(SampledSource(dataset, sampler), column_names=column_names, **workers)
    return ds.GeneratorDataset(SampledSource(dataset, sampler), column_names=column_names, **workers)


def _rng(generator: Any) -> Any:
    """The generator's numpy stream (torch2ms.runtime.Generator; a numpy Generator or RandomState as it is),
    else numpy's global one."""
    import numpy as np

    if isinstance(generator, np.random.Generator | np.random.RandomState):
        return generator
    return getattr(generator, "_rng", None) or np.random


class RandomSampler:
    """torch's ``RandomSampler`` (and what ``DataLoader(shuffle=True, generator=g)`` shuffles with): each epoch
    a new permutation of the indices (or ``num_samples`` of them, drawn with replacement when asked), drawn
    from a seed taken from the generator's numpy stream when the sampler is made (torch2ms.runtime.Generator,
    a numpy Generator or RandomState; else numpy's global one) and the epoch's number. A seeded generator
    gives the same order on every run, as in torch; the order is numpy's, not torch's (``compare-train``
    replays torch's batches)."""

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: Any = None, generator: Any = None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator, self.epochs = generator, 0
        self.seed = int(_integers(_rng(generator), 2**31 - 1, 1)[0])  # drawn here, on the script's thread

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Any:
        self.epochs += 1
        return self.epoch((0, self.epochs - 1))

    def epoch(self, key: tuple[int, int]) -> Any:
        """The indices of one epoch, drawn from the sampler's seed and ``key`` alone (not from a stream
        that MindSpore's pipeline threads may advance in another order)."""
        import numpy as np

        n = len(self.data_source)
        rng = np.random.RandomState(np.random.SeedSequence([self.seed, *key]).generate_state(1)[0])
        if self.replacement:
            yield from (int(i) for i in _integers(rng, n, self.num_samples))
            return
        for _ in range(self.num_samples // n):
            yield from (int(i) for i in rng.permutation(n))
        yield from (int(i) for i in rng.permutation(n)[: self.num_samples % n])

    def __len__(self) -> int:
        return self.num_samples


def _integers(rng: Any, n: int, size: int) -> Any:
    """``size`` indices below ``n`` from a numpy Generator (``integers``) or RandomState/np.random (``randint``)."""
    return rng.integers(0, n, size) if hasattr(rng, "integers") else rng.randint(0, n, size)


class SubsetRandomSampler:
    """torch's ``SubsetRandomSampler``: the given indices in a new random order each epoch, drawn lazily.
    The order is numpy's (the generator's stream, else numpy's global one), not torch's: the same
    indices, each once per epoch, in another order."""

    def __init__(self, indices: Any, generator: Any = None) -> None:
        self.indices, self.generator = [int(i) for i in _numpy(indices).reshape(-1)], generator

    def __iter__(self) -> Any:
        for i in _rng(self.generator).permutation(len(self.indices)):
            yield self.indices[int(i)]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler:
    """torch's ``WeightedRandomSampler``: ``num_samples`` indices drawn with probability ∝ ``weights``
    (with or without replacement), drawn each epoch with numpy (the generator's stream, else numpy's
    global one): torch's distribution, not torch's draws."""

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True, generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = _numpy(weights).astype("float64")
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {weights.shape}")
        self.weights, self.num_samples, self.replacement, self.generator = weights, num_samples, replacement, generator

    def __iter__(self) -> Any:
        p = self.weights / self.weights.sum()
        drawn = _rng(self.generator).choice(len(p), self.num_samples, replace=self.replacement, p=p)
        yield from (int(i) for i in drawn)

    def __len__(self) -> int:
        return self.num_samples


def _leaf(dataset: Any) -> Any:
    node = dataset
    while getattr(node, "children", None):
        node = node.children[0]
    return node


def _set_sampler(leaf: Any, sampler: Any) -> None:
    """Give a MindSpore source dataset another sampler (its own, or a Python one read per epoch)."""
    import mindspore.dataset as ds

    if not isinstance(sampler, ds.BuiltinSampler):
        _sized_sources(sampler, ds.Dataset)
        sampler = _python_sampler()(sampler)
    if leaf.sampler is None:
        leaf.sampler = sampler
        leaf.dataset_size = None
    else:
        leaf.use_sampler(sampler)


def _sized_sources(sampler: Any, dataset_type: Any) -> None:
    """A torch-style sampler that keeps the MindSpore dataset it samples (``RandomSampler(ds)`` reads
    ``len(data_source)`` when iterated) gets ``range(len(ds))`` there instead: MindSpore asks the sampler for
    its indices while it builds the pipeline, and sizing a dataset then fails ("Mixing old legacy c/py_transforms
    and new unified transforms is not allowed"). The sampler's own attribute changes; indices are the same."""
    for name, value in list(vars(sampler).items()) if hasattr(sampler, "__dict__") else []:
        if isinstance(value, dataset_type):
            setattr(sampler, name, range(value.get_dataset_size()))


@cache
def _python_sampler() -> Any:
    """mindspore.dataset.Sampler over a Python sampler (torch-style: iterable, maybe sized), built on first
    use; MindSpore asks it for a new epoch of indices at each epoch (DistributedSampler.set_epoch holds)."""
    import mindspore.dataset as ds

    class PythonSampler(ds.Sampler):
        def __init__(self, source: Any) -> None:
            super().__init__()
            self.source = source

        def __iter__(self) -> Any:
            return (int(i) for i in self.source)

    return PythonSampler


def sampled_pipeline(
    dataset: Any,
    sampler: Any = None,
    shuffle: Any = None,
    shuffled: bool = False,
    batch_sampler: Any = None,
) -> Any:
    """``DataLoader(ds, sampler=..., shuffle=...)`` or ``batch_sampler=`` where ``ds`` is a MindSpore dataset
    (a converted torchvision dataset): the sampler becomes its source's sampler (MindSpore reads a mappable
    source by index, as torch does), decided at run time as torch decides (``sampler=None`` and
    ``shuffle=(sampler is None)`` read the values). Shuffling a mappable source draws a random index order
    (a RandomSampler), not a shuffle buffer of the whole set. A ``BatchSampler`` gives its sampler, and its
    ``batch_size``/``drop_last`` to ``.batch()``. The source dataset is changed in place."""
    import mindspore.dataset as ds

    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    leaf = _leaf(dataset)
    if batch_sampler is not None:
        size, drop = getattr(batch_sampler, "batch_size", None), getattr(batch_sampler, "drop_last", False)
        if size is None or not hasattr(batch_sampler, "sampler"):
            raise TypeError(
                "batch_sampler= on a MindSpore dataset: only a BatchSampler(sampler, batch_size, drop_last)"
            )
        _set_sampler(leaf, batch_sampler.sampler)
        return dataset.batch(size, drop_remainder=bool(drop))
    if sampler is not None:
        _set_sampler(leaf, sampler)
    elif shuffle and not shuffled:
        if isinstance(leaf, ds.MappableDataset):
            _set_sampler(leaf, ds.RandomSampler())
        else:
            return dataset.shuffle(dataset.get_dataset_size())
    return dataset


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
