"""R13 torchvision.transforms.Lambda whose body calls torch ops, inside a converted dataset pipeline:
torch hands the function a Tensor (after ToTensor); MindSpore's dataset.map hands it numpy arrays, which
the converted body's MindSpore ops reject. Real torchvision and the converted pipeline over the same
generated MNIST files give the same batches."""

from __future__ import annotations

import numpy as np
import pytest
from requires_support import require_module
from script_support import load_script, write_mnist_raw

from torch2ms.convert import convert_source

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
    require_module("torchvision")
    require_module("mindspore")
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
    ms = require_module("mindspore")
    from PIL import Image

    from torch2ms.runtime.vision_transforms import Lambda

    image = Image.new("L", (3, 2))
    assert Lambda(lambda im: im.size)(image) == (3, 2)  # not an array: the function as it is
    tensor = ms.Tensor(np.ones((2, 3), np.float32))
    assert isinstance(Lambda(lambda t: t * 2)(tensor), ms.Tensor)  # an eager call keeps its Tensor
    pair = Lambda(lambda t: (t, t.sum()))(np.ones((2, 2), np.float32))
    assert isinstance(pair, tuple) and all(isinstance(v, np.ndarray) for v in pair) and pair[1] == 4.0
