"""Demo, MindSpore side: the converted model + the converted weights give torch's output (PyNative and GRAPH_MODE)."""

import sys
from pathlib import Path

import mindspore as ms
import numpy as np


def main(converted_dir: str, out_dir: str) -> int:
    sys.path.insert(0, converted_dir)
    from model import build  # the converted example, MindSpore code

    out = Path(out_dir)
    net = build()
    not_loaded, _ = ms.load_param_into_net(net, ms.load_checkpoint(str(out / "simple_cnn.ckpt")))
    if not_loaded:
        print(f"parameters not loaded: {not_loaded}")
        return 1
    net.set_train(False)
    io = np.load(out / "io.npz")
    worst = 0.0
    for mode, name in ((ms.PYNATIVE_MODE, "PyNative"), (ms.GRAPH_MODE, "GRAPH_MODE")):
        ms.set_context(mode=mode)
        y = net(ms.Tensor(io["x"])).asnumpy()
        err = float(np.abs(y - io["y"]).max())
        worst = max(worst, err)
        print(f"MindSpore {name:10s}: max |torch - mindspore| = {err:.2e} over {y.size} outputs")
    ok = worst <= 1e-4 * max(1.0, float(np.abs(io["y"]).max()))
    print("outputs agree" if ok else "OUTPUTS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
