"""Train SimpleCNN on random data (stand-in for a real dataset)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from model import SimpleCNN


def main(epochs=2, device="cpu"):
    torch.manual_seed(0)
    images = torch.randn(64, 3, 32, 32)
    labels = torch.randint(0, 10, (64,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=16, shuffle=True, drop_last=True)

    model = SimpleCNN().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        acc = (model(images).argmax(1) == labels).float().mean()
    torch.save(model.state_dict(), "simple_cnn.pth")
    return acc.item()


if __name__ == "__main__":
    main()
