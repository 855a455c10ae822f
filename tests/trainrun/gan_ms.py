"""gan_torch.py written by hand for MindSpore: each network's loss differentiated by value_and_grad and
its optimizer called from Python."""

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn, ops
from mindspore.experimental import optim


def main():
    ms.set_seed(0)
    real = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32) * 0.5 + 1.0
    loader = ds.NumpySlicesDataset((real,), column_names=["x"], shuffle=True).batch(16)
    net_g = nn.SequentialCell(nn.Dense(2, 8), nn.ReLU(), nn.Dense(8, 4))
    net_d = nn.SequentialCell(nn.Dense(4, 8), nn.LeakyReLU(0.2), nn.Dense(8, 1))
    criterion = nn.BCEWithLogitsLoss()
    opt_d = optim.Adam(net_d.trainable_params(), lr=1e-2, betas=(0.5, 0.999))
    opt_g = optim.Adam(net_g.trainable_params(), lr=1e-2, betas=(0.5, 0.999))

    def d_loss(x, fake):
        b = x.shape[0]
        return criterion(net_d(x), ops.ones((b, 1), ms.float32)) + criterion(net_d(fake), ops.zeros((b, 1), ms.float32))

    def g_loss(noise):
        return criterion(net_d(net_g(noise)), ops.ones((noise.shape[0], 1), ms.float32))

    d_grad = ms.value_and_grad(d_loss, None, opt_d.parameters)
    g_grad = ms.value_and_grad(g_loss, None, opt_g.parameters)
    for _ in range(3):
        for (x,) in loader:
            noise = ops.randn(x.shape[0], 2)
            fake = net_g(noise)
            _, grads = d_grad(x, fake)
            opt_d(grads)
            _, grads = g_grad(noise)
            opt_g(grads)


if __name__ == "__main__":
    main()
