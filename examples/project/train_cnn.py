"""Train SmallCNN on the shapes ImageFolder: SGD-momentum + StepLR, or AdamW + cosine annealing.

    python train_cnn.py --optimizer sgd --epochs 15
    python train_cnn.py --optimizer adamw --epochs 15 --checkpoint cnn_adamw.pth
"""

import argparse

import torch
import torch.nn as nn

from data import image_loaders
from models import SmallCNN


def make_optimizer(params, name, epochs):
    """The optimizer and its LR schedule (stepped once per epoch)."""
    if name == "sgd":
        optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=5e-4)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    else:
        optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    return optimizer, scheduler


def train(model, loader, optimizer, scheduler, epochs):
    """Train for `epochs` passes over `loader`; returns the loss of every step."""
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        model.train()
        for images, labels in loader:
            optimizer.zero_grad()
            outputs = model(images)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    return losses


def evaluate(model: nn.Module, loader):
    """Accuracy over `loader`."""
    model.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for images, labels in loader:
            preds = model(images).argmax(dim=1)
            correct += (preds == labels).sum().item()
            total += labels.shape[0]
    return correct / total


def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)


def load_checkpoint(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--checkpoint", default="cnn.pth")
    args = parser.parse_args()

    torch.manual_seed(0)
    train_loader, val_loader = image_loaders(batch_size=16)
    model = SmallCNN(num_classes=3)
    optimizer, scheduler = make_optimizer(model.parameters(), args.optimizer, args.epochs)
    train(model, train_loader, optimizer, scheduler, args.epochs)
    acc = evaluate(model, val_loader)
    print(f"validation accuracy {acc:.3f}")

    save_checkpoint(model, args.checkpoint)
    restored = load_checkpoint(SmallCNN(num_classes=3), args.checkpoint)
    print(f"restored from {args.checkpoint}: accuracy {evaluate(restored, val_loader):.3f}")


if __name__ == "__main__":
    main()
