"""MindSpore side of the torchvision proof, run with the converted package first on sys.path.

python ms_side.py CONVERTED_ROOT DATA_DIR MODEL [MODEL ...] → prints one JSON line per model:
{"model", "pynative_max_abs", "graph_max_abs", "scale", "error"}.
"""

import json
import sys
import traceback

import numpy as np


def main(root: str, data_dir: str, names: list[str]) -> None:
    sys.path.insert(0, root)
    import mindspore as ms
    import torchvision  # the converted package (MindSpore code)

    from torch2ms.align.ms_side import load_state
    from torch2ms.kb import load_kb
    from torch2ms.weights.rename import convert_state_dict

    assert root in (torchvision.__file__ or ""), torchvision.__file__
    kb = load_kb()
    for arg in names:
        name, _, kw = arg.partition("@")  # same builder keyword arguments as the torch side
        row = {"model": name}
        try:
            ms.set_context(mode=ms.PYNATIVE_MODE)
            data = np.load(f"{data_dir}/{name}.npz")
            types = json.loads(str(data["types"]))
            state = {k[len("param::") :]: data[k] for k in data.files if k.startswith("param::")}
            net = getattr(torchvision.models, name)(**(json.loads(kw) if kw else {}))
            problems = load_state(net, convert_state_dict(state, types, kb))
            if any(problems.values()):
                raise RuntimeError(f"weights: {problems}")
            net.set_train(False)
            x, y = ms.Tensor(data["x"]), data["y"]
            row["scale"] = float(np.abs(y).max())
            for mode, key in ((ms.PYNATIVE_MODE, "pynative_max_abs"), (ms.GRAPH_MODE, "graph_max_abs")):
                ms.set_context(mode=mode)
                out = net(x)
                out = out[0] if isinstance(out, (tuple, list)) else out
                row[key] = float(np.abs(out.asnumpy() - y).max())
        except Exception as exc:  # noqa: BLE001 - report per model, keep going
            row["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
            row["trace"] = traceback.format_exc()[-1500:]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
