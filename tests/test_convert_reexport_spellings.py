"""torch's public names spelled from the submodules that define them convert as the public spelling
does ("Canonicalise, then match"), and a script's unread torch imports are not kept as re-exports."""

from __future__ import annotations

import re
import textwrap

import pytest

from torch2ms.convert import convert_source
from torch2ms.kb import load_kb

BODY = textwrap.dedent("""\


    class Net(Module):
        def __init__(self):
            super().__init__()
            self.fc = Linear(3, 2)
            self.act = GELU()

        def forward(self, x):
            return self.act(self.fc(x))


    net = Net()
    data = TensorDataset(torch.ones(8, 3), torch.zeros(8))
    loader = DataLoader(data, batch_size=4, sampler=SequentialSampler(data))
    opt = Adam(net.parameters(), lr=0.1)
    for x, y in loader:
        print(net(x).shape)
""")

PUBLIC = """\
import torch
from torch.nn import GELU, Linear, Module
from torch.optim import Adam
from torch.utils.data import DataLoader, SequentialSampler, TensorDataset
"""

DEFINING = """\
import torch
from torch.nn.modules.module import Module
from torch.nn.modules.linear import Linear
from torch.nn.modules.activation import GELU
from torch.optim.adam import Adam
from torch.utils.data.dataloader import DataLoader
from torch.utils.data.dataset import TensorDataset
from torch.utils.data.sampler import SequentialSampler
"""


def test_r1_defining_submodule_spellings_convert_as_the_public_names():
    public = convert_source(PUBLIC + BODY, "a.py")
    defining = convert_source(DEFINING + BODY, "a.py")
    assert "import torch" not in defining.code, defining.code
    assert defining.code == public.code
    assert [(c.api, c.action) for c in defining.changes] == [(c.api, c.action) for c in public.changes]


@pytest.mark.parametrize(
    ("spelling", "public"),
    [
        ("torch.utils.data.dataloader.DataLoader", "torch.utils.data.DataLoader"),
        ("torch.utils.data.dataset.Subset", "torch.utils.data.Subset"),
        ("torch.utils.data.dataset.random_split", "torch.utils.data.random_split"),
        ("torch.utils.data.sampler.SubsetRandomSampler", "torch.utils.data.SubsetRandomSampler"),
        ("torch.nn.modules.loss.CrossEntropyLoss", "torch.nn.CrossEntropyLoss"),
        ("torch.nn.modules.Linear", "torch.nn.Linear"),
        ("torch.nn.modules.module.Module.eval", "torch.nn.Module.eval"),
        ("torch.optim.adamw.AdamW", "torch.optim.AdamW"),
        ("torch.nn.parameter.Parameter", "torch.nn.Parameter"),
        ("torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad_norm_"),
        ("torch.autograd.function.Function", "torch.autograd.Function"),
        ("torch.functional.einsum", "torch.einsum"),
    ],
)
def test_r2_kb_finds_public_names_under_their_defining_submodules(spelling, public):
    entry = load_kb().get(spelling)
    assert entry is not None and entry.torch == public


def test_r2_names_only_a_submodule_has_keep_their_own_entry():
    kb = load_kb()
    name = "torch.nn.modules.linear.NonDynamicallyQuantizableLinear"  # not re-exported by torch.nn
    assert kb.get(name) is not None and kb.get(name).torch == name
    assert kb.get("torch.optim.lr_scheduler.StepLR").torch == "torch.optim.lr_scheduler.StepLR"


SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import Dataset
    from torch.utils.data.dataloader import DataLoader


    class Chars(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return torch.tensor([i, i])


    if __name__ == "__main__":
        print(len(Chars()))
""")


def test_r20_a_scripts_unread_torch_imports_are_not_kept_as_reexports():
    code = convert_source(SCRIPT, "chars.py").code
    assert re.search(r"^(import|from) torch(\.|\s|$)", code, re.MULTILINE) is None, code
    # Without the __main__ block the file may be a module others import DataLoader from (converted
    # alone: not known): the KB maps DataLoader, so MindSpore's name is imported in its place.
    module = convert_source(SCRIPT.split("\n\nif __name__")[0] + "\n", "chars.py").code
    assert "from mindspore.dataset import GeneratorDataset as DataLoader" in module
    assert re.search(r"^(import|from) torch(\.|\s|$)", module, re.MULTILINE) is None, module
