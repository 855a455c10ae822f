"""A small PyTorch training script: `torch2ms convert` turns it into a MindSpore one with the same loss curve.

    torch2ms convert examples/train_loop -o /tmp/train_loop_ms   # then: python /tmp/train_loop_ms/train.py
"""

import random

import numpy as np
import torch
import torch.nn as nn


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def train(model, images, labels, steps, lr=0.05):
    """`steps` SGD-momentum steps on one batch; returns the loss of every step."""
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
    model.train()
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 10 == 0:
            acc = (outputs.argmax(1) == labels).float().mean()
            print(f"step {step}: loss {loss.item():.4f} acc {acc.item():.3f}")
    return losses


def main():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    images = torch.randn(32, 3, 32, 32)
    labels = torch.randint(0, 10, (32,))
    model = SmallCNN()
    train(model, images, labels, steps=50)
    model.eval()
    with torch.no_grad():
        acc = (model(images).argmax(1) == labels).float().mean()
    print(f"train accuracy {acc.item():.3f}")
    torch.save(model.state_dict(), "small_cnn.ckpt")
    model.load_state_dict(torch.load("small_cnn.ckpt"))


if __name__ == "__main__":
    main()
