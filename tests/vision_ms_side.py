"""MindSpore side of tests/test_torchvision_models.py: the converted user models, with torch unimportable.

python vision_ms_side.py CONVERTED_DIR DATA_DIR FACTORY [FACTORY ...] → one JSON line per factory:
{"factory", "pynative_max_abs", "graph_max_abs", "scale", "not_loaded", "error"}. Each factory's
checkpoint (DATA_DIR/<factory>.ckpt, written by torch2ms weights) is loaded into the network first;
a factory whose name ends in "_pretrained" loads torchvision weights itself (weights=...): its
checkpoint holds only the new head.
"""

import importlib.abc
import json
import sys
import traceback


class _NoTorch(importlib.abc.MetaPathFinder):
    """Converted code must run with MindSpore alone: importing torch or torchvision fails here."""

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "torchvision"):
            raise ImportError(f"{name} is blocked: converted code must not need it")
        return None


def main(out_dir: str, data_dir: str, factories: list[str]) -> None:
    sys.meta_path.insert(0, _NoTorch())
    sys.path.insert(0, out_dir)
    import mindspore as ms
    import model  # the converted user model file
    import numpy as np

    for factory in factories:
        row: dict = {"factory": factory}
        try:
            ms.set_context(mode=ms.PYNATIVE_MODE)
            net = getattr(model, factory)()
            not_loaded, _ = ms.load_param_into_net(net, ms.load_checkpoint(f"{data_dir}/{factory}.ckpt"))
            if not factory.endswith("_pretrained"):
                row["not_loaded"] = list(not_loaded)
            net.set_train(False)
            data = np.load(f"{data_dir}/{factory}.npz")
            x, y = ms.Tensor(data["x"]), data["y"]
            row["scale"] = float(np.abs(y).max())
            for mode, key in ((ms.PYNATIVE_MODE, "pynative_max_abs"), (ms.GRAPH_MODE, "graph_max_abs")):
                ms.set_context(mode=mode)
                row[key] = float(np.abs(net(x).asnumpy() - y).max())
        except Exception as exc:  # noqa: BLE001 - reported per factory
            row["error"] = f"{type(exc).__name__}: {exc}"[:800]
            row["trace"] = traceback.format_exc()[-2000:]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
