"""A WGAN-GP's gradient penalty (issue 22, generator class ``gradient-penalty-autograd-grad``):
``torch.autograd.grad(outputs=D(interp), inputs=interp, grad_outputs=ones, create_graph=True)[0]`` in the
discriminator's loss. MindSpore differentiates functions: the conversion writes ``lambda interp: D(interp)``
from the statements that computed the outputs and takes ``mindspore.grad`` of it (runtime ``input_grads``)
inside the step's forward function, a grad nested in the outer ``value_and_grad``.

Generated matrix: where the penalty lives (a helper function, inline in the loop, a method of the class
that trains) × how the outputs and their weights are spelled (a name with ``torch.ones_like``, a
``Variable(Tensor(n, 1).fill_(1.0))`` name, no ``grad_outputs`` on a sum, lists, positional arguments,
weights that are not ones) × how the input asks for its gradient (``requires_grad_(True)``, ``Variable(...,
requires_grad=True)``, ``x.requires_grad = True``) × PyNative / GRAPH_MODE. Every case is converted (no
torch left, the penalty's ``D`` forward written once); a covering slice is trained side by side with the real
compare-train (SAME: losses, and every parameter at the end).
"""

from __future__ import annotations

import itertools
import textwrap

import pytest
from matrix_support import convert_cases, converted_trains_like_torch, covering
from requires_support import require_module

WHERE = ["helper", "inline", "method"]
OUTPUTS = ["ones_like", "variable_fill", "sum", "lists", "positional", "weights"]
REQUIRES = ["requires_grad_", "variable", "attribute"]
MODES = ["pynative", "graph"]

HEAD = """
import numpy as np
import torch
import torch.nn as nn
from torch import autograd
from torch.autograd import Variable

Tensor = torch.FloatTensor


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 6))

    def forward(self, z):
        return self.net(z)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


torch.manual_seed(0)
rng = np.random.RandomState(0)
X = torch.from_numpy((rng.randn(32, 6) * 0.5 + 1.0).astype(np.float32))
"""

# how the interpolated input asks for its gradient
MIX = {
    "requires_grad_": ["interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)"],
    "variable": ["interp = Variable(alpha * real + (1 - alpha) * fake, requires_grad=True)"],
    "attribute": ["interp = alpha * real + (1 - alpha) * fake", "interp.requires_grad = True"],
}
# the outputs, their weights and the call
GRAD = {
    "ones_like": [
        "d_interp = {D}(interp)",
        "grads = torch.autograd.grad(outputs=d_interp, inputs=interp, grad_outputs=torch.ones_like(d_interp),",
        "                            create_graph=True, retain_graph=True, only_inputs=True)[0]",
    ],
    "variable_fill": [
        "d_interp = {D}(interp)",
        "ones = Variable(Tensor(real.shape[0], 1).fill_(1.0), requires_grad=False)",
        "grads = autograd.grad(outputs=d_interp, inputs=interp, grad_outputs=ones, create_graph=True,",
        "                      retain_graph=True, only_inputs=True)[0]",
    ],
    "sum": ["grads = torch.autograd.grad(outputs={D}(interp).sum(), inputs=interp, create_graph=True)[0]"],
    "lists": [
        "d_interp = {D}(interp)",
        "d_interp = d_interp.view(-1, 1)",
        "grads, = torch.autograd.grad(outputs=[d_interp], inputs=[interp],",
        "                             grad_outputs=[torch.ones(d_interp.size())], create_graph=True)",
    ],
    "positional": [
        "d_interp = {D}(interp)",
        "grads = torch.autograd.grad(d_interp, interp, torch.ones_like(d_interp), True, True)[0]",
    ],
    "weights": [
        "d_interp = {D}(interp)",
        "grads = torch.autograd.grad(d_interp, interp, grad_outputs=torch.full_like(d_interp, 0.5),",
        "                            create_graph=True)[0]",
    ],
}
PENALTY = "penalty = ((grads.view(grads.size(0), -1).norm(2, dim=1) - 1) ** 2).mean()"


def penalty_lines(outputs: str, requires: str, d: str) -> list[str]:
    return [
        "alpha = torch.rand(real.size(0), 1)",
        *MIX[requires],
        *[line.format(D=d) for line in GRAD[outputs]],
        PENALTY,
    ]


def step_lines(where: str, gp_call: str | None) -> list[str]:
    d_loss = "d_loss = -torch.mean(C(real)) + torch.mean(C(fake.detach()))"
    lines = ["z = torch.randn(real.size(0), 4)", "fake = G(z)", "opt_C.zero_grad()"]
    if gp_call is None:  # inline: the penalty's statements in the loop
        lines += [d_loss, "fake = fake.detach()", "{penalty}", "d_loss = d_loss + 10.0 * penalty"]
    else:
        lines += [d_loss + " + 10.0 * " + gp_call]
    lines += ["d_loss.backward()", "opt_C.step()", "opt_G.zero_grad()", "fake = G(z)"]
    return lines + ["g_loss = -torch.mean(C(fake))", "g_loss.backward()", "opt_G.step()"]


