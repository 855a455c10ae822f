"""torchvision's model architectures for converted projects: converted from the installed torchvision.

A project that builds ``torchvision.models.resnet18(...)`` (or uses ``torchvision.ops`` layers such
as ``Conv2dNormActivation``) gets the architectures as torch2ms converts them from torchvision's own
source: the same module tree and attribute names (``backbone.fc = nn.Linear(...)`` keeps working), the
same parameter names (``torch2ms weights`` converts a torchvision checkpoint), the same numbers. They
are written at conversion time into the output tree as the package ``torchvision_ms`` (third-party
code is never shipped with torch2ms), and the converted code reaches them through
``torch2ms.runtime.tv_models`` / ``tv_ops``.

Only the classification models and the ``ops`` layers they use are converted; the few torchvision
modules they import that are not architectures (``utils``, hub downloads, the weights' preprocessing
presets) are replaced by small shims over ``torch2ms.runtime``. The result is cached per torchvision
version and torch2ms source (``$TORCH2MS_CACHE_DIR``), so a second conversion copies it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..i18n import _, language
from ..kb import KB
from ..kb.cache import cache_dir
from .pipeline import convert_source

__all__ = [
    "PACKAGE",
    "converted_package",
    "ensure_importable",
    "torchvision_root",
    "uses_package",
    "write_package",
    "write_package_or_reason",
]

PACKAGE = "torchvision_ms"
# torchvision modules converted as they are (relative to the torchvision package).
CONVERTED = (
    "_utils.py",
    "models/_api.py",
    "models/_meta.py",
    "models/_utils.py",
    "models/alexnet.py",
    "models/convnext.py",
    "models/densenet.py",
    "models/efficientnet.py",
    "models/googlenet.py",
    "models/inception.py",
    "models/mnasnet.py",
    "models/mobilenet.py",
    "models/mobilenetv2.py",
    "models/mobilenetv3.py",
    "models/regnet.py",
    "models/resnet.py",
    "models/shufflenetv2.py",
    "models/squeezenet.py",
    "models/swin_transformer.py",
    "models/vgg.py",
    "models/vision_transformer.py",
    "ops/drop_block.py",
    "ops/feature_pyramid_network.py",
    "ops/focal_loss.py",
    "ops/misc.py",
    "ops/stochastic_depth.py",
)
# torchvision.models modules whose names models/__init__ re-exports (maxvit: einsum has no CPU kernel).
MODEL_MODULES = tuple(
    p[len("models/") : -3] for p in CONVERTED if p.startswith("models/") and not p.startswith("models/_")
)

_SHIMS = {
    "__init__.py": '"""{header}"""\n\nfrom . import models, ops\n',  # header: in the language of the marks
    "models/__init__.py": "".join(f"from .{m} import *\n" for m in MODEL_MODULES)
    + "from ._api import get_model, get_model_builder, get_model_weights, get_weight, list_models, Weights, WeightsEnum\n",
    "ops/__init__.py": "from .drop_block import DropBlock2d, DropBlock3d, drop_block2d, drop_block3d\n"
    "from .feature_pyramid_network import FeaturePyramidNetwork\nfrom .focal_loss import sigmoid_focal_loss\n"
    "from .misc import Conv2dNormActivation, Conv3dNormActivation, FrozenBatchNorm2d, MLP, Permute, SqueezeExcitation\n"
    "from .stochastic_depth import StochasticDepth, stochastic_depth\n",
    "utils.py": "from torch2ms.runtime.vision import log_api_usage_once as _log_api_usage_once, make_ntuple as _make_ntuple\n",
    "_internally_replaced_utils.py": "from torch2ms.runtime.vision import load_state_dict_from_url\n",
    "transforms/__init__.py": "from torch2ms.runtime.vision import InterpolationMode\n",
    "transforms/_presets.py": "from torch2ms.runtime.vision import ImageClassification, InterpolationMode\n",
}
# Converted code that reaches the package imports one of these helpers (convert/names.py writes the import).
_USES = re.compile(r"^from torch2ms\.runtime import [^\n]*\btv_(?:models|ops)\b", re.MULTILINE)
# torchvision's absolute imports of itself, inside the converted modules (efficientnet: torchvision.ops).
_SELF_IMPORT = re.compile(r"^(\s*from\s+)torchvision(?=[.\s])", re.MULTILINE)


def torchvision_root() -> Path | None:
    """The installed torchvision package's folder, found without importing it (nor torch)."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _cache_key(tv_root: Path) -> str:
    """torchvision's version, the language of the marks and every torch2ms source, data and catalog file:
    any change converts again."""
    digest = hashlib.sha256(importlib.metadata.version("torchvision").encode())
    digest.update(language().encode())
    src = Path(__file__).resolve().parents[1]
    for path in sorted(p for p in src.rglob("*") if p.suffix in (".py", ".toml", ".mo")):
        digest.update(str(path.relative_to(src)).encode())
        digest.update(path.read_bytes())
    for rel in CONVERTED:
        digest.update((tv_root / rel).read_bytes())
    return digest.hexdigest()[:16]


