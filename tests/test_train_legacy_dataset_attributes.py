"""Issue 22, named class 5 (datasets): torchvision's MNIST family still answers its old whole-set names,
``.train_data`` / ``.train_labels`` / ``.test_data`` / ``.test_labels`` (the tutorials of its first years read
them: ``torch.unsqueeze(test_data.test_data, dim=1).type(torch.FloatTensor)[:2000] / 255.``). Converted, they
were left on MindSpore's pipeline (AttributeError: 'MapDataset' object has no attribute 'train_data'), and
compare-train's ``--fake-data`` stand-in lacked them on the torch side.

Every dataset of the family × every old name × where the dataset is held (a module-level name, an attribute
of a class, the call itself) × how the value is used (as is, the tutorial's cast and slice, ``.numpy()``) runs
in real torchvision over generated idx files and, converted, in MindSpore: the same arrays, shapes and
dtypes. Then a MorvanZhou-style training script that reads them trains the SAME under compare-train with
``--fake-data`` in both modes.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script, write_mnist_raw

from torch2ms.convert import convert_source

pytestmark = pytest.mark.differential

DATASETS = ["MNIST", "FashionMNIST", "KMNIST"]
NAMES = {"train_data": True, "train_labels": True, "test_data": False, "test_labels": False}  # name -> train split
USES = {
    "as_is": "{v}",
    "tutorial_cast": "torch.unsqueeze({v}, dim=1).type(torch.FloatTensor)[:4] / 255.",
    "numpy": "{v}.numpy()[:3]",
    "size": "{v}.size()",
}


def _source(cls: str, root: str) -> str:
    lines = ["import torch", "import torchvision", "from torchvision import datasets", ""]
    lines += [
        f"train = datasets.{cls}({root!r}, train=True, download=False)",
        f"test = torchvision.datasets.{cls}(root={root!r}, train=False)",
        "",
        "class Holder:",
        "    def __init__(self):",
        f"        self.ds = datasets.{cls}({root!r}, train=True)",
        f"        self.ts = datasets.{cls}({root!r}, train=False)",
        "",
        "holder = Holder()",
    ]
    for name, train in NAMES.items():
        split = "train" if train else "test"
        held = {
            "module": f"{split}.{name}",
            "attribute": f"holder.{'ds' if train else 'ts'}.{name}",
            "inline": f"datasets.{cls}({root!r}, train={train}).{name}",
        }
        for place, v in held.items():
            for use, form in USES.items():
                if use == "tutorial_cast" and "labels" in name:
                    continue  # the cast is the images'
                lines.append(f"{name}_{place}_{use} = {form.format(v=v)}")
    return "\n".join(lines) + "\n"


def _pair(tmp_path: Path, cls: str):
    root = tmp_path / "data"
    write_mnist_raw(root, n=7)
    if cls != "MNIST":
        shutil.copytree(root / "MNIST", root / cls)
    source = _source(cls, str(root))
    converted = convert_source(source)
    assert converted.error is None
    assert "with_torchvision_arrays(" in converted.code
    assert "import torch" not in converted.code and "from torchvision" not in converted.code, converted.code
    (tmp_path / f"torch_{cls}.py").write_text(source)
    (tmp_path / f"ms_{cls}.py").write_text(converted.code)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's deprecation warnings for the old names
        tmod = load_script(tmp_path / f"torch_{cls}.py", f"t2m_tl_{cls}")
    return tmod, load_script(tmp_path / f"ms_{cls}.py", f"t2m_ml_{cls}")


def _value(v):
    if hasattr(v, "asnumpy"):
        return v.asnumpy()
    if hasattr(v, "numpy"):
        return v.numpy()
    return np.asarray(tuple(v) if not isinstance(v, np.ndarray) else v)


@pytest.mark.parametrize("cls", DATASETS)
def test_i22_class5_old_dataset_names_match_torchvision(tmp_path, cls):
    require_module("torchvision")
    require_module("mindspore")
    tmod, mmod = _pair(tmp_path, cls)
    names = [n for n in vars(tmod) if any(n.startswith(k + "_") for k in NAMES)]
    assert len(names) == len(NAMES) * 3 * len(USES) - 2 * 3  # every name × place × use but the labels' cast
    for name in names:
        t, m = getattr(tmod, name), getattr(mmod, name)
        tv, mv = _value(t), _value(m)
        assert tv.shape == mv.shape, name
        assert tv.dtype == mv.dtype, (name, tv.dtype, mv.dtype)
        np.testing.assert_allclose(mv, tv, rtol=1e-6, err_msg=name)


SCRIPT = '''
"""A MorvanZhou-style MNIST CNN reading torchvision's old attribute names (generated for the test)."""
import torch
import torch.nn as nn
import torch.utils.data as Data
import torchvision

torch.manual_seed(1)
train_data = torchvision.datasets.MNIST(root="./mnist/", train=True, transform=torchvision.transforms.ToTensor(),
                                        download=False)
print(train_data.train_data.size(), train_data.train_labels.size())
train_loader = Data.DataLoader(dataset=train_data, batch_size=16, shuffle=False)
test_data = torchvision.datasets.MNIST(root="./mnist/", train=False)
test_x = torch.unsqueeze(test_data.test_data, dim=1).type(torch.FloatTensor)[:32] / 255.
test_y = test_data.test_labels[:32]


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 4, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(4))
        self.out = nn.Linear(4 * 7 * 7, 10)

    def forward(self, x):
        x = self.conv(x)
        return self.out(x.view(x.size(0), -1))


cnn = CNN()
optimizer = torch.optim.Adam(cnn.parameters(), lr=0.01)
loss_func = nn.CrossEntropyLoss()
for step, (b_x, b_y) in enumerate(train_loader):
    loss = loss_func(cnn(b_x), b_y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 2 == 0:
        pred_y = torch.max(cnn(test_x), 1)[1].data.numpy()
        accuracy = float((pred_y == test_y.data.numpy()).astype(int).sum()) / float(test_y.size(0))
        print(step, loss.data.numpy(), accuracy)
    if step == 6:
        break
'''


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_i22_class5_script_reading_old_names_trains_the_same_on_fake_data(tmp_path, mode):
    require_module("torchvision")
    require_module("mindspore")
    from torch2ms.convert import convert_tree
    from torch2ms.trainrun import compare_train

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "train.py").write_text(SCRIPT)
    convert_tree(str(tmp_path / "torch"), str(tmp_path / "ms"))
    rep = compare_train(
        str(tmp_path / "torch" / "train.py"),
        str(tmp_path / "ms" / "train.py"),
        steps=5,
        fake_data=True,
        mode=mode,
        out_dir=str(tmp_path / "out"),
        cwd=str(tmp_path / "torch"),
        timeout=400,
    )
    assert rep.status == "same", (rep.error, rep.first_divergence)
