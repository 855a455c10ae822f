"""An image-folder pipeline with a custom Dataset (golden input: written for torch2ms)."""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import datasets, transforms


class NoisySquares(Dataset):
    """Random 3x8x8 images; the label is the brightest channel."""

    def __init__(self, n: int = 20):
        self.images = np.random.default_rng(0).random((n, 3, 8, 8), dtype=np.float32)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        image = self.images[idx]
        label = int(image.mean(axis=(1, 2)).argmax())
        return image, label


def folder_loader(root: str, batch_size: int = 4):
    preprocess = transforms.Compose([
        transforms.Resize(40),
        transforms.CenterCrop(32),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    folder = datasets.ImageFolder(root, transform=preprocess)
    print("classes:", folder.classes)
    return DataLoader(folder, batch_size=batch_size, shuffle=False, num_workers=2)


def mean_label(batch_size: int = 5):
    loader = DataLoader(NoisySquares(), batch_size=batch_size, shuffle=False, drop_last=True)
    seen = 0.0
    for images, labels in loader:
        seen += labels.float().mean().item()
    return seen / len(loader)
