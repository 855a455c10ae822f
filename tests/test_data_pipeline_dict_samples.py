"""Issue 23 §2.2: a Dataset's own samples name the pipeline's columns, also through wrappers and ``**dict``.

The failure class: ``Dataset.__getitem__`` returning ``{'image': ..., 'mask': ...}`` read through
``random_split`` and ``DataLoader(ds, **loader_args)`` got the guessed columns ['data', 'label'], the
loop kept ``create_tuple_iterator()`` while reading ``batch['image']``, and MindSpore's pipeline failed
in C++. Now the columns come from ``__getitem__`` (dict keys, tuple/list arity) through ``Subset``,
``random_split`` and ``ConcatDataset``; ``**name`` of a dict assigned once is read as written-out
keywords; loops over dict batches use ``create_dict_iterator()``.

Matrix: sample kind (dict / tuple / list) × wrapper (none / random_split / Subset / ConcatDataset) ×
loader keywords (written / ``**dict(...)`` / ``**{...}``) × how the loop reads a batch (by key or
position / by unpacking). The converted pipeline must yield torch's batches, value for value
(random_split: the same samples as torch's loader over the split the converted code drew, since the
permutation is numpy's, not torch's: said in the KB note).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

sys.path.insert(0, str(Path(__file__).parent))
from script_support import load_script

SAMPLES = {"dict": "{'image': x, 'mask': y}", "tuple": "x, y", "list": "[x, y]"}
WRAPS = {
    "none": "ds = base",
    "random_split": "ds, rest = random_split(base, [8, 4])",
    "subset": "ds = Subset(base, [5, 1, 7, 3, 0, 2])",
    "concat": "ds = ConcatDataset([base, Data(4, 1)])",
}
LOADERS = {
    "written": "loader = DataLoader(ds, batch_size=4, shuffle=False)",
    "dict_call": "loader_args = dict(batch_size=4, num_workers=0, pin_memory=True)\n"
    "    loader = DataLoader(ds, shuffle=False, **loader_args)",
    "dict_literal": "loader_args = {'batch_size': 4, 'shuffle': False}\n    loader = DataLoader(ds, **loader_args)",
}
READS = {
    ("dict", "index"): "for batch in loader:\n        a, b = batch['image'], batch['mask']",
    ("dict", "unpack"): "for batch in loader:\n        a, b = [batch[k] for k in ('image', 'mask')]",
    ("tuple", "index"): "for batch in loader:\n        a, b = batch[0], batch[1]",
    ("tuple", "unpack"): "for a, b in loader:\n        pass",
}

TEMPLATE = """import numpy as np
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset, random_split


class Data(Dataset):
    def __init__(self, n, offset=0):
        rng = np.random.default_rng(offset)
        self.x = rng.standard_normal((n, 3)).astype(np.float32)
        self.y = rng.integers(0, 5, n)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        x = torch.as_tensor(self.x[idx]).float()
        y = torch.as_tensor(self.y[idx]).long()
        return {sample}


def build():
    base = Data(12)
    {wrap}
    {loader}
    return ds, loader


def read(loader):
    out = []
    {read}
        out.append((a, b))
    return out
"""


def script(sample: str, wrap: str, loader: str, read: str) -> str:
    how = READS[("dict" if sample == "dict" else "tuple", read)]
    return TEMPLATE.format(sample=SAMPLES[sample], wrap=WRAPS[wrap], loader=LOADERS[loader], read=how)


CASES = list(itertools.product(SAMPLES, WRAPS, LOADERS, ("index", "unpack")))


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_columns_come_from_the_dataset(case):
    sample, wrap, loader, read = case
    code = convert_source(script(*case)).code
    assert "not converted" not in code, code
    assert "['data', 'label']" not in code and "TorchCompat" not in code, code
    cols = "['image', 'mask']" if sample == "dict" else "['x', 'y']"
    assert f"column_names={cols}" in code, code
    iterator = "create_dict_iterator()" if sample == "dict" else "create_tuple_iterator()"
    assert f"in loader.{iterator}" in code, code


@pytest.mark.differential
@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_converted_pipeline_yields_torchs_batches(case, tmp_path):
    torch = require_module("torch")
    require_module("mindspore")
    src = script(*case)
    name = "_".join(case)
    (tmp_path / "t.py").write_text(src, encoding="utf-8")
    (tmp_path / "m.py").write_text(convert_source(src).code, encoding="utf-8")
    tmod, mmod = (
        load_script(tmp_path / "t.py", f"t2m_dict_t_{name}"),
        load_script(tmp_path / "m.py", f"t2m_dict_m_{name}"),
    )
    t_ds, t_loader = tmod.build()
    m_ds, m_loader = mmod.build()
    if case[1] == "random_split":  # numpy's permutation, not torch's: torch's loader over the same split
        assert sorted(m_ds.indices + list(np.setdiff1d(range(12), m_ds.indices))) == list(range(12))
        assert len(m_ds) == len(t_ds) == 8
        t_loader = torch.utils.data.DataLoader(torch.utils.data.Subset(t_ds.dataset, m_ds.indices), batch_size=4)
    want = [(a.numpy(), b.numpy()) for a, b in tmod.read(t_loader)]
    got = [(a.asnumpy(), b.asnumpy()) for a, b in mmod.read(m_loader)]
    assert len(got) == len(want) > 0
    for (ga, gb), (wa, wb) in zip(got, want):
        np.testing.assert_array_equal(ga, wa)
        np.testing.assert_array_equal(gb, wb)
        assert ga.dtype == wa.dtype and gb.dtype == wb.dtype
