"""An automatic-mixed-precision training script for the compare-train tests: autocast + GradScaler
(unscale_, clipping, scaler.step), written for a GPU; on a CPU-only torch both switch themselves off."""

import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3)))


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((16, 3, 8, 8)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 10, 16))
    model = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler()
    model.train()
    for _ in range(20):
        optimizer.zero_grad()
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            outputs = model(images)
            loss = criterion(outputs, labels)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    main()
