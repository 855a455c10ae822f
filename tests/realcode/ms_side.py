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
    from torch2ms.kb import load_kb
    from torch2ms.weights.rename import convert_state_dict

    assert root in (torchvision.__file__ or ""), torchvision.__file__
    kb = load_kb()
    for name in names:
        row = {"model": name}
        try:
            ms.set_context(mode=ms.PYNATIVE_MODE)
            data = np.load(f"{data_dir}/{name}.npz")
            types = json.loads(str(data["types"]))
            state = {k[len("param::"):]: data[k] for k in data.files if k.startswith("param::")}
            net = getattr(torchvision.models, name)()
            converted = convert_state_dict(state, types, kb)
            params = dict(net.parameters_and_names())
            buffers = dict(net.named_buffers())
            for key in sorted(set(converted) & set(buffers) - set(params)):
                # register_buffer'ed tensors (swin's relative_position_index) load into buffers.
                owner_path, _, leaf = key.rpartition(".")
                owner = net
                for part in owner_path.split(".") if owner_path else []:
                    owner = owner._cells[part]
                owner.register_buffer(leaf, ms.Tensor(converted.pop(key)))
            missing = sorted(set(params) - set(converted))
            unexpected = sorted(set(converted) - set(params))
            if missing or unexpected:
                raise RuntimeError(f"weights: missing {missing[:5]} unexpected {unexpected[:5]}")
            for pname, p in params.items():
                arr = converted[pname]
                if tuple(arr.shape) != tuple(p.shape):
                    raise RuntimeError(f"weights: {pname} shape {arr.shape} vs {tuple(p.shape)}")
                p.set_data(ms.Tensor(np.ascontiguousarray(arr), dtype=p.dtype))
            net.set_train(False)
            x, y = ms.Tensor(data["x"]), data["y"]
            out = net(x)
            out = out[0] if isinstance(out, (tuple, list)) else out
            row["scale"] = float(np.abs(y).max())
            row["pynative_max_abs"] = float(np.abs(out.asnumpy() - y).max())
            ms.set_context(mode=ms.GRAPH_MODE)
            gout = net(x)
            gout = gout[0] if isinstance(gout, (tuple, list)) else gout
            row["graph_max_abs"] = float(np.abs(gout.asnumpy() - y).max())
        except Exception as exc:  # noqa: BLE001 - report per model, keep going
            row["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
            row["trace"] = traceback.format_exc()[-1500:]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
