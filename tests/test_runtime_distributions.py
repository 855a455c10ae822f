"""torch.distributions converted to torch2ms.runtime's helpers: the converted code keeps torch's calls,
imports the helpers by name (no torch import left to shadow them), and trains like torch in PyNative.

Values and sampling statistics of every class are proven entry by entry in tests/test_kb_differential.py
(-k torch.distributions); here: the conversion itself and the gradients that rsample and log_prob pass back.
"""

import sys

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_source

SRC = """\
import torch
from torch.distributions import Categorical, Normal
from torch.distributions.transforms import TanhTransform
import torch.distributions as D


def policy(mu, log_std, logits, a):
    dist = Normal(mu, log_std.exp())
    squashed = D.TransformedDistribution(dist, [TanhTransform()])
    c = Categorical(logits=logits)
    return dist.log_prob(a).sum(-1) + squashed.log_prob(torch.tanh(a) * 0.5).sum(-1) + c.entropy(), dist.mean, dist.stddev
"""


def test_distributions_convert_to_runtime_helpers_and_drop_the_torch_imports():
    res = convert_source(SRC, "policy.py")
    assert res.error is None
    code = res.code
    assert "from torch2ms.runtime import Categorical, Normal, TanhTransform, TransformedDistribution" in code
    # a kept torch import would shadow the helpers
    assert "import torch\n" not in code and "from torch." not in code and "from torch import" not in code
    assert "dist.log_prob(a).sum(-1)" in code and "dist.mean, dist.stddev" in code  # torch's API, unchanged


