"""Torch side of the torchvision proof: build each model (seeded random init), run it, save what MindSpore needs.

Run as a script in its own process: python torch_side.py OUT_DIR INPUT_SIZE MODEL[@KWARGS_JSON] ...
Writes OUT_DIR/<model>.npz with the state dict (numpy), the input, the eval-mode output, and the
layer types (prefix → torch class) that the weight renaming needs.
"""

import json
import sys

import numpy as np
import torch
import torchvision

from torch2ms.align.torch_worker import randomize_norms, torch_base_class


def _fill_zero_weights(model: torch.nn.Module) -> None:
    # zero-initialised heads (ViT) would make every output 0 and the comparison empty
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2 and not p.any():
                p.copy_(0.02 * torch.randn(p.shape, generator=g))


def main(out_dir: str, size: int, names: list[str]) -> None:
    torch.set_num_threads(1)
    for arg in names:
        name, _, kw = arg.partition("@")  # "vit_b_16@{\"image_size\": 64}": builder keyword arguments
        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None, **(json.loads(kw) if kw else {}))
        randomize_norms(model, seed=0)
        _fill_zero_weights(model)
        model.eval()
        x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype(np.float32)
        with torch.no_grad():
            y = model(torch.from_numpy(x))
        types = {p: base for p, m in model.named_modules() if (base := torch_base_class(m))}
        state = {f"param::{k}": v.detach().numpy() for k, v in model.state_dict().items()}
        np.savez(f"{out_dir}/{name}.npz", x=x, y=y.numpy(), types=json.dumps(types), **state)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
