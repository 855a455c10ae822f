"""R26 compare-train on karpathy/minGPT's Trainer (../shared/realcode): a toy driver written here (a
sorting task, as minGPT's demo trains) imports the corpus's ``mingpt`` package; the project is converted
by ``torch2ms convert`` at test time and both drivers run unmodified side by side. The Trainer's
``RandomSampler(dataset, replacement=True, num_samples=int(1e10))`` is drawn lazily on the MindSpore side
(MindSpore would draw all 1e10 indices before the first batch).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from requires_support import CORPUS, require_kit

from torch2ms.convert import convert_tree
from torch2ms.trainrun import compare_train

STEPS, TOL = 4, 1e-4

DRIVER = """
import torch
from torch.utils.data import Dataset

from mingpt.model import GPT
from mingpt.trainer import Trainer
from mingpt.utils import set_seed


class SortDataset(Dataset):
    \"\"\"Sequences of 5 digits in 0..2 and their sorted copy; only the sorted half is predicted.\"\"\"

    def __len__(self):
        return 64

    def __getitem__(self, idx):
        inp = torch.tensor([(idx * 7 + k * k * 5) % 3 for k in range(5)], dtype=torch.long)
        sol = torch.sort(inp)[0]
        cat = torch.cat((inp, sol), dim=0)
        x = cat[:-1].clone()
        y = cat[1:].clone()
        y[:4] = -1
        return x, y


set_seed(3407)
model_config = GPT.get_default_config()
model_config.model_type = None
model_config.n_layer, model_config.n_head, model_config.n_embd = 2, 2, 16
model_config.vocab_size, model_config.block_size = 3, 9
model = GPT(model_config)
train_config = Trainer.get_default_config()
train_config.learning_rate = 5e-3
train_config.max_iters = 6
train_config.num_workers = 0
train_config.batch_size = 4
train_config.device = "cpu"
trainer = Trainer(train_config, model, SortDataset())
trainer.run()
"""


def _project(tmp_path: Path) -> Path:
    src = CORPUS / "karpathy" / "minGPT" / "mingpt"
    require_kit(src)
    project = tmp_path / "torch_project"
    shutil.copytree(src, project / "mingpt")  # the corpus's package beside the driver, as a user has it
    (project / "sort_demo.py").write_text(DRIVER, encoding="utf-8")
    return project


@pytest.mark.slow
@pytest.mark.differential
def test_r26_mingpt_trainer_trains_the_same(tmp_path):
    project = _project(tmp_path)
    convert_tree(str(project), str(tmp_path / "ms"))
    converted = (tmp_path / "ms" / "mingpt" / "trainer.py").read_text(encoding="utf-8")
    assert "sampled_dataset(" in converted  # the 1e10-sample RandomSampler drawn lazily
    rep = compare_train(
        str(project / "sort_demo.py"),
        str(tmp_path / "ms" / "sort_demo.py"),
        steps=STEPS,
        out_dir=str(tmp_path / "out"),
        cwd=str(tmp_path),
    )
    assert rep.error is None, rep.error
    assert len(rep.rows) == STEPS and max(r["rel"] for r in rep.rows) <= TOL, rep.first_divergence
    assert all(r["same_inputs"] for r in rep.rows)
    assert not [f for f in rep.findings if f["severity"] == "difference"], rep.findings
