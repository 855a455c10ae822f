"""Issues 12/13: ``datasets.MNIST(root, download=True)`` converts; the converted script fetches the files itself.

MindSpore's readers never download, so the conversion calls ``torch2ms.runtime.fetch_dataset`` (stdlib only)
where torch had ``download=True``. No network here: the files are generated in the test and served from
127.0.0.1; the helper is pointed at that server with ``TORCH2MS_DATASET_MIRROR`` and the generated files'
md5s, torchvision at the same server through its class attributes.
"""

from __future__ import annotations

import ast
import dataclasses
import gzip
import hashlib
import http.server
import io
import socket
import sys
import tarfile
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from requires_support import CORPUS, require_kit, require_module
from script_support import IDX_NAMES, load_script, mnist_idx

from torch2ms.convert import convert_source
from torch2ms.runtime import dataset_files
from torch2ms.runtime.dataset_files import MIRROR_ENV, fetch_dataset


class _Server:
    """A static file server on 127.0.0.1 that counts the requests it answers."""

    def __init__(self, folder: Path) -> None:
        served = self.requests = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self):
                served.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client that reads the headers only (torchvision's redirect check) resets the connection

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    server = _Server(folder)
    yield folder, server
    server.close()


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _write_mnist_gz(folder: Path, n: int = 5) -> tuple[str, str, str, str]:
    """n train and n-1 test images as torchvision's .gz idx files; their md5s in RELEASES order."""
    rng = np.random.default_rng(11)
    md5s = []
    for name in IDX_NAMES:
        packed = gzip.compress(mnist_idx(name, n if name.startswith("train") else n - 1, rng), mtime=0)
        (folder / f"{name}.gz").write_bytes(packed)
        md5s.append(_md5(packed))
    return tuple(md5s)  # type: ignore[return-value]


def _use_mnist_files(monkeypatch, server: _Server, md5s) -> None:
    monkeypatch.setenv(MIRROR_ENV, server.url)
    release = dataset_files.RELEASES["MNIST"]
    files = tuple((name, md5) for (name, _), md5 in zip(release.files, md5s))
    monkeypatch.setitem(dataset_files.RELEASES, "MNIST", dataclasses.replace(release, files=files))


TORCH_MNIST = """
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
loader = DataLoader(datasets.MNIST({root!r}, train=True, download=True, transform=transform), batch_size=2)
"""


@pytest.mark.differential
def test_r14_converted_mnist_download_fetches_and_gives_torchvisions_batches(tmp_path, served, monkeypatch):
    torchvision = require_module("torchvision")
    require_module("mindspore")
    folder, server = served
    md5s = _write_mnist_gz(folder)
    _use_mnist_files(monkeypatch, server, md5s)
    # torchvision downloads the same files from the same server
    monkeypatch.setattr(torchvision.datasets.MNIST, "mirrors", [server.url])
    monkeypatch.setattr(torchvision.datasets.MNIST, "resources", [(f"{n}.gz", m) for n, m in zip(IDX_NAMES, md5s)])
    (tmp_path / "torch_mnist.py").write_text(TORCH_MNIST.format(root=str(tmp_path / "t")))
    converted = convert_source(TORCH_MNIST.format(root=str(tmp_path / "m")))
    assert converted.error is None and "fetch_dataset('MNIST'" in converted.code
    (tmp_path / "ms_mnist.py").write_text(converted.code)
    tmod = load_script(tmp_path / "torch_mnist.py", "t2m_torch_fetch_mnist")
    before = len(server.requests)
    mmod = load_script(tmp_path / "ms_mnist.py", "t2m_ms_fetch_mnist")
    assert len(server.requests) - before == 4  # the converted script fetched the four files itself
    # MnistDataset reads every file named like its parts in raw/: the .gz files are kept one folder up
    assert sorted(p.name for p in (tmp_path / "m" / "MNIST" / "raw").iterdir()) == sorted(IDX_NAMES)
    assert sorted(p.name for p in (tmp_path / "m" / "MNIST").glob("*.gz")) == sorted(f"{n}.gz" for n in IDX_NAMES)
    t_batches = [tuple(v.numpy() for v in b) for b in tmod.loader]
    m_batches = [tuple(v.asnumpy() for v in b) for b in mmod.loader.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == 3
    for (t_img, t_lab), (m_img, m_lab) in zip(t_batches, m_batches):
        assert t_img.shape == m_img.shape
        np.testing.assert_allclose(m_img, t_img, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(m_lab, t_lab)
    # the root torchvision filled (.gz next to each part) becomes readable without fetching anything
    before = len(server.requests)
    fetch_dataset("MNIST", tmp_path / "t")
    assert not list((tmp_path / "t" / "MNIST" / "raw").glob("*.gz"))
    import mindspore.dataset as ds

    assert ds.MnistDataset(str(tmp_path / "t" / "MNIST" / "raw"), usage="train").get_dataset_size() == 5
    torchvision.datasets.MNIST(str(tmp_path / "t"), train=True, download=True)  # still complete for torchvision
    assert len(server.requests) == before


def test_r14_fetch_dataset_does_not_download_again(tmp_path, served, monkeypatch):
    folder, server = served
    _use_mnist_files(monkeypatch, server, _write_mnist_gz(folder))
    root = tmp_path / "data"
    assert fetch_dataset("MNIST", root) == root
    assert len(server.requests) == 4
    raw = root / "MNIST" / "raw"
    assert all((raw / n).is_file() for n in IDX_NAMES)
    assert fetch_dataset("MNIST", str(root)) == str(root)
    assert len(server.requests) == 4
    # unpacked files lost, downloads still there and intact: unpacked again, nothing fetched
    (raw / IDX_NAMES[0]).unlink()
    fetch_dataset("MNIST", root)
    assert len(server.requests) == 4 and (raw / IDX_NAMES[0]).is_file()
    # download=False (the script's own flag): nothing is touched
    assert fetch_dataset("MNIST", tmp_path / "elsewhere", download=False) == tmp_path / "elsewhere"
    assert not (tmp_path / "elsewhere").exists()


def test_r14_fetch_dataset_bad_md5_is_a_clear_error_and_leaves_no_file(tmp_path, served, monkeypatch):
    folder, server = served
    _write_mnist_gz(folder)
    monkeypatch.setenv(MIRROR_ENV, server.url)  # the official md5s: the served files do not match them
    with pytest.raises(RuntimeError) as err:
        fetch_dataset("MNIST", tmp_path / "data")
    text = str(err.value)
    assert f"{server.url}train-images-idx3-ubyte.gz: md5 " in text
    assert "expected f68b3c2dcbeaaa9fbdd348bbdeb94873" in text and MIRROR_ENV in text and "\n" not in text
    assert [p.name for p in (tmp_path / "data" / "MNIST").rglob("*")] == ["raw"]


def test_r14_fetch_dataset_offline_names_the_url_and_what_to_do(tmp_path, monkeypatch):
    # A port nothing can listen on while the fetch runs: held bound here, never listening (refuses connections).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{port}/mnist")
        with pytest.raises(RuntimeError) as err:
            fetch_dataset("FashionMNIST", tmp_path)
    text = str(err.value)
    assert text.startswith("FashionMNIST: could not fetch train-images-idx3-ubyte.gz")
    assert f"http://127.0.0.1:{port}/mnist/train-images-idx3-ubyte.gz: " in text
    assert f"put the file into {tmp_path / 'FashionMNIST'} yourself" in text and MIRROR_ENV in text


def _cifar_binary_archive(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_r14_fetch_dataset_unpacks_cifar10s_binary_release_where_cifar10dataset_reads(tmp_path, served, monkeypatch):
    folder, server = served
    members = {f"cifar-10-batches-bin/data_batch_{i}.bin": bytes([i]) * 3073 for i in range(1, 6)}
    members["cifar-10-batches-bin/test_batch.bin"] = bytes(3073)
    members["cifar-10-batches-bin/batches.meta.txt"] = b"airplane\n"
    archive = _cifar_binary_archive(members)
    (folder / "cifar-10-binary.tar.gz").write_bytes(archive)
    monkeypatch.setenv(MIRROR_ENV, server.url)
    release = dataset_files.RELEASES["CIFAR10"]
    monkeypatch.setitem(
        dataset_files.RELEASES,
        "CIFAR10",
        dataclasses.replace(release, files=(("cifar-10-binary.tar.gz", _md5(archive)),)),
    )
    fetch_dataset("CIFAR10", tmp_path)
    for name, data in members.items():
        assert (tmp_path / name).read_bytes() == data
    fetch_dataset("CIFAR10", tmp_path)
    assert server.requests == ["/cifar-10-binary.tar.gz"]


TORCH_CIFAR = """
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.49, 0.48, 0.45), (0.25, 0.24, 0.26))])
loader = DataLoader(datasets.CIFAR10(root={root!r}, train=False, download=True, transform=transform), batch_size=4)
"""


def _cifar10_releases(folder: Path) -> tuple[dict[str, str], str]:
    """One test batch of 10000 images (MindSpore reads whole batches) as torchvision's Python release and as
    the binary release, both served; tiny train batches (not read for train=False). Returns the Python
    release's per-file md5s and the binary archive's md5."""
    import pickle

    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, (10000, 3072), np.uint8)
    labels = rng.integers(0, 10, 10000).tolist()
    py_files = {"cifar-10-batches-py/test_batch": pickle.dumps({"data": data, "labels": labels})}
    py_files["cifar-10-batches-py/batches.meta"] = pickle.dumps({"label_names": [str(i) for i in range(10)]})
    bin_files = {
        "cifar-10-batches-bin/test_batch.bin": b"".join(bytes([k]) + row.tobytes() for k, row in zip(labels, data))
    }
    for i in range(1, 6):
        py_files[f"cifar-10-batches-py/data_batch_{i}"] = pickle.dumps({"data": data[:2], "labels": labels[:2]})
        bin_files[f"cifar-10-batches-bin/data_batch_{i}.bin"] = bytes(3073)
    (folder / "cifar-10-python.tar.gz").write_bytes(_cifar_binary_archive(py_files))
    binary = _cifar_binary_archive(bin_files)
    (folder / "cifar-10-binary.tar.gz").write_bytes(binary)
    return {name.rsplit("/", 1)[1]: _md5(d) for name, d in py_files.items()}, _md5(binary)


@pytest.mark.differential
def test_r14_converted_cifar10_download_fetches_the_binary_release_and_gives_torchvisions_batches(
    tmp_path, served, monkeypatch
):
    torchvision = require_module("torchvision")
    require_module("mindspore")
    folder, server = served
    py_md5s, bin_md5 = _cifar10_releases(folder)
    tv = torchvision.datasets.CIFAR10
    monkeypatch.setattr(tv, "url", server.url + "cifar-10-python.tar.gz")
    monkeypatch.setattr(tv, "tgz_md5", _md5((folder / "cifar-10-python.tar.gz").read_bytes()))
    monkeypatch.setattr(tv, "train_list", [[f"data_batch_{i}", py_md5s[f"data_batch_{i}"]] for i in range(1, 6)])
    monkeypatch.setattr(tv, "test_list", [["test_batch", py_md5s["test_batch"]]])
    monkeypatch.setattr(tv, "meta", dict(tv.meta, md5=py_md5s["batches.meta"]))
    monkeypatch.setenv(MIRROR_ENV, server.url)
    release = dataset_files.RELEASES["CIFAR10"]
    monkeypatch.setitem(
        dataset_files.RELEASES, "CIFAR10", dataclasses.replace(release, files=(("cifar-10-binary.tar.gz", bin_md5),))
    )
    (tmp_path / "torch_cifar.py").write_text(TORCH_CIFAR.format(root=str(tmp_path / "t")))
    converted = convert_source(TORCH_CIFAR.format(root=str(tmp_path / "m")))
    assert converted.error is None and "fetch_dataset('CIFAR10'" in converted.code
    (tmp_path / "ms_cifar.py").write_text(converted.code)
    tmod = load_script(tmp_path / "torch_cifar.py", "t2m_torch_fetch_cifar")
    mmod = load_script(tmp_path / "ms_cifar.py", "t2m_ms_fetch_cifar")
    # the converted script fetched the binary release once (torchvision fetched its Python one: it asks twice)
    assert server.requests.count("/cifar-10-binary.tar.gz") == 1 and "/cifar-10-python.tar.gz" in server.requests
    t_batches = [tuple(v.numpy() for v in b) for b, _ in zip(tmod.loader, range(3))]
    m_batches = [tuple(v.asnumpy() for v in b) for b, _ in zip(mmod.loader.create_tuple_iterator(), range(3))]
    assert len(t_batches) == len(m_batches) == 3
    for (t_img, t_lab), (m_img, m_lab) in zip(t_batches, m_batches):
        assert t_img.shape == m_img.shape == (4, 3, 32, 32)
        np.testing.assert_allclose(m_img, t_img, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(m_lab, t_lab)


TORCH_FLOWERS = """
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

transform = transforms.Compose([transforms.Resize(6), transforms.ToTensor()])
loader = DataLoader(datasets.Flowers102({root!r}, split="train", download=True, transform=transform), batch_size=2)
"""


def _write_flowers(folder: Path) -> dict[str, tuple[str, str]]:
    """4 JPEGs in 102flowers.tgz (jpg/), labels and splits in .mat files: torchvision's _file_dict for them."""
    import scipy.io
    from PIL import Image

    rng = np.random.default_rng(4)
    members = {}
    for i in range(1, 5):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (10, 12, 3), np.uint8)).save(buf, format="JPEG")
        members[f"jpg/image_{i:05d}.jpg"] = buf.getvalue()
    (folder / "102flowers.tgz").write_bytes(_cifar_binary_archive(members))
    scipy.io.savemat(folder / "imagelabels.mat", {"labels": np.array([[3, 1, 102, 7]])})
    splits = {"trnid": np.array([[1, 3, 4]]), "valid": np.array([[2]]), "tstid": np.array([[4]])}
    scipy.io.savemat(folder / "setid.mat", splits)
    names = {"image": "102flowers.tgz", "label": "imagelabels.mat", "setid": "setid.mat"}
    return {key: (name, _md5((folder / name).read_bytes())) for key, name in names.items()}


@pytest.mark.differential
def test_r14_converted_flowers102_download_fetches_and_gives_torchvisions_batches(tmp_path, served, monkeypatch):
    torchvision = require_module("torchvision")
    require_module("mindspore")
    require_module("scipy")
    folder, server = served
    file_dict = _write_flowers(folder)
    monkeypatch.setattr(torchvision.datasets.Flowers102, "_download_url_prefix", server.url)
    monkeypatch.setattr(torchvision.datasets.Flowers102, "_file_dict", file_dict)
    monkeypatch.setenv(MIRROR_ENV, server.url)
    release = dataset_files.RELEASES["Flowers102"]
    files = tuple(file_dict[key] for key in ("image", "label", "setid"))
    monkeypatch.setitem(dataset_files.RELEASES, "Flowers102", dataclasses.replace(release, files=files))
    (tmp_path / "torch_flowers.py").write_text(TORCH_FLOWERS.format(root=str(tmp_path / "t")))
    converted = convert_source(TORCH_FLOWERS.format(root=str(tmp_path / "m")))
    assert converted.error is None and "fetch_dataset('Flowers102'" in converted.code
    (tmp_path / "ms_flowers.py").write_text(converted.code)
    tmod = load_script(tmp_path / "torch_flowers.py", "t2m_torch_fetch_flowers")
    before = len(server.requests)
    mmod = load_script(tmp_path / "ms_flowers.py", "t2m_ms_fetch_flowers")
    assert sorted(server.requests[before:]) == ["/102flowers.tgz", "/imagelabels.mat", "/setid.mat"]
    t_batches = [tuple(v.numpy() for v in b) for b in tmod.loader]
    m_batches = [tuple(v.asnumpy() for v in b) for b in mmod.loader.create_tuple_iterator()]
    assert len(t_batches) == len(m_batches) == 2
    for (t_img, t_lab), (m_img, m_lab) in zip(t_batches, m_batches):
        assert t_img.shape == m_img.shape
        np.testing.assert_allclose(m_img, t_img, atol=1e-6)
        np.testing.assert_array_equal(m_lab, t_lab)


def test_r14_cifar100_and_svhn_download_fetch_their_release():
    head = "from torchvision import datasets\n"
    code = convert_source(
        head + "c = datasets.CIFAR100('d', download=True)\ns = datasets.SVHN('d', split='extra', download=True)\n"
    ).code
    assert "str(fetch_dataset('CIFAR100', 'd')) + '/cifar-100-binary'" in code
    assert "ds.SVHNDataset(str(fetch_dataset('SVHN/extra', 'd')), usage='extra'" in code
    assert set(dataset_files.RELEASES) >= {
        "MNIST",
        "FashionMNIST",
        "KMNIST",
        "CIFAR10",
        "CIFAR100",
        "SVHN/extra",
        "Flowers102",
    }


def _framework_imports(code: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(code)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        found += [n for n in names if n.split(".")[0] in ("torch", "torchvision")]
    return found


def test_r14_converted_pytorch_examples_mnist_imports_no_torch_and_fetches_its_data():
    src = CORPUS / "pytorch" / "examples" / "mnist" / "main.py"
    require_kit(src)
    res = convert_source(src.read_text(encoding="utf-8"))
    assert res.error is None
    assert _framework_imports(res.code) == []
    reads = [line for line in res.code.splitlines() if "ds.MnistDataset(" in line]
    # the train set is built with download=True, the test set (built after it) without, as in torch
    assert len(reads) == 2 and "ds.MnistDataset(str(fetch_dataset('MNIST', '../data')) + '/MNIST/raw'" in reads[0]
    assert "ds.MnistDataset('../data/MNIST/raw', usage='test'" in reads[1]
    assert "not converted" not in "\n".join(line for line in res.code.splitlines() if "MNIST" in line)


def test_r14_fetch_dataset_module_imports_the_standard_library_only():
    tree = ast.parse(Path(dataset_files.__file__).read_text(encoding="utf-8"))
    roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}, roots
    assert textwrap.dedent(dataset_files.__doc__ or "").count(MIRROR_ENV) == 1


BLOCKED_RUN = """
import runpy, sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "torch2ms"):
            raise ImportError(f"{name} is blocked: the converted project must run with MindSpore alone")
sys.meta_path.insert(0, _Block())
sys.path.insert(0, ".")
sys.argv = ["main.py", "--batch-size", "2", "--test-batch-size", "2", "--epochs", "1", "--dry-run", "--no-accel"]
runpy.run_path("main.py", run_name="__main__")
"""


@pytest.mark.slow
def test_r14_converted_pytorch_examples_mnist_starts_without_torch_and_fetches_mnist(tmp_path, served):
    """The converted pytorch/examples mnist script runs with torch, torchvision and torch2ms unimportable: the
    vendored fetch_dataset fetches MNIST (generated here, served on 127.0.0.1) into ../data and training starts."""
    import os
    import shutil
    import subprocess

    from torch2ms.cli import main as cli_main

    src = CORPUS / "pytorch" / "examples" / "mnist"
    require_kit(src / "main.py")
    folder, server = served
    md5s = _write_mnist_gz(folder)
    (tmp_path / "src").mkdir()
    shutil.copy(src / "main.py", tmp_path / "src" / "main.py")
    out = tmp_path / "out"
    assert cli_main(["convert", str(tmp_path / "src"), "-o", str(out)]) == 0
    vendored = out / "torch2ms_runtime" / "dataset_files.py"
    text = vendored.read_text(encoding="utf-8")
    for (_, official), md5 in zip(dataset_files.RELEASES["MNIST"].files, md5s):
        text = text.replace(official, md5)  # the vendored copy is the project's to edit: pinned to these files
    vendored.write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {MIRROR_ENV: server.url, "GLOG_v": "3"}
    res = subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN], cwd=out, capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Train Epoch: 1 [0/5" in res.stdout and "Test set: Average loss:" in res.stdout
    assert sorted(p.name for p in (tmp_path / "data" / "MNIST" / "raw").iterdir()) == sorted(IDX_NAMES)
    assert len(server.requests) == 4
