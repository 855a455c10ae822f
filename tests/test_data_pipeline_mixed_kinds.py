"""R14 (found by compare-train on pytorch/examples dcgan): a dataset name assigned a MindSpore dataset in
some branches (ImageFolder → ImageFolderDataset) and a Python one in others (LSUN, which MindSpore has
no reader for, stays torchvision's) is batched through ``dataset_source``, which decides
at run time; a name assigned only kept torchvision datasets goes through GeneratorDataset."""

from __future__ import annotations

import textwrap

import numpy as np

from torch2ms.convert import convert_source

SRC = textwrap.dedent(
    """
    import torch
    import torchvision.datasets as dset
    import torchvision.transforms as T

    def loader(kind, root):
        if kind == 'folder':
            dataset = dset.ImageFolder(root=root, transform=T.ToTensor())
        else:
            dataset = dset.LSUN(root=root, classes=['bedroom_train'], transform=T.ToTensor())
        return torch.utils.data.DataLoader(dataset, batch_size=4, shuffle=True)

    def kept(root):
        data = dset.LSUN(root=root, classes=['bedroom_train'], transform=T.ToTensor())
        return torch.utils.data.DataLoader(data, batch_size=4, shuffle=False)
    """
)


def test_r14_mixed_dataset_kinds_are_batched_by_run_time_kind():
    res = convert_source(SRC, "m.py")
    assert res.error is None, res.error
    assert "dataset_source(dataset, ['data', 'label'], shuffle=True" in res.code, res.code
    assert "GeneratorDataset(data, column_names=['data', 'label'], shuffle=False).batch(4" in res.code, res.code


class Squares:
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> tuple:
        return np.full((2,), i, np.float32), np.int32(i)


def test_r14_dataset_source_takes_both_kinds():
    import mindspore.dataset as ds

    from torch2ms.runtime import dataset_source

    python_side = dataset_source(Squares(), ["data", "label"], shuffle=False).batch(3)
    ms_side = dataset_source(ds.GeneratorDataset(Squares(), ["data", "label"], shuffle=False), ["x"], shuffle=False)
    ms_side = ms_side.batch(3)
    for a, b in zip(
        python_side.create_tuple_iterator(output_numpy=True), ms_side.create_tuple_iterator(output_numpy=True)
    ):
        np.testing.assert_array_equal(a[1], b[1])
    labels = [int(x) for (_, y) in python_side.create_tuple_iterator(output_numpy=True) for x in y]
    assert labels == [0, 1, 2, 3, 4, 5]
    shuffled = dataset_source(ds.GeneratorDataset(Squares(), ["data", "label"], shuffle=False), ["x"], shuffle=True)
    assert sorted(int(y) for (_, y) in shuffled.create_tuple_iterator(output_numpy=True)) == labels
