"""``download=True`` for converted torchvision datasets: fetch the files MindSpore's reader needs.

MindSpore's dataset readers never download. ``fetch_dataset(name, root)`` fetches the release torchvision
fetches (same mirrors, same md5 checks; for CIFAR the *binary* release, which MindSpore reads, instead of
torchvision's Python pickles), unpacks it into the folder the reader reads under ``root`` (MNIST's
``*-ubyte`` files in ``root/MNIST/raw``, their ``.gz`` in ``root/MNIST``) and returns ``root``. Files already
there are not fetched again; a root torchvision filled is used as it is. Standard library only (urllib): nothing from torch2ms,
torch or MindSpore is imported, so a converted project can carry this file on its own.

``TORCH2MS_DATASET_MIRROR``: a base URL (``http://host/path/``) serving the same file names; when set it is
used instead of the official mirrors (an offline copy, a local cache). The md5 check still applies.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tarfile
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = ["fetch_dataset"]

MIRROR_ENV = "TORCH2MS_DATASET_MIRROR"
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Release:
    """One dataset's download: where it goes, its files with their md5, and what it unpacks to."""

    folder: str  # under root, where the files unpack (the folder the reader reads)
    files: tuple[tuple[str, str], ...]  # (file name, md5)
    mirrors: tuple[str, ...]
    members: tuple[str, ...]  # unpacked files (relative to folder) whose presence means "already fetched"
    downloads: str = ""  # under root, where the downloaded files are kept


def _idx_release(folder: str, mirrors: tuple[str, ...], md5s: tuple[str, str, str, str]) -> Release:
    names = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    # the .gz files stay out of the reader's folder: MnistDataset reads every file named like its parts there
    downloads = os.path.dirname(folder)
    return Release(folder, tuple((f"{n}.gz", m) for n, m in zip(names, md5s)), mirrors, names, downloads)


_TORONTO = ("https://www.cs.toronto.edu/~kriz/",)
_SVHN = ("http://ufldl.stanford.edu/housenumbers/",)

# torchvision's mirrors and md5s (torchvision/datasets/mnist.py, svhn.py, flowers102.py); CIFAR's binary releases and their
# md5s are the ones the CIFAR page (cs.toronto.edu/~kriz/cifar.html) lists next to the Python ones torchvision uses.
RELEASES: dict[str, Release] = {
    "MNIST": _idx_release(
        "MNIST/raw",
        ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
        (
            "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "d53e105ee54ea40749a09fcbcd1e9432",
            "9fb629c4189551a2d022fa330f9573f3",
            "ec29112dd5afa0611ce80d1b7f02629c",
        ),
    ),
    "FashionMNIST": _idx_release(
        "FashionMNIST/raw",
        ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
        (
            "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "25c81989df183df01b3e8a0aad5dffbe",
            "bef4ecab320f06d8554ea6380940ec79",
            "bb300cfdad3c16e7a12a480ee83cd310",
        ),
    ),
    "KMNIST": _idx_release(
        "KMNIST/raw",
        ("http://codh.rois.ac.jp/kmnist/dataset/kmnist/",),
        (
            "bdb82020997e1d708af4cf47b453dcf7",
            "e144d726b3acfaa3e44228e80efcd344",
            "5c965bf0a639b31b8f53240b1b52f4d7",
            "7320c461ea6c1c855c0b718fb2a4b134",
        ),
    ),
    "CIFAR10": Release(
        "",
        (("cifar-10-binary.tar.gz", "c32a1d4ab5d03f1284b67883e8d87530"),),
        _TORONTO,
        tuple(f"cifar-10-batches-bin/{n}.bin" for n in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]),
    ),
    "CIFAR100": Release(
        "",
        (("cifar-100-binary.tar.gz", "03b5dce01913d631647c71ecec9e9cb8"),),
        _TORONTO,
        ("cifar-100-binary/train.bin", "cifar-100-binary/test.bin"),
    ),
    # torchvision/datasets/flowers102.py: the JPEGs' archive (unpacked to jpg/) and the two .mat files beside it
    "Flowers102": Release(
        "flowers-102",
        (
            ("102flowers.tgz", "52808999861908f626f3c1f4e79d11fa"),
            ("imagelabels.mat", "e0620be6f572b9609742df49c70aed4d"),
            ("setid.mat", "a5357ecc9cb78c4bef273ce3793fc85c"),
        ),
        ("https://www.robots.ox.ac.uk/~vgg/data/flowers/102/",),
        ("jpg/image_00001.jpg", "imagelabels.mat", "setid.mat"),
        "flowers-102",
    ),
    "SVHN/train": Release("", (("train_32x32.mat", "e26dedcc434d2e4c54c9b2d4a06d8373"),), _SVHN, ("train_32x32.mat",)),
    "SVHN/test": Release("", (("test_32x32.mat", "eb5a983be6a315427106f1b164d9cef3"),), _SVHN, ("test_32x32.mat",)),
    "SVHN/extra": Release("", (("extra_32x32.mat", "a93ce644f1a588dc4d68dda5feec44a7"),), _SVHN, ("extra_32x32.mat",)),
}


