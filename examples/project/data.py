"""Data for the example project.

- shapes: a tiny ImageFolder dataset of PNGs (three classes: horizontal bar, vertical bar, square),
  written once on first use, deterministically (numpy seed), and read back with torchvision's
  ImageFolder + transforms + DataLoader.
- sentiment: token sequences whose label says whether "good" tokens outnumber "bad" ones (LSTM).
- text: a character corpus cut into (input, next character) windows (tiny GPT).
"""

import os

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, TensorDataset
from torchvision import datasets, transforms

DATA_DIR = os.environ.get("SHAPES_DIR", os.path.join("data", "shapes"))
CLASSES = ("hbar", "square", "vbar")  # ImageFolder sorts class folders by name
IMAGE_SIZE = 16
MEAN = (0.5, 0.5, 0.5)
STD = (0.25, 0.25, 0.25)


def _draw(kind, rng, size):
    img = rng.integers(0, 60, (size, size, 3))  # dark noise background
    color = rng.integers(150, 256, 3)
    thick, length = size // 8, size // 2
    r, c = rng.integers(1, size - length, 2)
    if kind == "hbar":
        img[r:r + thick, c:c + length] = color
    elif kind == "vbar":
        img[r:r + length, c:c + thick] = color
    else:
        img[r:r + length // 2 + 1, c:c + length // 2 + 1] = color
    return Image.fromarray(img.astype(np.uint8))


def make_image_folder(root=DATA_DIR, per_class=24, size=IMAGE_SIZE, seed=0):
    """Write root/train/<class>/*.png and root/val/<class>/*.png unless they already exist."""
    if os.path.isdir(os.path.join(root, "val")):
        return root
    rng = np.random.default_rng(seed)
    for split, n in (("train", per_class), ("val", per_class // 3)):
        for kind in CLASSES:
            folder = os.path.join(root, split, kind)
            os.makedirs(folder, exist_ok=True)
            for i in range(n):
                _draw(kind, rng, size).save(os.path.join(folder, f"{i:03d}.png"))
    return root


def image_transforms(train):
    steps = [transforms.Resize((IMAGE_SIZE, IMAGE_SIZE))]
    if train:
        steps.append(transforms.RandomHorizontalFlip())
    steps += [transforms.ToTensor(), transforms.Normalize(MEAN, STD)]
    return transforms.Compose(steps)


def image_loaders(root=DATA_DIR, batch_size=16):
    """(train loader, validation loader) over the shapes ImageFolder."""
    make_image_folder(root)
    train_set = datasets.ImageFolder(os.path.join(root, "train"), transform=image_transforms(train=True))
    val_set = datasets.ImageFolder(os.path.join(root, "val"), transform=image_transforms(train=False))
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, drop_last=True, num_workers=0)
    val_loader = DataLoader(val_set, batch_size=batch_size, shuffle=False, num_workers=0)
    return train_loader, val_loader


def val_loader():
    """The deterministic validation pipeline (no augmentation, no shuffling): what check-data compares."""
    return image_loaders()[1]


VOCAB_SIZE = 32  # token 0 is padding
GOOD, BAD = range(1, 6), range(6, 11)


def sentiment_data(n=256, seq_len=12, seed=0):
    """Token sequences (n, seq_len) and labels: 1 when tokens from GOOD outnumber those from BAD."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, VOCAB_SIZE, (n, seq_len))
    lengths = rng.integers(seq_len // 2, seq_len + 1, n)
    tokens[np.arange(seq_len)[None, :] >= lengths[:, None]] = 0  # right padding
    good = np.isin(tokens, list(GOOD)).sum(1)
    bad = np.isin(tokens, list(BAD)).sum(1)
    labels = (good > bad).astype(np.int64)
    return torch.from_numpy(tokens), torch.from_numpy(labels)


def sentiment_loader(batch_size=32, seed=0):
    tokens, labels = sentiment_data(seed=seed)
    return DataLoader(TensorDataset(tokens, labels), batch_size=batch_size, shuffle=True)


CORPUS = (
    "the cat sat on the mat. the dog sat on the log. "
    "a cat and a dog met on the mat and sat by the log. "
) * 4
CHARS = sorted(set(CORPUS))


def encode(text):
    return [CHARS.index(ch) for ch in text]


def decode(ids):
    return "".join(CHARS[i] for i in ids)


def text_batches(n_batches, batch_size=8, block_size=16, seed=0):
    """n_batches (inputs, targets) pairs of random windows; targets are inputs shifted by one."""
    data = np.array(encode(CORPUS), dtype=np.int64)
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_batches):
        starts = rng.integers(0, len(data) - block_size - 1, batch_size)
        x = np.stack([data[s:s + block_size] for s in starts])
        y = np.stack([data[s + 1:s + block_size + 1] for s in starts])
        batches.append((torch.from_numpy(x), torch.from_numpy(y)))
    return batches
