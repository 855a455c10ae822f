"""Torch side of the torchvision proof: build each model (seeded random init), run it, save what MindSpore needs.

Run as a script in its own process: python torch_side.py OUT_DIR INPUT_SIZE MODEL [MODEL ...]
Writes OUT_DIR/<model>.npz with the state dict (numpy), the input, the eval-mode output, and the
layer types (prefix → torch class) that the weight renaming needs.
"""

import json
import sys

import numpy as np
import torch
import torchvision


def main(out_dir: str, size: int, names: list[str]) -> None:
    torch.set_num_threads(1)
    for name in names:
        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None)
        model.eval()
        rng = np.random.default_rng(0)
        x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        with torch.no_grad():
            y = model(torch.from_numpy(x))
        if isinstance(y, tuple):  # googlenet/inception aux outputs in eval are plain tensors, but be safe
            y = y[0]
        types = {p: f"torch.nn.{type(m).__name__}" for p, m in model.named_modules()
                 if type(m).__module__.startswith("torch.nn")}
        state = {f"param::{k}": v.detach().numpy() for k, v in model.state_dict().items()}
        np.savez(f"{out_dir}/{name}.npz", x=x, y=y.numpy(), types=json.dumps(types), **state)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
