"""trainer_torch.py written by hand for MindSpore: the gradients summed in Python between steps,
clipped by global norm, AdamW + CosineAnnealingLR from mindspore.experimental.optim."""

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn, ops
from mindspore.experimental import optim


class Trainer:
    def __init__(self, model, loader, accumulate=2):
        self.model, self.loader, self.accumulate = model, loader, accumulate
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = optim.AdamW(model.trainable_params(), lr=3e-3, weight_decay=0.05)
        self.scheduler = optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=20)
        self.grad_fn = ms.value_and_grad(self.loss, None, self.optimizer.parameters)

    def loss(self, x, y):
        return self.criterion(self.model(x), y) / self.accumulate

    def fit(self, epochs):
        self.model.set_train()
        grads_sum = None
        for _ in range(epochs):
            for i, (x, y) in enumerate(self.loader):
                _, grads = self.grad_fn(x, y)
                grads_sum = grads if grads_sum is None else tuple(a + b for a, b in zip(grads_sum, grads))
                if (i + 1) % self.accumulate == 0:
                    self.optimizer(ops.clip_by_global_norm(grads_sum, 0.5))
                    self.scheduler.step()
                    grads_sum = None


def main():
    ms.set_seed(0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    loader = ds.NumpySlicesDataset((x, y), column_names=["x", "y"], shuffle=True).batch(8)
    model = nn.SequentialCell(nn.Dense(6, 16), nn.LayerNorm((16,), epsilon=1e-5), nn.ReLU(), nn.Dense(16, 2))
    Trainer(model, loader).fit(epochs=2)


if __name__ == "__main__":
    main()
