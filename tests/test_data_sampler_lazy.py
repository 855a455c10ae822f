"""R16 / issue 12: a DataLoader's Python sampler is drawn lazily, as torch draws it.

MindSpore's GeneratorDataset(sampler=...) draws a whole epoch of a Python sampler's indices before the
first batch (1e6 samples: 1.5 s; minGPT's ``RandomSampler(replacement=True, num_samples=int(1e10))``:
memory without bound). The converted loader reads the dataset through ``sampled_dataset``, which pulls
one index per sample; batches are torch's, in torch's order.
"""

from __future__ import annotations

import sys

import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.convert import convert_source

SCRIPT = """
import numpy as np
from torch.utils.data import DataLoader, Dataset


class Counting:
    \"\"\"A sampler that counts the indices drawn from it.\"\"\"

    def __init__(self, n):
        self.n, self.drawn = n, 0

    def __iter__(self):
        for i in range(self.n):
            self.drawn += 1
            yield (i * 5) % 11

    def __len__(self):
        return self.n


class Squares(Dataset):
    def __len__(self):
        return 11

    def __getitem__(self, i):
        return np.array([i, i * i], dtype=np.float32), i % 3


def first_batches(n, k):
    sampler = Counting(n)
    loader = DataLoader(Squares(), batch_size=4, sampler=sampler, shuffle=False)
    it = iter(loader)
    got = [next(it) for _ in range(k)]
    return [(x.tolist(), y.tolist()) for x, y in got], sampler.drawn


def epoch(n):
    loader = DataLoader(Squares(), batch_size=4, sampler=Counting(n))
    return [(x.tolist(), y.tolist()) for x, y in loader], len(loader)
"""


def test_r16_loader_with_a_sampler_reads_through_sampled_dataset():
    conv = convert_source(SCRIPT)
    assert conv.error is None, conv.error
    assert "sampled_dataset(Squares(), column_names=" in conv.code and "sampler=sampler" in conv.code
    assert "GeneratorDataset(" not in conv.code


@pytest.mark.differential
def test_r16_python_sampler_drawn_lazily_batches_as_torch(tmp_path):
    require_module("torch")
    require_module("mindspore")
    (tmp_path / "t.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "m.py").write_text(convert_source(SCRIPT).code, encoding="utf-8")
    try:
        t, m = load_script(tmp_path / "t.py", "t2m_lazy_t"), load_script(tmp_path / "m.py", "t2m_lazy_m")
        expected, _ = t.first_batches(10**10, 3)
        got, drawn = m.first_batches(10**10, 3)
        assert got == expected
        assert drawn < 10**4  # MindSpore prefetches a little; before, it drew all 1e10 first
        assert m.epoch(7) == t.epoch(7)  # a whole epoch, and len(loader) in batches
    finally:
        for name in ("t2m_lazy_t", "t2m_lazy_m"):
            sys.modules.pop(name, None)
