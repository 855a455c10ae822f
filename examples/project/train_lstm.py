"""Train the LSTM sentiment classifier on synthetic token sequences (Adam, gradient clipping).

    python train_lstm.py --epochs 10
"""

import argparse

import torch
import torch.nn as nn

from data import VOCAB_SIZE, sentiment_loader
from models import LSTMClassifier


def train(model, loader, epochs, lr=2e-3):
    """Train for `epochs` passes over `loader`; returns the loss of every step."""
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for epoch in range(epochs):
        for tokens, labels in loader:
            optimizer.zero_grad()
            logits = model(tokens)
            loss = criterion(logits, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    return losses


def evaluate(model: nn.Module, loader):
    model.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for tokens, labels in loader:
            correct += (model(tokens).argmax(dim=1) == labels).sum().item()
            total += labels.shape[0]
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    torch.manual_seed(0)
    loader = sentiment_loader(batch_size=32)
    model = LSTMClassifier(VOCAB_SIZE)
    train(model, loader, args.epochs)
    print(f"train accuracy {evaluate(model, loader):.3f}")
    torch.save(model.state_dict(), "lstm.pth")


if __name__ == "__main__":
    main()
