"""`torch2ms compare --api` overhead (issue 25): the same comparison with and without --api on a kit
GPT (karpathy/minGPT gpt-nano, tokens 2×16) and a kit ResNet (kuangliu/pytorch-cifar ResNet18,
2×3×32×32), PyNative only (--no-graph), best of N runs each, in one process. Target: compare --api
≤ 5× a plain compare. Reported: wall seconds of compare_models each way, their ratio, the --api
phase alone, and the bytes of tensors the recording kept. Timing lives here, never in tests.

    python bench/compare_api_bench.py [REPEAT]     # the kit at ../shared/realcode
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1].parent / "shared" / "realcode" / "corpus"
GPT = (
    "((C := GPT.get_default_config()), C.merge_from_dict({'model_type': 'gpt-nano', 'vocab_size': 64, "
    "'block_size': 32}), GPT(C))[2]"
)
# name → (kit folder, the model's file in it, factory, input shape, input dtype, package to rename)
MODELS = {
    "minGPT gpt-nano": ("karpathy/minGPT", "mingpt/model.py", GPT, (2, 16), "int64", "mingpt"),
    "cifar ResNet18": ("kuangliu/pytorch-cifar", "models/resnet.py", "ResNet18()", (2, 3, 32, 32), "float32", None),
}


def _prepare(tmp: Path, name: str) -> tuple[str, str]:
    from torch2ms.convert import convert_tree

    folder, file, factory, _shape, _dtype, pkg = MODELS[name]
    src, out = tmp / "src", tmp / "out"
    (src / file).parent.mkdir(parents=True)
    for f in (KIT / folder / Path(file).parent).glob("*.py"):
        shutil.copy(f, src / Path(file).parent / f.name)
    convert_tree(src, out)
    target = out / file
    if pkg is not None:  # a package that imports itself by name: the converted copy renamed
        (out / pkg).rename(out / f"{pkg}_ms")
        target = out / f"{pkg}_ms" / Path(file).relative_to(pkg)
        target.write_text(target.read_text(encoding="utf-8").replace(f"from {pkg}.", f"from {pkg}_ms."))
        sys.path[:0] = [str(src), str(out)]
    return f"{src / file}:{factory}", f"{target}:{factory}"


def _run(spec_t: str, spec_m: str, name: str, api: bool) -> tuple[float, dict]:
    from torch2ms.align.api import CompareOptions, compare_models

    _folder, _file, _factory, shape, dtype, _pkg = MODELS[name]
    opts = CompareOptions(input_shapes=[shape], input_dtypes=(dtype,), graph=False, api=api)
    t = time.perf_counter()
    rep = compare_models(spec_t, spec_m, opts)
    return time.perf_counter() - t, {"status": rep.status, "api": rep.api, "timings": rep.timings}


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    if not KIT.is_dir():
        sys.exit(f"the kit is not at {KIT}")
    for name in MODELS:
        with tempfile.TemporaryDirectory(prefix="t2m-apibench-") as tmp:
            spec_t, spec_m = _prepare(Path(tmp), name)
            _run(spec_t, spec_m, name, False)  # warm-up: imports, first PyNative kernels
            plain = min(_run(spec_t, spec_m, name, False)[0] for _ in range(repeat))
            runs = [_run(spec_t, spec_m, name, True) for _ in range(repeat)]
            api, info = min(runs, key=lambda r: r[0])
            groups = info["api"]["torch_groups"]
            print(
                f"{name}: plain compare {plain:.2f} s, compare --api {api:.2f} s, ratio {api / plain:.2f}x "
                f"(api phase {info['timings'].get('api', float('nan')):.2f} s, {groups} call groups, "
                f"{info['api']['kept_bytes'] / 1e6:.1f} MB kept, status {info['status']})"
            )


if __name__ == "__main__":
    main()
