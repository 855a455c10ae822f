"""Issue 21 §3: a dataset reader's folder is one path literal where the script's root is a literal
(``ds.MnistDataset('../data/MNIST/raw', ...)``), not ``str('../data') + '/MNIST/raw'``; a root that is not
a literal keeps ``str(root) + '/MNIST/raw'`` (it may be a ``Path``).

A generated matrix: every torchvision dataset whose reader takes a folder below the root × root spellings
(plain, trailing slash, ``./``, absolute, double quotes; a name, a ``Path``, an f-string). The folder each
conversion writes is evaluated and must name the folder the old ``str(root) + sub`` form named; one
differential run reads fake MNIST files through the converted literal form in MindSpore and through
torchvision, from the same relative root.
"""

from __future__ import annotations

import ast
import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from requires_support import require_modules
from script_support import write_mnist_raw

from torch2ms.convert import convert_source

DATASETS = {  # torchvision call (ROOT in it) → the folder below the root the reader opens
    "MNIST": ("datasets.MNIST(ROOT, train=False)", "/MNIST/raw"),
    "FashionMNIST": ("datasets.FashionMNIST(ROOT)", "/FashionMNIST/raw"),
    "KMNIST": ("datasets.KMNIST(ROOT, train=True)", "/KMNIST/raw"),
    "CIFAR10": ("datasets.CIFAR10(ROOT, train=False)", "/cifar-10-batches-bin"),
    "CIFAR100": ("datasets.CIFAR100(ROOT)", "/cifar-100-binary"),
    "Flowers102": ("datasets.Flowers102(ROOT, split='test')", "/flowers-102"),
    "SVHN": ("datasets.SVHN(ROOT, split='test')", ""),
    "VOC": ("datasets.VOCSegmentation(ROOT, year='2012', image_set='val')", "/VOCdevkit/VOC2012"),
}
LITERALS = {"plain": "'data'", "slash": "'data/'", "dot": "'./data/'", "absolute": "'/tmp/t2m data'", "dq": '"data"'}
NAMES = {"name": "root", "path": "Path('data')", "fstring": "f'{base}/data'"}
HEAD = "import torchvision.datasets as datasets\nfrom pathlib import Path\nroot, base = 'data', '.'\n"


def _reader_folder(call: str, root: str) -> tuple[str, str]:
    """(the converted reader's first argument, the converted code)."""
    code = convert_source(HEAD + f"d = {call.replace('ROOT', root)}\n").code
    assign = next(n for n in ast.parse(code).body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "d")
    node = assign.value
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("map", "project", "rename")
    ):
        node = node.func.value  # down the .map(...) chain to the reader
    assert isinstance(node, ast.Call) and node.func.attr.endswith("Dataset"), code
    return ast.unparse(node.args[0]), code


@pytest.mark.parametrize(("dataset", "root"), list(itertools.product(DATASETS, LITERALS)))
def test_a_literal_root_makes_one_path_literal(dataset, root):
    call, sub = DATASETS[dataset]
    folder, code = _reader_folder(call, LITERALS[root])
    assert "str(" not in folder and isinstance(ast.literal_eval(folder), str), code
    value = ast.literal_eval(LITERALS[root])
    assert os.path.normpath(ast.literal_eval(folder)) == os.path.normpath(str(value) + sub)


@pytest.mark.parametrize(("dataset", "root"), list(itertools.product(DATASETS, NAMES)))
def test_a_root_that_is_no_literal_keeps_str(dataset, root):
    call, sub = DATASETS[dataset]
    folder, code = _reader_folder(call, NAMES[root])
    assert folder.startswith("str("), code
    scope = {"root": "data", "base": ".", "Path": Path}
    assert os.path.normpath(eval(folder, scope)) == os.path.normpath(str(eval(NAMES[root], scope)) + sub)


def test_the_literal_folder_reads_what_torchvision_reads(tmp_path, monkeypatch):
    require_modules("torch", "torchvision", "mindspore")
    import torchvision

    write_mnist_raw(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    folder, code = _reader_folder("datasets.MNIST(ROOT, train=False)", "'./data/'")
    assert folder == "'./data/MNIST/raw'", code
    import mindspore.dataset as ds

    reader = ds.MnistDataset(ast.literal_eval(folder), usage="test", shuffle=False)
    got = [(img.asnumpy()[..., 0], int(label.asnumpy())) for img, label in reader.create_tuple_iterator()]
    expected = torchvision.datasets.MNIST("./data/", train=False)
    assert len(got) == len(expected)
    for (img, label), (pil, t_label) in zip(got, expected):
        assert label == t_label and np.array_equal(img, np.asarray(pil))
