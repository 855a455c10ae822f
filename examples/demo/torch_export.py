"""Demo, torch side: build the example model with a fixed seed, save its weights, an input and the output."""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simple_cnn"))
from model import build  # noqa: E402


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = build()
    with torch.no_grad():  # non-trivial BN statistics, as after training
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = np.random.default_rng(0).standard_normal((4, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    torch.save(model.state_dict(), out / "simple_cnn.pth")
    np.savez(out / "io.npz", x=x, y=y)
    print(f"torch: saved {out / 'simple_cnn.pth'} and a reference output {y.shape}")


if __name__ == "__main__":
    main(sys.argv[1])
