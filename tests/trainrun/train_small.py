"""A small training script for the compare-train tests (run by them as a user would run it).

An MLP with BatchNorm and Dropout, two parameter groups (the head at its own learning rate),
SGD-momentum with StepLR stepped once per epoch, a shuffling DataLoader over a TensorDataset:
six batches an epoch.

    python train_small.py --epochs 4
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.features(x))


def make_loader():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64)
    return DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=16, shuffle=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    loader = make_loader()
    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(
        [{"params": model.features.parameters()}, {"params": model.head.parameters(), "lr": 0.05}],
        lr=0.1,
        momentum=0.9,
    )
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
