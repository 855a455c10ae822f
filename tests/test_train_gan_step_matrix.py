"""GAN steps (issue 22, class 6; generator class ``gan-generator-forward-twice``): a generator and a
discriminator, two optimizers, the discriminator's step on the generated batch and then the generator's.

torch runs the generator's forward once per step when the generator's step reuses ``fake``; the converted
step differentiates a function per loss, so the generator's forward runs again inside the second one: its
BatchNorm statistics are kept as the first forward left them (``statistics_kept``), and the mark says where a
second forward cannot be exact (dropout draws again). Both models hold ``net.0.weight``: GRAPH_MODE compiles
the step as one graph, which refuses a name twice (``distinct_cells`` names them apart there).

Generated matrix: detach / no detach with ``retain_graph=True`` / no detach with the generator's forward run
again by the script × ``fake`` computed before the discriminator's step or inside it × BatchNorm in the
generator or not × the generator's step on the same noise or on new noise × PyNative / GRAPH_MODE. Every case
is converted; a covering slice is trained side by side with the real compare-train (SAME, losses and every
parameter and BatchNorm statistic at the end).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from matrix_support import convert_cases, converted_trains_like_torch, covering
from requires_support import require_module

from torch2ms.convert import convert_tree

DETACH = ["detach", "retain", "recompute"]
WHERE = ["before", "inside"]
BN = [True, False]
NOISE = ["same", "new"]
MODES = ["pynative", "graph"]

HEAD = """
import numpy as np
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, bn):
        super().__init__()
        norm = nn.BatchNorm1d(16) if bn else nn.Identity()
        self.net = nn.Sequential(nn.Linear(4, 16), norm, nn.ReLU(), nn.Linear(16, 6))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy((rng.randn(32, 6) * 0.5 + 1.0).astype(np.float32))
G, D = Generator({bn}), Discriminator()
criterion = nn.BCEWithLogitsLoss()
opt_G = torch.optim.Adam(G.parameters(), lr=0.01, betas=(0.5, 0.999))
opt_D = torch.optim.Adam(D.parameters(), lr=0.01, betas=(0.5, 0.999))
for epoch in range(2):
    for i in range(0, 32, 8):
        x = X[i:i + 8]
"""


def gan_script(detach: str, where: str, bn: bool, noise: str, dropout: bool = False) -> str:
    gen = ["z = torch.randn(x.size(0), 4)", "fake = G(z)"]
    fake_in_d = "fake.detach()" if detach == "detach" else "fake"
    d_step = [
        "opt_D.zero_grad()",
        "real_loss = criterion(D(x), torch.ones(x.size(0), 1))",
        *(gen if where == "inside" else []),
        f"fake_loss = criterion(D({fake_in_d}), torch.zeros(x.size(0), 1))",
        "d_loss = real_loss + fake_loss",
        "d_loss.backward(retain_graph=True)" if detach == "retain" else "d_loss.backward()",
        "opt_D.step()",
    ]
    g_step = ["opt_G.zero_grad()"]
    if noise == "new":
        g_step += gen
    elif detach == "recompute":
        g_step.append("fake = G(z)")
    g_step += ["g_loss = criterion(D(fake), torch.ones(x.size(0), 1))", "g_loss.backward()", "opt_G.step()"]
    body = [*(gen if where == "before" else []), *d_step, *g_step]
    head = HEAD.format(bn=bn)
    if dropout:
        head = head.replace("norm, nn.ReLU(),", "norm, nn.ReLU(), nn.Dropout(0.3),")
    return head + "".join(f"        {line}\n" for line in body)


CASES = list(itertools.product(DETACH, WHERE, BN, NOISE))
IDS = ["-".join(map(str, c)) for c in CASES]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[tuple, str]:
    return convert_cases(tmp_path_factory.mktemp("gan"), CASES, gan_script)


@pytest.mark.parametrize(("detach", "where", "bn", "noise"), CASES, ids=IDS)
def test_gan_step_converts(converted, detach, where, bn, noise):
    out = converted[(detach, where, bn, noise)]
    assert "not converted" not in out and "port by hand" not in out and "import torch" not in out, out
    assert out.count("value_and_grad(") == 2, out
    # torch ran the generator once for both steps: the converted second run keeps the statistics as they were
    reused = noise == "same" and detach != "recompute"
    assert ("statistics_kept([G])" in out) == reused, out
    if reused:
        assert "runs its forward again" in out, out  # the mark: dropout would draw again there
    # both models hold net.0.weight: named apart where one graph holds them (GRAPH_MODE)
    assert "distinct_cells(('D', D), ('G', G))" in out or "distinct_cells(('G', G), ('D', D))" in out, out


DIFFERENTIAL = covering(
    [(*c, m) for c, m in itertools.product(CASES, MODES)],
    pairs=False,
    keep=lambda c: c in (("detach", "before", True, "same", "graph"), ("retain", "inside", True, "same", "pynative")),
)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", DIFFERENTIAL, ids=lambda c: "-".join(map(str, c)))
def test_gan_step_trains_as_torch(tmp_path, case):
    require_module("torch")
    require_module("mindspore")
    *spelling, mode = case
    rep = converted_trains_like_torch(tmp_path, gan_script(*spelling), mode)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 3 * 2


def test_gan_generator_with_dropout_run_again_is_named(tmp_path):
    """Where the second forward cannot be exact (dropout in the generator draws again), the conversion's mark
    says so, and compare-train's diagnosis of a DIFFERENT run names the line (causes.recomputed_findings,
    read from the converted script). (compare-train itself serves the second forward torch's recorded draw,
    so the run is SAME under it: the finding is for runs that part.)"""
    from torch2ms.trainrun.causes import recomputed_findings

    out = _convert_one(tmp_path, gan_script("detach", "before", True, "same", dropout=True))
    text = out.read_text()
    assert "statistics_kept([G])" in text and "dropout see one more forward" in text, text
    line = next(k + 1 for k, t in enumerate(text.splitlines()) if t.lstrip().startswith("with statistics_kept("))
    found = recomputed_findings(str(out))
    assert [f["kind"] for f in found] == ["recomputed-forward"] and f"line {line}:" in found[0]["message"], found
    # torch ran the generator twice itself (new noise for its step): nothing to say
    assert recomputed_findings(str(_convert_one(tmp_path / "new", gan_script("detach", "before", True, "new")))) == []


def _convert_one(tmp_path: Path, source: str) -> Path:
    (tmp_path / "src").mkdir(parents=True)
    (tmp_path / "src" / "train.py").write_text(source)
    convert_tree(str(tmp_path / "src"), str(tmp_path / "out"))
    return tmp_path / "out" / "train.py"
