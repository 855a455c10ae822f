"""Issue 11, class 12: datasets whose samples are dicts, and loops that index ``batch['image']``.

torch's default collate turns ``{'image': img, 'mask': mask}`` samples into a dict of batched tensors.
The converted pipeline names MindSpore's columns by the keys, gives GeneratorDataset one numpy column
per key (``torch2ms.runtime.DictSource``) and iterates ``create_dict_iterator()``. The torch script and
its conversion run on the same generated samples and must see the same batches.
"""

from __future__ import annotations

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script

from torch2ms.convert import convert_source

SCRIPT = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Segmentation(Dataset):
    def __init__(self, n, size):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx)
        image = rng.standard_normal((3, self.size, self.size)).astype(np.float32)
        mask = (rng.random((self.size, self.size)) > 0.5).astype(np.int64)
        if idx % 2:
            return {"image": torch.from_numpy(image), "mask": torch.from_numpy(mask), "index": idx}
        return {"mask": torch.from_numpy(mask), "image": torch.from_numpy(image), "index": idx}


def summarise(loader):
    out = []
    for step, batch in enumerate(loader):
        image, mask = batch["image"], batch["mask"]
        out.append([step, float(image.sum()), float((image * mask[:, None]).mean()), int(mask.sum()),
                    list(image.shape), [int(i) for i in batch["index"]]])
    return out, len(loader)


def run():
    train = Segmentation(10, 8)
    loader = DataLoader(train, batch_size=4, shuffle=False, drop_last=False)
    first = summarise(loader)
    inline = DataLoader(Segmentation(6, 4), batch_size=3, shuffle=False, drop_last=True)
    return first, summarise(inline)
"""


def test_r14_dict_samples_name_the_columns_statically():
    code = convert_source(SCRIPT).code
    assert "DictSource(train, ['image', 'mask', 'index'])" in code
    assert "column_names=['image', 'mask', 'index']" in code
    assert "enumerate(loader.create_dict_iterator())" in code  # summarise(loader): a loader parameter
    assert "create_tuple_iterator" not in code and "not converted" not in code


@pytest.mark.differential
def test_r14_dict_samples_batches_match_torch(tmp_path):
    require_module("torch")
    require_module("mindspore")
    conv = convert_source(SCRIPT)
    assert not conv.error
    (tmp_path / "t.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "m.py").write_text(conv.code, encoding="utf-8")
    expected = load_script(tmp_path / "t.py", "t2m_dict_t").run()
    got = load_script(tmp_path / "m.py", "t2m_dict_m").run()
    for (e_rows, e_len), (g_rows, g_len) in zip(expected, got):
        assert e_len == g_len
        assert len(e_rows) == len(g_rows)
        for e, g in zip(e_rows, g_rows):
            assert e[0] == g[0] and e[3:] == g[3:], (e, g)
            np.testing.assert_allclose(g[1:3], e[1:3], rtol=1e-5, atol=1e-5)


SAMPLER = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, SequentialSampler


class Pairs(Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return np.full((2,), i, dtype=np.float32), i % 3


def batches(distributed):
    data = Pairs()
    sampler = SequentialSampler(data) if distributed else None
    loader = DataLoader(data, batch_size=3, shuffle=(sampler is None), sampler=sampler)
    return [(x.tolist(), y.tolist()) for x, y in loader], len(loader)
"""


@pytest.mark.differential
def test_r16_sampler_or_shuffle_decided_at_run_time_as_torch(tmp_path):
    """``shuffle=(sampler is None), sampler=sampler`` (ImageNet's example): MindSpore refuses a sampler
    with shuffle=False, so shuffle is decided at run time; with the sampler, batches are torch's."""
    require_module("torch")
    require_module("mindspore")
    conv = convert_source(SAMPLER)
    assert "not converted" not in conv.code and "is None else None" in conv.code
    (tmp_path / "t.py").write_text(SAMPLER, encoding="utf-8")
    (tmp_path / "m.py").write_text(conv.code, encoding="utf-8")
    t, m = load_script(tmp_path / "t.py", "t2m_sampler_t"), load_script(tmp_path / "m.py", "t2m_sampler_m")
    assert m.batches(True) == t.batches(True)
    shuffled, n = m.batches(False)  # shuffled: another order than torch's, the same samples
    assert n == 3 and sorted(v for x, _ in shuffled for v, _ in x) == [float(i) for i in range(7)]