def fetch_dataset(name: str, root: Any, download: Any = True) -> Any:
    """torchvision's ``download=True`` for dataset ``name`` (a key of ``RELEASES``): ``root``, its files in place.

    ``download`` false: nothing is fetched (the torch script's flag, decided at run time).
    """
    if not download:
        return root
    release = RELEASES[name]
    folder = os.path.join(os.fspath(root), release.folder)
    downloads = os.path.join(os.fspath(root), release.downloads)
    _move_torchvision_downloads(release, folder, downloads)
    if all(os.path.isfile(os.path.join(folder, m)) for m in release.members):
        return root
    os.makedirs(folder, exist_ok=True)
    os.makedirs(downloads, exist_ok=True)
    for file_name, md5 in release.files:
        path = os.path.join(downloads, file_name)
        if not (os.path.isfile(path) and _md5(path) == md5):
            _download(name, file_name, md5, path, release.mirrors)
        _unpack(path, folder)
    return root


def _move_torchvision_downloads(release: Release, folder: str, downloads: str) -> None:
    """torchvision keeps ``x.gz`` next to ``x`` in MNIST/raw, where MindSpore's reader then fails on it: a root
    torchvision filled is made readable by moving each such ``.gz`` to the downloads folder (torchvision checks
    only the unpacked files, so it does not fetch them again)."""
    if folder == downloads:
        return
    for file_name, _ in release.files:
        stray = os.path.join(folder, file_name)
        if file_name.endswith(".gz") and os.path.isfile(stray) and os.path.isfile(stray[:-3]):
            os.replace(stray, os.path.join(downloads, file_name))


def _mirrors(official: tuple[str, ...]) -> tuple[str, ...]:
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        return official
    return (mirror if mirror.endswith("/") else mirror + "/",)


def _download(name: str, file_name: str, md5: str, path: str, official: tuple[str, ...]) -> None:
    """Tries each mirror in turn; the file appears at ``path`` only once its md5 matches."""
    errors = []
    for base in _mirrors(official):
        url = base + file_name
        part = f"{path}.{os.getpid()}.part"  # one per process: data-parallel workers may fetch at once
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, open(part, "wb") as out:
                shutil.copyfileobj(response, out)
        except (OSError, ValueError) as e:  # URLError and timeouts are OSErrors; ValueError: a malformed URL
            errors.append(f"{url}: {getattr(e, 'reason', e)}")
            _remove(part)
            continue
        got = _md5(part)
        if got == md5:
            os.replace(part, path)
            return
        errors.append(f"{url}: md5 {got}, expected {md5}")
        _remove(part)
    raise RuntimeError(
        f"{name}: could not fetch {file_name} ({'; '.join(errors)}); put the file into {os.path.dirname(path)} "
        f"yourself, or set {MIRROR_ENV} to a URL serving it"
    )


def _unpack(path: str, folder: str) -> None:
    """``x.gz`` → ``folder/x``; ``x.tar.gz`` → its members under ``folder``."""
    if path.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path, "r:gz") as tar:
            # the "data" filter refuses absolute paths, links out of the folder and device files
            if hasattr(tarfile, "data_filter"):
                tar.extractall(folder, filter="data")
            else:  # pragma: no cover - Python before 3.11.4
                tar.extractall(folder)
    elif path.endswith(".gz"):
        target = os.path.join(folder, os.path.basename(path)[:-3])
        part = f"{target}.{os.getpid()}.part"
        with gzip.open(path, "rb") as src, open(part, "wb") as out:
            shutil.copyfileobj(src, out)
        os.replace(part, target)


def _md5(path: str) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