def _convert_into(tv_root: Path, dest: Path, kb: KB | None) -> list[str]:
    """Convert the architecture modules into ``dest`` (the package folder); return what was left unconverted."""
    left: list[str] = []
    roots = frozenset({"torchvision", "models", "ops", "transforms", "utils", "_utils"})
    for rel in CONVERTED:
        source = (tv_root / rel).read_text(encoding="utf-8")
        converted = convert_source(source, rel, kb=kb, local_roots=roots)
        if converted.error:
            left.append(f"{rel}: {converted.error}")
        left += [f"{rel}:{c.line}: {c.api}" for c in converted.changes if c.action == "not-converted"]
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_SELF_IMPORT.sub(rf"\g<1>{PACKAGE}", converted.code), encoding="utf-8")
    version = importlib.metadata.version("torchvision")
    for rel, text in _SHIMS.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel == "__init__.py":
            header = _("torchvision's architectures converted to MindSpore by torch2ms {version}.")
            text = text.format(header=header.format(version=version))
        target.write_text(text, encoding="utf-8")
    return left


def converted_package(kb: KB | None = None) -> Path:
    """The folder holding ``torchvision_ms`` for the installed torchvision (converted once, then cached)."""
    if kb is None:
        return _default_package()
    return _build_package(kb)


@functools.cache
def _default_package() -> Path:
    return _build_package(None)


def _build_package(kb: KB | None) -> Path:
    tv_root = torchvision_root()
    if tv_root is None:
        raise FileNotFoundError(_("torchvision is not installed: torch2ms converts its models from its source"))
    home = cache_dir() / "torchvision_ms" / _cache_key(tv_root)
    if (home / PACKAGE / "__init__.py").exists():
        return home
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=home.parent))
    try:
        left = _convert_into(tv_root, tmp / PACKAGE, kb)
        (tmp / PACKAGE / "UNCONVERTED.txt").write_text("".join(f"{line}\n" for line in left), encoding="utf-8")
        try:
            tmp.rename(home)
        except OSError:  # another process converted it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return home


def write_package(out_dir: Path, kb: KB | None = None) -> Path:
    """Copy ``torchvision_ms`` into a converted project's output folder; return its path there."""
    target = Path(out_dir) / PACKAGE
    shutil.copytree(converted_package(kb) / PACKAGE, target, dirs_exist_ok=True)
    return target


def uses_package(code: str) -> bool:
    """Does this converted module build torchvision architectures (``tv_models`` / ``tv_ops``)?"""
    return bool(_USES.search(code))


def write_package_or_reason(out_dir: Path, kb: KB | None = None) -> str:
    """Write ``torchvision_ms`` into the output folder; the report's line about it (written or why not)."""
    try:
        write_package(out_dir, kb)
    except FileNotFoundError as exc:
        text = _("{package} not written: {error}; the converted code needs it to build torchvision models")
        return text.format(package=PACKAGE, error=exc)
    version = importlib.metadata.version("torchvision")
    text = _("{package}/: torchvision {version}'s architectures converted to MindSpore (run from this folder)")
    return text.format(package=PACKAGE, version=version)


def ensure_importable(kb: KB | None = None) -> None:
    """Put the cached ``torchvision_ms`` on ``sys.path`` (tests and the KB's differential cases)."""
    import sys

    home = os.fspath(converted_package(kb))
    if home not in sys.path:
        sys.path.insert(0, home)