@pytest.mark.differential
def test_converted_policy_gives_torch_values_and_gradients_in_pynative(tmp_path):
    torch = require_module("torch")
    ms = require_module("mindspore")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3)).astype("float32") for _ in range(4)]
    (tmp_path / "policy_ms.py").write_text(convert_source(SRC, "policy.py").code, encoding="utf-8")
    namespace: dict = {}
    exec(compile(SRC, "policy.py", "exec"), namespace)
    t_in = [torch.tensor(a, requires_grad=i < 2) for i, a in enumerate(arrays)]
    t_out = namespace["policy"](*t_in)
    t_out[0].sum().backward()

    import importlib.util

    spec = importlib.util.spec_from_file_location("policy_ms", tmp_path / "policy_ms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    m_in = [ms.Tensor(a) for a in arrays]
    m_out = module.policy(*m_in)
    grads = ms.grad(lambda *xs: module.policy(*xs)[0].sum(), grad_position=(0, 1))(*m_in)
    for t, m in zip(t_out, m_out):
        np.testing.assert_allclose(m.asnumpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    for t, g in zip(t_in[:2], grads):
        np.testing.assert_allclose(g.asnumpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.differential
def test_rsample_passes_gradients_to_loc_and_scale_like_torch():
    torch = require_module("torch")
    ms = require_module("mindspore")
    from torch2ms import runtime

    ms.set_context(mode=ms.PYNATIVE_MODE)
    mu, sd = np.array([0.5, -1.0], "float32"), np.array([0.7, 1.3], "float32")
    t_mu, t_sd = torch.tensor(mu, requires_grad=True), torch.tensor(sd, requires_grad=True)
    (torch.distributions.Normal(t_mu, t_sd).rsample((200000,)) ** 2).mean().backward()
    g_mu, g_sd = ms.grad(lambda a, b: (runtime.Normal(a, b).rsample((200000,)) ** 2).mean(), grad_position=(0, 1))(
        ms.Tensor(mu), ms.Tensor(sd)
    )
    # Monte Carlo estimates of d/dmu = mu and d/dsd = sd (E[x^2] over 2 elements): standard error of
    # the difference below 0.006 with 200000 draws
    np.testing.assert_allclose(g_mu.asnumpy(), t_mu.grad.numpy(), atol=0.03)
    np.testing.assert_allclose(g_sd.asnumpy(), t_sd.grad.numpy(), atol=0.03)


@pytest.mark.differential
def test_gamma_family_rsample_raises_with_what_to_do():
    require_module("mindspore")
    import mindspore as ms

    from torch2ms import runtime

    with pytest.raises(NotImplementedError, match="random_gamma"):
        runtime.Beta(ms.Tensor(np.ones(2, "float32")), ms.Tensor(np.ones(2, "float32"))).rsample()


REFERENCES = """\
import torch
from torch.distributions import Distribution, Normal, constraints
from torch.distributions.kl import kl_divergence, register_kl


class Shifted(Distribution):
    arg_constraints = {"loc": constraints.real}

    def __init__(self, loc):
        self.loc = loc
        super().__init__(loc.shape, validate_args=False)


@register_kl(Shifted, Normal)
def _kl(p, q):
    return (p.loc - q.loc) ** 2 + q.scale


def kl_and_check(a, b):
    n = Normal(b, b.abs() + 1.0)
    return kl_divergence(Shifted(a), n), isinstance(n, Normal), Shifted.arg_constraints["loc"].check(a)
"""


def test_distribution_classes_used_as_values_convert_to_the_runtime_classes():
    # isinstance, a base class, register_kl's types and a constraint: the names themselves, not TorchCompat
    res = convert_source(REFERENCES, "refs.py")
    assert res.error is None
    code = res.code
    assert "from torch2ms.runtime import Distribution, Normal, constraints, kl_divergence, register_kl" in code
    assert "class Shifted(Distribution):" in code and "@register_kl(Shifted, Normal)" in code
    assert "TorchCompat" not in code and "not converted" not in code


@pytest.fixture
def kl_registry_restored():
    """The test registers a KL for its own class in the runtime's global table: later tests of the same
    worker (kl_divergence compiled in GRAPH_MODE) must not meet a function of a module they cannot import."""
    from torch2ms.runtime.distributions import kl

    saved = dict(kl._KL)
    yield
    kl._KL.clear()
    kl._KL.update(saved)


@pytest.mark.differential
def test_converted_user_distribution_and_registered_kl_match_torch(tmp_path, kl_registry_restored):
    torch = require_module("torch")
    ms = require_module("mindspore")
    import importlib.util

    ms.set_context(mode=ms.PYNATIVE_MODE)
    (tmp_path / "refs_ms.py").write_text(convert_source(REFERENCES, "refs.py").code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("refs_ms", tmp_path / "refs_ms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace: dict = {}
    exec(compile(REFERENCES, "refs.py", "exec"), namespace)
    a, b = np.array([0.5, np.nan, 2.0], "float32"), np.array([1.0, -1.0, 0.0], "float32")
    want = namespace["kl_and_check"](torch.tensor(a), torch.tensor(b))
    got = module.kl_and_check(ms.Tensor(a), ms.Tensor(b))
    np.testing.assert_allclose(got[0].asnumpy(), want[0].numpy(), rtol=1e-6)
    assert got[1] is want[1] is True
    np.testing.assert_array_equal(got[2].asnumpy(), want[2].numpy())


@pytest.mark.differential
def test_a_distribution_built_in_graph_mode_warns_that_no_gradient_flows(tmp_path):
    ms = require_module("mindspore")
    import importlib.util
    import warnings

    # GRAPH_MODE parses construct from a file
    (tmp_path / "graph_logp.py").write_text(
        "import mindspore\nfrom torch2ms.runtime import Normal\n\n\n"
        "class LogProb(mindspore.nn.Cell):\n"
        "    def construct(self, mu, sd, v):\n"
        "        return Normal(mu, sd).log_prob(v).sum()\n",
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location("graph_logp", tmp_path / "graph_logp.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["graph_logp"] = module
    spec.loader.exec_module(module)
    mu, sd, v = (ms.Tensor(np.full(3, x, "float32")) for x in (0.0, 2.0, 1.0))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module.LogProb()(mu, sd, v)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
        sys.modules.pop("graph_logp", None)
    assert any("pass no gradient" in str(w.message) for w in caught)
