"""Speed of converted real models against MindSpore's own hand-written versions (issue 11), one run.

- torchvision's resnet50 converted by torch2ms (a user script that calls ``torchvision.models.resnet50()``,
  converted as a project: it builds the model from ``torchvision_ms``, written beside it) vs mindcv's
  resnet50: inference and one GRAPH_MODE training step (SGD-momentum, cross-entropy), batch 8, 3×224×224;
- the real-code kit's minGPT GPT (karpathy/minGPT, read from ../shared/realcode/corpus) converted by
  torch2ms vs mindone's GPT-2 (mindone.transformers.GPT2LMHeadModel, MindSpore's own port of the
  Hugging Face models; the ``bench`` extra installs it) of the same shape, given the same weights:
  inference and a training step, batch 8 × 128 tokens, in PyNative (mindone's GPT-2 does not compile in
  GRAPH_MODE), with one substitution said in the output: its Conv1D's ``mint.addmm`` has no CPU kernel in
  MindSpore 2.10, so it runs as matmul + bias;
- the same converted GPT vs bench/ms_gpt.py in GRAPH_MODE. ms_gpt.py was written for this bench by this
  project, so that pair is labelled as such: it is not an external reference.

Both sides of a pair are built in one MindSpore process (torch blocked from import) and timed in
interleaved rounds (the machine is shared: each round sees the same load), after a first call that
compiles. A pair is given the same weights first (by name; mindcv's few other names are mapped) and the
output difference is printed: the GPTs compute the same function; mindcv's resnet50 pads its max-pool
'same' (asymmetric) where torchvision pads 1 on each side, so those outputs differ by about 1e-2.
Reported: best time per call of each side and the ratio converted / hand-written (target ≤ 1.05).
Run:  .venv/bin/python bench/realcode_bench.py [--repeat 5] [--only resnet50|gpt2-mindone|gpt]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "realcode" / "corpus"
for key, value in (("GLOG_v", "3"), ("ONEDNN_MAX_CPU_ISA", "AVX2"), ("MS_DEV_LAUNCH_BLOCKING", "1")):
    os.environ.setdefault(key, value)
os.environ.setdefault("MS_DEV_HOST_BLOCKING_RUN", "1")
RESNET_USER = "import torchvision\n\n\ndef build():\n    return torchvision.models.resnet50()\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["resnet50", "gpt2-mindone", "gpt"])
    opts = ap.parse_args()
    from torch2ms.convert import convert_tree

    tmp = Path(tempfile.mkdtemp(prefix="t2m-realcode-bench-"))
    roots = []
    if opts.only in (None, "resnet50"):
        if importlib.util.find_spec("torchvision") is None or importlib.util.find_spec("mindcv") is None:
            print("resnet50: needs torchvision and mindcv (pip install -e '.[bench]')")
        else:
            # A user script that builds torchvision's resnet50, converted as a project: the converted code
            # builds it from torchvision_ms, which torch2ms writes beside it (the path users take).
            user = tmp / "user"
            user.mkdir()
            (user / "net.py").write_text(RESNET_USER, encoding="utf-8")
            convert_tree(user, tmp / "resnet50")
            roots.append(("resnet50", tmp / "resnet50"))
    gpts = [g for g in ("gpt2-mindone", "gpt") if opts.only in (None, g)]
    if gpts and not (CORPUS / "karpathy" / "minGPT").is_dir():
        print(f"gpt: the real-code kit is not at {CORPUS}")
    elif gpts:
        convert_tree(CORPUS / "karpathy" / "minGPT", tmp / "mingpt")
        if "gpt2-mindone" in gpts and importlib.util.find_spec("mindone") is None:
            print("gpt2-mindone: needs mindone (pip install -e '.[bench]')")
            gpts.remove("gpt2-mindone")
        roots += [(g, tmp / "mingpt") for g in gpts]
    failed = 0
    for name, root in roots:  # one MindSpore process per pair, without torch
        worker = Path(__file__).with_name("realcode_bench_ms.py")
        cmd = [sys.executable, str(worker), name, str(root), "--repeat", str(opts.repeat)]
        failed += subprocess.run(cmd).returncode != 0
    return 1 if failed or not roots else 0


if __name__ == "__main__":
    sys.exit(main())
