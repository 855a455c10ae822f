"""Demo, torch side of examples/project: the shapes ImageFolder, the CNN's initial weights, and the
batches its torch training pipeline yields (shuffled, augmented), saved for check-data/weights/compare."""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "project"))
from data import image_loaders  # noqa: E402
from models import SmallCNN  # noqa: E402

EPOCHS, BATCH = 10, 14  # 72 training images, drop_last: 5 batches an epoch, 50 steps


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = SmallCNN(num_classes=3)
    torch.save(model.state_dict(), out / "cnn_init.pth")
    train_loader, val_loader = image_loaders(str(out / "shapes"), batch_size=BATCH)
    xs, ys = zip(*[(x.numpy(), y.numpy()) for _ in range(EPOCHS) for x, y in train_loader])
    val_x = next(iter(val_loader))[0].numpy()
    np.savez(out / "cnn_batches.npz", x=val_x, train_x=np.stack(xs), train_y=np.stack(ys))
    np.savez(out / "cnn_val_batch.npz", x=val_x)
    print(f"torch: {out / 'shapes'} ({len(train_loader.dataset)} training images, classes "
          f"{train_loader.dataset.classes}), initial weights {out / 'cnn_init.pth'}, "
          f"{len(xs)} training batches of {BATCH} in {out / 'cnn_batches.npz'}")


if __name__ == "__main__":
    main(sys.argv[1])
