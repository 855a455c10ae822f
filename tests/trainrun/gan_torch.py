"""A tiny GAN for the compare-train tests: two networks, two optimizers, two backward calls before the
discriminator's step, noise drawn in the loop, a shuffling DataLoader."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    real = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32) * 0.5 + 1.0
    loader = DataLoader(TensorDataset(torch.from_numpy(real)), batch_size=16, shuffle=True)
    net_g = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4))
    net_d = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    criterion = nn.BCEWithLogitsLoss()
    opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-2, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-2, betas=(0.5, 0.999))
    for _ in range(3):
        for (x,) in loader:
            b = x.shape[0]
            net_d.zero_grad()
            err_real = criterion(net_d(x), torch.ones(b, 1))
            err_real.backward()
            noise = torch.randn(b, 2)
            fake = net_g(noise)
            err_fake = criterion(net_d(fake.detach()), torch.zeros(b, 1))
            err_fake.backward()
            opt_d.step()
            net_g.zero_grad()
            err_g = criterion(net_d(fake), torch.ones(b, 1))
            err_g.backward()
            opt_g.step()


if __name__ == "__main__":
    main()
