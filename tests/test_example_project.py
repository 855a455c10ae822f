"""R11/R25/R26 on a whole project: examples/project (ImageFolder CNN, LSTM classifier, tiny GPT), converted
with convert_tree, trains like the torch original.

Each converted training function runs in GRAPH_MODE from the torch model's initial weights (copied
through the KB's state-dict renames) on the same batches as torch, for 50 steps; the loss curves must
agree step by step to 1e-4 relative. The CNN's batches come from the example's own ImageFolder +
transforms + DataLoader pipeline (shuffled, augmented), drawn once on the torch side and fed to both.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from requires_support import require_module

from torch2ms.convert import convert_tree
from torch2ms.factory import use_vendored_runtime

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "project"
SCRIPTS = ("data", "models", "train_cnn", "train_lstm", "train_gpt")
STEPS = 50
LOSS_TOL = 1e-4


def import_scripts(folder: Path, keep: bool = False) -> SimpleNamespace:
    """The project's modules imported from `folder` (torch original or converted copy). Without `keep`
    they leave sys.modules as it was, so both versions can live in one process; MindSpore's graph
    compiler resolves a function's globals through sys.modules[fn.__module__], so the converted side
    keeps its names there (until :func:`forget_scripts`)."""
    saved = {n: sys.modules.pop(n) for n in SCRIPTS if n in sys.modules}
    use_vendored_runtime(folder / f"{SCRIPTS[0]}.py")  # the converted side's own torch2ms_runtime
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        return SimpleNamespace(**{n: importlib.import_module(n) for n in SCRIPTS})
    finally:
        sys.path.remove(str(folder))
        if not keep:
            forget_scripts()
            sys.modules.update(saved)


def forget_scripts() -> None:
    for n in SCRIPTS:
        sys.modules.pop(n, None)


def copy_weights(tnet, mnet) -> None:
    """torch state_dict → MindSpore parameters through the KB renames (what `torch2ms weights` does);
    torch buffers MindSpore keeps as plain tensors (the GPT's causal mask) are left out."""
    import mindspore as ms

    from torch2ms.kb import load_kb
    from torch2ms.weights.rename import convert_state_dict

    state = {k: v.detach().numpy() for k, v in tnet.state_dict().items()}
    layer_types = {
        name: f"torch.nn.{type(m).__name__}"
        for name, m in tnet.named_modules()
        if type(m).__module__.startswith("torch.nn")
    }
    params = convert_state_dict(state, layer_types, load_kb())
    names = {n for n, _ in mnet.parameters_and_names()}
    assert names <= set(params), sorted(names - set(params))
    not_loaded, _ = ms.load_param_into_net(
        mnet, {k: ms.Parameter(ms.Tensor(v), name=k) for k, v in params.items() if k in names}
    )
    assert not not_loaded


class Epochs:
    """A loader whose every pass yields the next epoch's batches (torch's shuffled epochs, replayed)."""

    def __init__(self, epochs: list) -> None:
        self._epochs = iter(epochs)

    def __iter__(self):
        return iter(next(self._epochs))


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    require_module("torch")
    require_module("mindspore")
    out = tmp_path_factory.mktemp("project") / "ms"
    rep = convert_tree(EXAMPLE, out)
    assert not rep.failed, [(f.path, f.error) for f in rep.failed]
    torch_side = import_scripts(EXAMPLE)
    yield SimpleNamespace(out=out, torch=torch_side, ms=import_scripts(out, keep=True))
    forget_scripts()


def graph_mode_run(fn, *args, **kwargs):
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return fn(*args, **kwargs)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def assert_curves(expected, got) -> float:
    expected, got = np.asarray(expected), np.asarray(got)
    assert len(expected) == len(got) == STEPS
    assert expected[-5:].mean() < expected[:5].mean()  # it actually trained
    rel = np.abs(got - expected) / np.abs(expected)
    assert rel.max() <= LOSS_TOL, f"max rel {rel.max():.2e} at step {rel.argmax()}: {list(zip(expected, got))}"
    print(f"max rel loss diff over {STEPS} steps: {rel.max():.2e}")
    return float(rel.max())


def cnn_epochs(tdata, root: Path, epochs: int) -> list:
    """`epochs` passes of the example's torch training pipeline (ImageFolder, flips, shuffle), as numpy."""
    import torch

    torch.manual_seed(0)
    loader, _ = tdata.image_loaders(str(root), batch_size=14)  # 72 images, drop_last: 5 batches an epoch
    return [[(x.numpy(), y.numpy()) for x, y in loader] for _ in range(epochs)]


@pytest.mark.differential
@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_r26_example_cnn_imagefolder_loss_curve_matches_in_graph_mode(project, tmp_path, optimizer):
    """SGD-momentum + StepLR, and AdamW + CosineAnnealingLR, both stepped per epoch: 10 epochs x 5 batches."""
    import mindspore as ms
    import torch

    epochs = 10
    batches = cnn_epochs(project.torch.data, tmp_path / "shapes", epochs)
    assert [len(e) for e in batches] == [5] * epochs
    torch.manual_seed(0)
    tnet, mnet = project.torch.models.SmallCNN(num_classes=3), project.ms.models.SmallCNN(num_classes=3)
    copy_weights(tnet, mnet)

    t_opt, t_sched = project.torch.train_cnn.make_optimizer(tnet.parameters(), optimizer, epochs)
    expected = project.torch.train_cnn.train(
        tnet,
        Epochs([[(torch.from_numpy(x), torch.from_numpy(y)) for x, y in e] for e in batches]),
        t_opt,
        t_sched,
        epochs,
    )
    # the converted main() passes model.get_parameters() (KB: torch.nn.Module.parameters)
    m_opt, m_sched = project.ms.train_cnn.make_optimizer(mnet.get_parameters(), optimizer, epochs)
    got = graph_mode_run(
        project.ms.train_cnn.train,
        mnet,
        Epochs([[(ms.Tensor(x), ms.Tensor(y)) for x, y in e] for e in batches]),
        m_opt,
        m_sched,
        epochs,
    )
    assert t_sched.get_last_lr()[0] == pytest.approx(float(m_sched.get_last_lr()[0]), rel=1e-6)
    assert_curves(expected, got)


@pytest.mark.differential
@pytest.mark.slow
def test_r26_example_lstm_classifier_loss_curve_matches_in_graph_mode(project):
    """Embedding + LSTM + Linear, Adam with gradient clipping: 10 epochs x 5 batches."""
    import mindspore as ms
    import torch

    tokens, labels = (t.numpy() for t in project.torch.data.sentiment_data(n=160))
    batches = [(tokens[i : i + 32], labels[i : i + 32]) for i in range(0, 160, 32)]
    torch.manual_seed(0)
    vocab = project.torch.data.VOCAB_SIZE
    tnet, mnet = project.torch.models.LSTMClassifier(vocab), project.ms.models.LSTMClassifier(vocab)
    copy_weights(tnet, mnet)
    expected = project.torch.train_lstm.train(
        tnet, [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches], epochs=10
    )
    got = graph_mode_run(
        project.ms.train_lstm.train, mnet, [(ms.Tensor(x), ms.Tensor(y)) for x, y in batches], epochs=10
    )
    assert_curves(expected, got)


@pytest.mark.differential
@pytest.mark.slow
def test_r26_example_tiny_gpt_loss_curve_matches_in_graph_mode(project):
    """Causal self-attention written with Linear/softmax/masked_fill, AdamW, cosine LR per step, clipping."""
    import mindspore as ms
    import torch

    batches = [(x.numpy(), y.numpy()) for x, y in project.torch.data.text_batches(STEPS)]
    torch.manual_seed(0)
    vocab = len(project.torch.data.CHARS)
    tnet, mnet = project.torch.models.TinyGPT(vocab), project.ms.models.TinyGPT(vocab)
    copy_weights(tnet, mnet)
    expected = project.torch.train_gpt.train(tnet, [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches])
    got = graph_mode_run(project.ms.train_gpt.train, mnet, [(ms.Tensor(x), ms.Tensor(y)) for x, y in batches])
    assert_curves(expected, got)


@pytest.mark.differential
def test_r25_example_imagefolder_pipeline_converted_matches_torch(project, tmp_path, monkeypatch):
    """check-data on the CNN's validation pipeline: ImageFolder + Resize/ToTensor/Normalize + DataLoader."""
    from torch2ms.data import check_data

    project.torch.data.make_image_folder(str(tmp_path / "shapes"))
    monkeypatch.setenv("SHAPES_DIR", str(tmp_path / "shapes"))  # read when check-data imports data.py
    rep = check_data(f"{EXAMPLE}/data.py:val_loader", f"{project.out}/data.py:val_loader", batches=2)
    assert rep.ok, rep.to_json()


def test_r11_example_project_converts_without_unconverted_training_code(project):
    torch_import = re.compile(r"^\s*(import|from)\s+torch(?!2ms)", re.M)  # torch or torchvision, not torch2ms.runtime
    for name in ("train_cnn", "train_lstm", "train_gpt"):
        code = (project.out / f"{name}.py").read_text()
        assert "class TrainStep(nn.Cell)" in code and "not converted" not in code, name
        assert not torch_import.search(code), name
    for name in ("models", "data"):  # data: ImageFolder/transforms/DataLoader → mindspore.dataset
        code = (project.out / f"{name}.py").read_text()
        assert "not converted" not in code and not torch_import.search(code), name