def gp_script(where: str, outputs: str, requires: str) -> str:
    opts = [
        "opt_G = torch.optim.Adam(G.parameters(), lr=0.01, betas=(0.5, 0.9))",
        "opt_C = torch.optim.Adam(C.parameters(), lr=0.01, betas=(0.5, 0.9))",
    ]
    loop = ["for epoch in range(2):", "    for i in range(0, 32, 8):", "        real = X[i:i + 8]"]
    if where == "method":
        body = penalty_lines(outputs, requires, "self.C")
        step = [
            s.replace("G(", "self.G(").replace("C(", "self.C(").replace("opt_", "self.opt_")
            for s in step_lines(where, "self.gradient_penalty(real, fake.detach())")
        ]
        cls = [
            "class WGAN:",
            "    def __init__(self):",
            "        self.G, self.C = Generator(), Critic()",
            *["        self." + o.replace("(G.", "(self.G.").replace("(C.", "(self.C.") for o in opts],
            "",
            "    def gradient_penalty(self, real, fake):",
            *textwrap.indent("\n".join([*body, "return penalty"]), " " * 8).splitlines(),
            "",
            "    def train(self):",
            *textwrap.indent(
                "\n".join([*loop, *textwrap.indent("\n".join(step), " " * 8).splitlines()]), " " * 8
            ).splitlines(),
            "",
            "",
            "WGAN().train()",
        ]
        return HEAD + "\n\n" + "\n".join(cls) + "\n"
    setup = ["G, C = Generator(), Critic()", *opts]
    if where == "helper":
        fn = [
            "def gradient_penalty(C, real, fake):",
            *["    " + s for s in penalty_lines(outputs, requires, "C")],
            "    return penalty",
        ]
        step = step_lines(where, "gradient_penalty(C, real, fake.detach())")
        text = [*fn, "", "", *setup, *loop, *["        " + s for s in step]]
    else:
        step = []
        for s in step_lines(where, None):
            step += penalty_lines(outputs, requires, "C") if s == "{penalty}" else [s]
        text = [*setup, *loop, *["        " + s for s in step]]
    return HEAD + "\n\n" + "\n".join(text) + "\n"


CASES = list(itertools.product(WHERE, OUTPUTS, REQUIRES))
IDS = ["-".join(c) for c in CASES]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[tuple[str, str, str], str]:
    return convert_cases(tmp_path_factory.mktemp("gp"), CASES, gp_script)


@pytest.mark.parametrize(("where", "outputs", "requires"), CASES, ids=IDS)
def test_gradient_penalty_becomes_a_nested_grad(converted, where, outputs, requires):
    out = converted[(where, outputs, requires)]
    assert "not converted" not in out and "import torch" not in out, out
    assert "input_grads(lambda interp: " in out, out
    assert "autograd" not in out, out
    # the critic runs its forward on the interpolated batch once: inside the function differentiated (weights
    # that read the outputs, ``torch.full_like(d_interp, 0.5)``, keep the statement that computes them)
    assert ("= C(interp)" in out or "= self.C(interp)" in out) == (outputs == "weights"), out
    assert "requires_grad" not in out, out
    # only weights that are not ones are passed; ones are MindSpore's default
    assert ("input_grads(lambda interp: " in out) and (
        ("0.5" in out.split("input_grads(")[1].split("\n")[0]) == (outputs == "weights")
    ), out


# GRAPH_MODE trains the inline spelling: its draw (alpha) stays on the host. A helper or method that draws
# runs inside the compiled forward function, where compare-train's replayed draws (Python functions that
# read the call stack) cannot be compiled: the conversion is the same, the instrument cannot replay it.
DIFFERENTIAL = covering(
    [(w, o, r, m) for (w, o, r), m in itertools.product(CASES, MODES) if m == "pynative" or w == "inline"],
    pairs=False,
    keep=lambda c: c[:3] == ("inline", "ones_like", "requires_grad_"),
)


@pytest.mark.slow
@pytest.mark.differential
@pytest.mark.parametrize("case", DIFFERENTIAL, ids=lambda c: "-".join(c))
def test_gradient_penalty_trains_as_torch(tmp_path, case):
    require_module("torch")
    require_module("mindspore")
    where, outputs, requires, mode = case
    rep = converted_trains_like_torch(tmp_path, gp_script(where, outputs, requires), mode)
    assert rep.status == "same", (rep.error, rep.findings, rep.first_divergence)
    assert len(rep.rows) == 3 * 2  # the critic's and the generator's step, each step
