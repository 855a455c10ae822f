"""A Trainer class for the compare-train tests: gradient accumulation over two micro-batches, clipping,
AdamW with weight decay and a cosine schedule stepped per optimizer step."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, loader, accumulate=2):
        self.model, self.loader, self.accumulate = model, loader, accumulate
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=20)

    def fit(self, epochs):
        self.model.train()
        for _ in range(epochs):
            for i, (x, y) in enumerate(self.loader):
                loss = self.criterion(self.model(x), y) / self.accumulate
                loss.backward()
                if (i + 1) % self.accumulate == 0:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 0.5)
                    self.optimizer.step()
                    self.scheduler.step()
                    self.optimizer.zero_grad()


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    loader = DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 2))
    Trainer(model, loader).fit(epochs=2)


if __name__ == "__main__":
    main()
