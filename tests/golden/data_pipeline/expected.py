"""An image-folder pipeline with a custom Dataset (golden input: written for torch2ms)."""

import numpy as np
import mindspore as ms
import mindspore.dataset as ds
from mindspore.dataset import transforms
from mindspore.dataset import vision
# torch2ms: numpy scalars defer to MindSpore tensors (np.float64 * Tensor is a Tensor), as to torch's
from torch2ms.runtime import numpy_defers_to_tensors  # noqa: F401 - sets it on import


class NoisySquares:
    """Random 3x8x8 images; the label is the brightest channel."""

    def __init__(self, n: int = 20):
        self.images = np.random.default_rng(0).random((n, 3, 8, 8), dtype=np.float32)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        idx = int(idx)  # GeneratorDataset passes numpy.int64 indices
        image = self.images[idx]
        label = int(image.mean(axis=(1, 2)).flatten().argmax())
        return image, label


def folder_loader(root: str, batch_size: int = 4):
    preprocess = transforms.Compose([
        vision.Resize(40),
        vision.CenterCrop(32),
        vision.ToTensor(),
        vision.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225], is_hwc=False),
    ])
    folder = ds.ImageFolderDataset(root, shuffle=False, num_parallel_workers=2).map(operations=[vision.Decode(to_pil=True), preprocess], input_columns='image').map(operations=transforms.TypeCast(ms.int32), input_columns='label')
    print("classes:", list(folder.get_class_indexing()))
    return folder.batch(batch_size, drop_remainder=False)


def mean_label(batch_size: int = 5):
    loader = ds.GeneratorDataset(NoisySquares(), column_names=['image', 'label'], shuffle=False).batch(batch_size, drop_remainder=True)
    seen = 0.0
    for images, labels in loader.create_tuple_iterator():
        seen += labels.float().mean().item()
    return seen / loader.get_dataset_size()
