"""GAN steps whose generator forward torch runs once (issue 22 §2, class 6): ``fake = G(z)`` feeds the
discriminator's step (detached, or kept with ``retain_graph=True``) and then the generator's own step.
The converted step differentiates each loss in its own ``forward_fn``, so the generator's forward runs
twice; its BatchNorm statistics must still move once per step, as in torch (the kit's dcgan was DIFFERENT
with losses equal to 1e-6: only the running statistics had moved twice).

Matrix: detach / no detach + retain_graph / detach + retain_graph × BatchNorm in G or not × two or three
networks (G as two cells, each with its own optimizer) × loop at module level or in a function; each
converted, and a sample of them trained side by side with compare-train (SAME, parameters and BatchNorm
statistics included: compare-train compares every state entry at the end).
"""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree

HEADER = """
import torch
import torch.nn as nn

torch.manual_seed(0)
NZ = 4


def block(n_in, n_out, bn):
    layers = [nn.Linear(n_in, n_out)]
    if bn:
        layers.append(nn.BatchNorm1d(n_out))
    layers.append(nn.ReLU())
    return nn.Sequential(*layers)


{nets}
netD = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())
criterion = nn.BCELoss()
optD = torch.optim.Adam(netD.parameters(), lr=0.01, betas=(0.5, 0.999))
{opts}
data = torch.randn(24, 6)
"""
NETS = {
    "two": (
        "netG = nn.Sequential(block(NZ, 8, {bn}), nn.Linear(8, 6))",
        "optG = torch.optim.Adam(netG.parameters(), lr=0.01, betas=(0.5, 0.999))",
    ),
    "three": (
        "netG1 = block(NZ, 8, {bn})\nnetG2 = nn.Sequential(block(8, 8, {bn}), nn.Linear(8, 6))",
        "optG1 = torch.optim.Adam(netG1.parameters(), lr=0.01, betas=(0.5, 0.999))\n"
        "optG2 = torch.optim.SGD(netG2.parameters(), lr=0.05)",
    ),
}
GEN = {"two": "fake = netG(noise)", "three": "fake = netG2(netG1(noise))"}
ZERO_G = {"two": "netG.zero_grad()", "three": "optG1.zero_grad()\noptG2.zero_grad()"}
STEP_G = {"two": "optG.step()", "three": "optG1.step()\noptG2.step()"}
D_STEP = {
    "detach": ("output = netD(fake.detach())", "errD_fake.backward()"),
    "retain": ("output = netD(fake)", "errD_fake.backward(retain_graph=True)"),
    "detach_retain": ("output = netD(fake.detach())", "errD_fake.backward(retain_graph=True)"),
}
BODY = """
for i in range(0, 24, 4):
    real = data[i:i + 4]
    netD.zero_grad()
    output = netD(real)
    errD_real = criterion(output, torch.ones(4, 1))
    errD_real.backward()
    noise = torch.randn(4, NZ)
    {gen}
    {d_forward}
    errD_fake = criterion(output, torch.zeros(4, 1))
    {d_backward}
    optD.step()
    {zero_g}
    output = netD(fake)
    errG = criterion(output, torch.ones(4, 1))
    errG.backward()
    {step_g}
"""
CASES = list(itertools.product(D_STEP, [True, False], NETS, ["module", "function"]))


def gan_script(d_step: str, bn: bool, nets: str, where: str) -> str:
    g_nets, g_opts = NETS[nets]
    head = HEADER.format(nets=g_nets.format(bn=bn), opts=g_opts)
    d_forward, d_backward = D_STEP[d_step]
    body = textwrap.dedent(BODY).format(
        gen=GEN[nets],
        d_forward=d_forward,
        d_backward=d_backward,
        zero_g=ZERO_G[nets].replace("\n", "\n    "),
        step_g=STEP_G[nets].replace("\n", "\n    "),
    )
    if where == "function":
        body = "\ndef train():\n" + textwrap.indent(body, "    ") + "\n\ntrain()\n"
    return head + body


def _convert(tmp_path: Path, source: str) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "gan.py").write_text(source)
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    return tmp_path / "out" / "gan.py"


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_gan_generator_forward_keeps_statistics_once(tmp_path, case):
    out = _convert(tmp_path, gan_script(*case)).read_text()
    assert "not converted" not in out and "port by hand" not in out, out
    cells = "[netG]" if case[2] == "two" else "[netG2, netG1]"
    assert f"with statistics_kept({cells}):" in out, out


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize(
    "case",
    [
        ("detach", True, "two", "module"),
        ("retain", True, "three", "function"),
        ("detach_retain", True, "two", "function"),
    ],
    ids=lambda c: "-".join(map(str, c)),
)
def test_gan_with_batchnorm_generator_trains_the_same(tmp_path, case):
    require_module("torch")
    require_module("mindspore")
    from torch2ms.trainrun import compare_train

    source = gan_script(*case)
    (tmp_path / "gan.py").write_text(source)
    (tmp_path / "c").mkdir()
    ms_script = _convert(tmp_path / "c", source)
    rep = compare_train(
        str(tmp_path / "gan.py"), str(ms_script), steps=3, out_dir=str(tmp_path / "cmp"), cwd=str(tmp_path)
    )
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 3 * (2 if case[2] == "two" else 3)
