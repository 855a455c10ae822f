"""Generated training scripts for the gradient-reading loop matrix (issue 23 §2.1): GradScaler × autocast
spelling × clipping × gradient read × where the loop lives. Each is a plain torch script that trains a
small MLP on fixed numpy data (no torch random draw for the batches)."""

from __future__ import annotations

import itertools

SCALERS = {
    "none": "",
    "cuda": "scaler = torch.cuda.amp.GradScaler()",
    "disabled": "scaler = torch.cuda.amp.GradScaler(enabled=False)",
    "flag": "scaler = torch.cuda.amp.GradScaler(enabled=amp)",
    "cpu": 'scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)',
    "imported": "scaler = GradScaler(enabled=amp)",
}
AUTOCASTS = {
    "none": "",
    "cpu_off": 'torch.autocast("cpu", enabled=False)',
    "cuda_amp": "torch.cuda.amp.autocast()",
    "device_expr": "torch.autocast(device.type if device.type != 'mps' else 'cpu', enabled=amp)",
    "amp_cuda": 'torch.amp.autocast("cuda", enabled=amp)',
    "imported": "autocast(enabled=amp)",
}
CLIPS = {
    "none": "",
    "norm": "torch.nn.utils.clip_grad_norm_({m}.parameters(), 1.0)",
    "value": "nn.utils.clip_grad_value_({m}.parameters(), clip_value=0.05)",
}
READS = {
    "none": [],
    "norm": [
        "for name, p in {m}.named_parameters():",
        "    norms[name] = p.grad.norm().item()",
    ],
    "logging": ['print("fc1 grad", {m}.fc1.weight.grad.abs().mean().item(), {m}.fc2.bias.grad.sum().item())'],
    "histogram": [
        "for tag, value in {m}.named_parameters():",
        "    tag = tag.replace('.', '/')",
        "    writer.add_histogram('Gradients/' + tag, value.grad.data.cpu(), step)",
    ],
}
PLACES = ("function", "method", "module")

HEAD = """import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


amp = False
device = torch.device("cpu")
rng = np.random.default_rng(0)
X = torch.from_numpy(rng.standard_normal((48, 8)).astype(np.float32))
Y = torch.from_numpy(rng.integers(0, 3, 48))
"""


def _step(scaler: str, autocast: str, clip: str, read: str, m: str, opt: str, sc: str) -> list[str]:
    fwd = [f"pred = {m}(x)", "loss = criterion(pred, y)"]
    lines = [f"{opt}.zero_grad(set_to_none=True)"]
    lines += [f"with {AUTOCASTS[autocast]}:", *("    " + f for f in fwd)] if autocast != "none" else fwd
    if scaler != "none":
        lines.append(f"{sc}.scale(loss).backward()")
        if clip != "none":
            lines.append(f"{sc}.unscale_({opt})")
    else:
        lines.append("loss.backward()")
    if clip != "none":
        lines.append(CLIPS[clip].format(m=m))
    lines += [ln.format(m=m) for ln in READS[read]]
    if scaler != "none":
        lines += [f"{sc}.step({opt})", f"{sc}.update()"]
    else:
        lines.append(f"{opt}.step()")
    lines.append("losses.append(loss.item())")
    return lines


def script(scaler: str, autocast: str, clip: str, read: str, place: str) -> str:
    """One torch training script of the matrix."""
    setup = [
        "loader = DataLoader(TensorDataset(X, Y), batch_size=8)",
        "criterion = nn.CrossEntropyLoss()",
        "writer = SummaryWriter(log_dir=tempfile.mkdtemp())",
        "norms, losses = {}, []",
    ]
    if place == "method":
        body = [
            "class Trainer:",
            "    def __init__(self, model):",
            "        self.model = model",
            "        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)",
            *(["        self." + SCALERS[scaler]] if scaler != "none" else []),
            "",
            "    def fit(self, loader, criterion, writer, norms, losses, epochs=2):",
            "        step = 0",
            "        for epoch in range(epochs):",
            "            for x, y in loader:",
            *(
                "                " + ln
                for ln in _step(scaler, autocast, clip, read, "self.model", "self.optimizer", "self.scaler")
            ),
            "                step += 1",
            "",
            "",
            "if __name__ == '__main__':",
            "    torch.manual_seed(0)",
            *("    " + s for s in setup),
            "    Trainer(Net()).fit(loader, criterion, writer, norms, losses)",
            "    print(losses[-1])",
        ]
    else:
        lines = [
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)",
            *([SCALERS[scaler]] if scaler != "none" else []),
            "step = 0",
            "for epoch in range(2):",
            "    for x, y in loader:",
            *("        " + ln for ln in _step(scaler, autocast, clip, read, "model", "optimizer", "scaler")),
            "        step += 1",
        ]
        if place == "function":
            body = [
                "def train(model, loader, criterion, writer, norms, losses):",
                *("    " + ln for ln in lines),
                "",
                "",
                "if __name__ == '__main__':",
                "    torch.manual_seed(0)",
                *("    " + s for s in setup),
                "    train(Net(), loader, criterion, writer, norms, losses)",
                "    print(losses[-1])",
            ]
        else:
            body = ["torch.manual_seed(0)", *setup, "model = Net()", *lines, "print(losses[-1])"]
    return HEAD + "\n\n" + "\n".join(body) + "\n"


def matrix() -> list[tuple[str, str, str, str, str]]:
    """Every combination (static checks take them all)."""
    return list(itertools.product(SCALERS, AUTOCASTS, CLIPS, READS, PLACES))


def pairwise() -> list[tuple[str, str, str, str, str]]:
    """A covering subset for the runs: every value of each axis, and each scaler with each autocast spelling,
    each clip kind with each read, each read in each place (all-pairs of the axes that interact)."""
    out: list[tuple[str, str, str, str, str]] = []
    scalers, autocasts, clips, reads = list(SCALERS), list(AUTOCASTS), list(CLIPS), list(READS)
    for i, (s, a) in enumerate(itertools.product(scalers, autocasts)):
        c = clips[i % len(clips)]
        r = reads[(i // len(clips)) % len(reads)]
        out.append((s, a, c, r, PLACES[i % len(PLACES)]))
    for i, (c, r, p) in enumerate(itertools.product(clips, reads, PLACES)):
        case = (scalers[i % len(scalers)], autocasts[(i * 5) % len(autocasts)], c, r, p)
        if case not in out:
            out.append(case)
    return out
