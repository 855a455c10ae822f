"""A small classifier trained with SGD and a step schedule (golden input: written for torch2ms)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self, n_in: int = 16, n_hidden: int = 32, n_classes: int = 4):
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.bn = nn.BatchNorm1d(n_hidden, momentum=0.05)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(n_hidden, n_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.fc1(x)))  # 隐藏层
        return self.fc2(self.drop(x))


def train(epochs: int = 2, device: str = "cpu"):
    torch.manual_seed(0)
    x = torch.randn(64, 16)
    y = torch.randint(0, 4, (64,))
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, drop_last=True)
    model = Classifier().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            logits = model(inputs)
            loss = criterion(logits, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            total += loss.item()
        scheduler.step()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}, lr {scheduler.get_last_lr()[0]:.4f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    torch.save(model.state_dict(), "classifier.pt")
    model.load_state_dict(torch.load("classifier.pt"))
    return accuracy


if __name__ == "__main__":
    print(train())
