"""R13 torchvision.transforms.Lambda whose body calls torch ops, inside a converted dataset pipeline:
torch hands the function a Tensor (after ToTensor); MindSpore's dataset.map hands it numpy arrays, which
the converted body's MindSpore ops reject. Real torchvision and the converted pipeline over the same
generated MNIST files give the same batches."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from torch2ms.convert import convert_source

IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def write_mnist_raw(root: Path, n: int = 6) -> None:
    """n train and n-1 test images as torchvision's unpacked idx files in root/MNIST/raw."""
    rng = np.random.default_rng(5)
    raw_dir = root / "MNIST" / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    for name in IDX_NAMES:
        count = n if name.startswith("train") else n - 1
        if "images" in name:
            head = bytes([0, 0, 8, 3]) + np.array([count, 28, 28], ">u4").tobytes()
            body = rng.integers(0, 256, count * 28 * 28, np.uint8).tobytes()
        else:
            head = bytes([0, 0, 8, 1]) + np.array([count], ">u4").tobytes()
            body = rng.integers(0, 10, count, np.uint8).tobytes()
        (raw_dir / name).write_bytes(head + body)


def load_script(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        sys.modules.pop(name, None)
    return module


TORCH_LAMBDAS = """
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize((0.1307,), (0.3081,)),
    transforms.Lambda(lambda x: torch.flatten(x)),
    transforms.Lambda(lambda x: torch.clamp(x * 2.0, min=-1.0, max=3.0) + torch.mean(x)),
])
loader = DataLoader(datasets.MNIST({root!r}, train=True, download=False, transform=transform), batch_size=4)
"""


@pytest.mark.differential
def test_r13_converted_lambda_with_torch_ops_runs_in_dataset_map_like_torchvision(tmp_path):
    pytest.importorskip("torchvision")
    pytest.importorskip("mindspore")
    write_mnist_raw(tmp_path / "data")
    source = TORCH_LAMBDAS.format(root=str(tmp_path / "data"))
    (tmp_path / "torch_lambda.py").write_text(source)
    converted = convert_source(source)
    assert converted.error is None and "Lambda(" in converted.code
    (tmp_path / "ms_lambda.py").write_text(converted.code)
    t_batches = [tuple(v.numpy() for v in b) for b in load_script(tmp_path / "torch_lambda.py", "t2m_t_lambda").loader]
    m_loader = load_script(tmp_path / "ms_lambda.py", "t2m_m_lambda").loader
    m_batches = [tuple(v.asnumpy() for v in b) for b in m_loader.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == 2
    for (t_img, t_lab), (m_img, m_lab) in zip(t_batches, m_batches):
        assert t_img.shape == m_img.shape == (len(t_lab), 784)
        np.testing.assert_allclose(m_img, t_img, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(m_lab, t_lab)


def test_r13_lambda_passes_pil_images_and_tensors_through():
    ms = pytest.importorskip("mindspore")
    from PIL import Image

    from torch2ms.runtime.vision_transforms import Lambda

    image = Image.new("L", (3, 2))
    assert Lambda(lambda im: im.size)(image) == (3, 2)  # not an array: the function as it is
    tensor = ms.Tensor(np.ones((2, 3), np.float32))
    assert isinstance(Lambda(lambda t: t * 2)(tensor), ms.Tensor)  # an eager call keeps its Tensor
    pair = Lambda(lambda t: (t, t.sum()))(np.ones((2, 2), np.float32))
    assert isinstance(pair, tuple) and all(isinstance(v, np.ndarray) for v in pair) and pair[1] == 4.0
