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


def _randomize_norms(model: torch.nn.Module) -> None:
    """Fresh norm layers are the identity in eval mode (mean 0, var 1, weight 1, bias 0), which hides
    conversion errors in them (BN momentum, eps, gamma/beta): give them random but sane values."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2 and not p.any():
                # zero-initialised heads (ViT) would make every output 0 and the comparison empty
                p.copy_(0.02 * torch.randn(p.shape, generator=g))
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.BatchNorm1d, torch.nn.LayerNorm, torch.nn.GroupNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=g))
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
                if getattr(m, "running_mean", None) is not None:
                    m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=g))
                    m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=g))


def main(out_dir: str, size: int, names: list[str]) -> None:
    torch.set_num_threads(1)
    for name in names:
        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None)
        _randomize_norms(model)
        model.eval()
        rng = np.random.default_rng(0)
        x = rng.standard_normal((1, 3, size, size)).astype(np.float32)
        with torch.no_grad():
            y = model(torch.from_numpy(x))
        if isinstance(y, tuple):  # googlenet/inception aux outputs in eval are plain tensors, but be safe
            y = y[0]
        types = {}
        for p, m in model.named_modules():
            # A project class that subclasses a torch layer (LayerNorm2d) keeps its base's parameter names.
            base = next((c for c in type(m).__mro__ if c.__module__.startswith("torch.nn.modules")), None)
            if base is not None:
                types[p] = f"torch.nn.{base.__name__}"
        state = {f"param::{k}": v.detach().numpy() for k, v in model.state_dict().items()}
        np.savez(f"{out_dir}/{name}.npz", x=x, y=y.numpy(), types=json.dumps(types), **state)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
