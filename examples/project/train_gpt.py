"""Train the tiny character-level GPT (AdamW, cosine LR per step, gradient clipping), then sample.

    python train_gpt.py --steps 200
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from data import CHARS, decode, encode, text_batches
from models import TinyGPT


def train(model, batches, lr=3e-3):
    """One AdamW step per (inputs, targets) batch; returns the loss of every step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(batches))
    losses = []
    model.train()
    for step, (x, y) in enumerate(batches):
        logits = model(x)
        B, T, C = logits.shape
        loss = F.cross_entropy(logits.view(B * T, C), y.view(B * T))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    return losses


@torch.no_grad()
def generate(model: nn.Module, prompt, new_tokens=40):
    """Greedy decoding from `prompt`."""
    model.eval()
    idx = torch.tensor([encode(prompt)], dtype=torch.long)
    for _ in range(new_tokens):
        logits = model(idx[:, -model.block_size:])
        next_id = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        idx = torch.cat([idx, next_id], dim=1)
    return decode(idx[0].tolist())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = TinyGPT(len(CHARS), block_size=16)
    train(model, text_batches(args.steps, batch_size=8, block_size=16))
    print(generate(model, "the cat"))
    torch.save(model.state_dict(), "tiny_gpt.pth")


if __name__ == "__main__":
    main()
