"""R21 + issue 15: `torch2ms weights` on malformed, hostile and misplaced input. The checkpoints are
*generated* here (truncations, bit flips, bad offsets/shapes/strides, zip bombs, self-referencing and
exploding object trees, lying safetensors headers, corrupt .ckpt files, renamed formats, special files),
each run through the real command: a one-line refusal with exit code 2 (or success when the damage
leaves a valid file), never a traceback, never a hang, memory bounded, and no output or temporary
file left behind. The torch-format bytes are written by torch2ms's own torch-free writer (torch reads
them back in tests/test_weights.py), so this file needs neither torch nor MindSpore."""

from __future__ import annotations

import json
import os
import pickle
import random
import resource
import select
import signal
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from torch2ms.cli import main
from torch2ms.weights.ckpt_io import read_ckpt, write_ckpt
from torch2ms.weights.torch_format import _global, _pk_int, _pk_str, _pk_tuple, save_torch_zip

ROOT = Path(__file__).resolve().parents[1]
WRITTEN_GUESSED = 3  # written; fc.weight (2-D, no bias) could be a Linear or an Embedding: listed as a guess
STATE = {
    "conv.weight": np.arange(2 * 3 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 3),
    "conv.bias": np.ones(2, np.float32),
    "fc.weight": np.full((4, 8), 0.5, np.float32),
}


def _run(args: list[str], capsys, limit_s: int = 60) -> tuple[int, str]:
    """The command in-process, with a time limit; returns (exit code, stderr + stdout)."""

    def hang(signum, frame):
        raise TimeoutError(f"torch2ms {' '.join(args)} ran over {limit_s} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(limit_s)
    try:
        rc = main(args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    cap = capsys.readouterr()
    return rc, cap.err + cap.out


def _assert_refused(path: Path, capsys, out: Path | None = None, expect: str = "") -> str:
    out = out or path.with_name(path.name + ".out.ckpt")
    before = set(path.parent.iterdir())
    rc, text = _run(["weights", str(path), "-o", str(out)], capsys)
    assert rc == 2, (path.name, rc, text)
    assert "Traceback" not in text and text.strip().count("\n") == 0, text  # one line
    assert text.startswith(("error:", "refused:")), text
    assert expect.lower() in text.lower(), (expect, text)
    assert set(path.parent.iterdir()) == before, "an output or a temporary file was left behind"
    return text


# ---- generators -------------------------------------------------------------------------------------------


def _tensor_pickle(shape, stride, offset=0, numel=None, storage="FloatStorage", key="0", wrap=None) -> bytes:
    """data.pkl of {"w": tensor} with the given (possibly hostile) layout, as torch writes it."""
    n = numel if numel is not None else 24
    pid = _pk_tuple([_pk_str("storage"), _global("torch", storage), _pk_str(key), _pk_str("cpu"), _pk_int(n)]) + b"Q"
    tensor = (
        _global("torch._utils", "_rebuild_tensor_v2")
        + _pk_tuple(
            [
                pid,
                _pk_int(offset),
                _pk_tuple(_pk_int(d) for d in shape),
                _pk_tuple(_pk_int(s) for s in stride),
                b"\x89",
                _global("collections", "OrderedDict") + b")R",
            ]
        )
        + b"R"
    )
    return b"\x80\x02" + b"}" + _pk_str("w") + tensor + b"s."


def _zip(path: Path, pkl: bytes, data: bytes = b"\x00" * 96, compress: bool = False) -> Path:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/data/0", data)
        zf.writestr("archive/version", "3\n")
    return path


def _legacy(tensor_pkl: bytes, data: bytes = b"\x00" * 96) -> bytes:
    """A legacy (torch < 1.6 format) checkpoint: magic, protocol, sys info, the object, the storage keys, the data."""
    head = b"".join(pickle.dumps(o, protocol=2) for o in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
    return head + tensor_pkl + pickle.dumps(["0"], protocol=2) + struct.pack("<q", len(data) // 4) + data


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.pth"
    save_torch_zip(STATE, path)
    return path


def test_r21_valid_generated_checkpoint_converts(good: Path, tmp_path: Path, capsys):
    rc, text = _run(["weights", str(good), "-o", str(tmp_path / "good.ckpt")], capsys)
    assert rc == WRITTEN_GUESSED, text  # written; a bias-less 2-D fc.weight: Linear or Embedding, a guess
    back = read_ckpt(tmp_path / "good.ckpt")
    np.testing.assert_array_equal(back["fc.weight"][0], STATE["fc.weight"])


@pytest.mark.parametrize("cut", [0, 4, 30, 0.3, 0.5, 0.9, -23, -1])
def test_r21_truncated_archives_refused(good: Path, tmp_path: Path, capsys, cut):
    data = good.read_bytes()
    n = cut if isinstance(cut, int) and cut >= 0 else len(data) + cut if isinstance(cut, int) else int(len(data) * cut)
    bad = tmp_path / "cut.pth"
    bad.write_bytes(data[:n])
    _assert_refused(bad, capsys)


def test_r21_legacy_format_generated_reads_and_truncations_refused(tmp_path: Path, capsys):
    data = _legacy(_tensor_pickle((4, 6), (6, 1)), np.arange(24, dtype=np.float32).tobytes())
    (tmp_path / "legacy.pt").write_bytes(data)
    rc, text = _run(["weights", str(tmp_path / "legacy.pt"), "-o", str(tmp_path / "legacy.ckpt")], capsys)
    assert rc == 0, text
    np.testing.assert_array_equal(read_ckpt(tmp_path / "legacy.ckpt")["w"][0], np.arange(24).reshape(4, 6))
    (tmp_path / "legacy.ckpt").unlink()
    for cut in (1, 20, 60, len(data) - 97, len(data) - 40, len(data) - 1):
        bad = tmp_path / "cut.pt"
        bad.write_bytes(data[:cut])
        _assert_refused(bad, capsys)


@pytest.mark.parametrize(
    "pkl",
    [
        b"\x80\x02garbage",
        b"\x80\x02}q\x00",
        b"\x80\x02]" + b"(" * 1000 + b".",
        b"\x80\x05\x95" + b"\xff" * 8,
        b"not a pickle",
    ],
    ids=["garbage", "no-stop", "marks", "frame-overflow", "text"],
)
def test_r21_bad_pickles_refused(tmp_path: Path, capsys, pkl):
    _assert_refused(_zip(tmp_path / "badpkl.pth", pkl), capsys)
    (tmp_path / "badpkl.pt").write_bytes(pkl if pkl.startswith(b"\x80") else b"\x80\x02" + pkl)
    _assert_refused(tmp_path / "badpkl.pt", capsys)


def test_r21_bit_flips_never_crash(good: Path, tmp_path: Path, capsys):
    """Random single-byte damage anywhere: either still a valid file (tensor bytes) or a one-line refusal."""
    data = good.read_bytes()
    rng = random.Random(15)
    outcomes = {WRITTEN_GUESSED: 0, 2: 0}
    for i in range(40):
        damaged = bytearray(data)
        pos = rng.randrange(len(damaged))
        damaged[pos] ^= 1 << rng.randrange(8)
        bad = tmp_path / f"flip{i}.pth"
        bad.write_bytes(bytes(damaged))
        out = tmp_path / f"flip{i}.ckpt"
        rc, text = _run(["weights", str(bad), "-o", str(out)], capsys)
        assert rc in (WRITTEN_GUESSED, 2) and "Traceback" not in text, (pos, text)
        if rc == WRITTEN_GUESSED:
            read_ckpt(out)  # what was written is a readable checkpoint
        else:
            assert not out.exists() and text.count("\n") <= 1, text
        outcomes[rc] += 1
    assert outcomes[2] > 0  # the damage is detected (CRC, headers, pickle) more often than not


BAD_LAYOUTS = {
    "negative offset": dict(shape=(2,), stride=(1,), offset=-8),  # would read zip-header bytes
    "huge shape": dict(shape=(2**62, 2**62), stride=(0, 0)),  # hung the reader
    "overflowing shape": dict(shape=(2**40, 2**40), stride=(2**40, 1)),
    "negative size": dict(shape=(-3, 4), stride=(4, 1)),
    "negative stride": dict(shape=(3, 4), stride=(-4, 1)),
    "past the storage": dict(shape=(6, 8), stride=(8, 1)),  # 48 elements of a 24-element storage
    "offset past the storage": dict(shape=(4,), stride=(1,), offset=23),
    "rank mismatch": dict(shape=(2, 3), stride=(1,)),
    "negative storage size": dict(shape=(2,), stride=(1,), numel=-5),
    "storage bigger than its bytes": dict(shape=(2,), stride=(1,), numel=10**9),
}


@pytest.mark.parametrize("case", sorted(BAD_LAYOUTS))
def test_r21_bad_shapes_strides_offsets_refused(tmp_path: Path, capsys, case):
    bad = _zip(tmp_path / "layout.pth", _tensor_pickle(**BAD_LAYOUTS[case]))
    _assert_refused(bad, capsys)


def test_r21_zip_bombs_refused_with_bounded_memory(tmp_path: Path, capsys):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    zeros = b"\x00" * (256 << 20)  # 256 MiB of storage deflated to ~250 KB
    bomb = _zip(tmp_path / "bomb.pth", _tensor_pickle((2,), (1,), numel=(256 << 20) // 4), zeros, compress=True)
    del zeros
    assert bomb.stat().st_size < 2 << 20
    _assert_refused(bomb, capsys, expect="zip bomb")
    pkl_bomb = tmp_path / "pkl_bomb.pth"
    with zipfile.ZipFile(pkl_bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02" + b"(" * (64 << 20))
    _assert_refused(pkl_bomb, capsys, expect="zip bomb")
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown_kb < 400 << 10, f"peak memory grew by {grown_kb >> 10} MiB"  # the 256 MiB buffer itself, not 4 GB


def test_r21_self_referencing_and_exploding_object_trees_refused(tmp_path: Path, capsys):
    # a dict that holds itself (under "model", a key the state-dict search follows)
    loop = b"\x80\x02}q\x00(X\x05\x00\x00\x00modelq\x01h\x00X\x01\x00\x00\x00xK\x01u."
    assert pickle.loads(loop)["model"] is not None
    _assert_refused(_zip(tmp_path / "loop.pth", loop), capsys, expect="no tensors")
    # 80 levels of {"a": d, "b": d}: 2^80 paths to one tensor in a few hundred bytes
    pkl = _tensor_pickle((2,), (1,))[:-1] + b"q\x00"  # {"w": tensor}, memo 0
    for level in range(1, 80):
        prev = bytes([level - 1])
        pkl += b"0}(" + _pk_str("a") + b"h" + prev + _pk_str("b") + b"h" + prev + b"uq" + bytes([level])
    _assert_refused(_zip(tmp_path / "dag.pth", pkl + b"."), capsys, expect="object tree")


def _safetensors(path: Path, header: dict | bytes, data: bytes = b"\x00" * 16, header_len: int | None = None) -> Path:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if header_len is None else header_len) + raw + data)
    return path


LYING_SAFETENSORS = {
    "header longer than the file": dict(
        header={"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, header_len=2**40
    ),
    "header not JSON": dict(header=b"{not json at all"),
    "header a list": dict(header=b"[1, 2, 3]        "),
    "offsets past the end": dict(header={"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 4096]}}),
    "offsets reversed": dict(header={"w": {"dtype": "F32", "shape": [0], "data_offsets": [16, 0]}}),
    "shape bigger than the bytes": dict(
        header={"w": {"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 16]}}
    ),
    "negative shape": dict(header={"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}),
    "unknown dtype": dict(header={"w": {"dtype": "F8_E4M3", "shape": [16], "data_offsets": [0, 16]}}),
    "entry not an object": dict(header={"w": 7}),
}


@pytest.mark.parametrize("case", sorted(LYING_SAFETENSORS))
def test_r21_lying_safetensors_headers_refused(tmp_path: Path, capsys, case):
    _assert_refused(_safetensors(tmp_path / "lie.safetensors", **LYING_SAFETENSORS[case]), capsys)


def test_r21_renamed_formats(good: Path, tmp_path: Path, capsys):
    # a torch zip renamed .safetensors: read by content, converted
    renamed = tmp_path / "model.safetensors"
    renamed.write_bytes(good.read_bytes())
    rc, text = _run(["weights", str(renamed), "-o", str(tmp_path / "a.ckpt")], capsys)
    assert rc == WRITTEN_GUESSED, text
    # a torch checkpoint renamed .ckpt: not a MindSpore checkpoint; said so
    as_ckpt = tmp_path / "model.ckpt"
    as_ckpt.write_bytes(good.read_bytes())
    _assert_refused(as_ckpt, capsys, out=tmp_path / "back.pth", expect="rename it .pth")
    # random bytes under each name
    rng = np.random.default_rng(0)
    for name in ("noise.pth", "noise.safetensors", "noise.bin", "noise.pt"):
        p = tmp_path / name
        p.write_bytes(rng.integers(1, 255, 512, dtype=np.uint8).tobytes())
        _assert_refused(p, capsys)


def test_r21_corrupt_mindspore_ckpt_refused(tmp_path: Path, capsys):
    good_ckpt = tmp_path / "m.ckpt"
    write_ckpt([(k, v, "float32") for k, v in STATE.items()], good_ckpt)
    data = good_ckpt.read_bytes()
    cases = {
        "truncated.ckpt": data[: len(data) // 2],
        "one_byte.ckpt": data[:1],
        "empty.ckpt": b"",
        "wrong_field.ckpt": b"\x12\x05hello",
        "varint_forever.ckpt": b"\x0a" + b"\xff" * 20,
        # dims say (1000, 1000) but the content is 16 bytes
        "lying_dims.ckpt": bytes.fromhex("0a22")
        + b"\x0a\x01w\x12\x1d\x08\xe8\x07\x08\xe8\x07\x12\x07Float32\x1a\x10"
        + bytes(16),
    }
    for name, blob in cases.items():
        p = tmp_path / name
        p.write_bytes(blob)
        _assert_refused(p, capsys, out=tmp_path / "back.pth")
        p.unlink()


def test_r21_special_files_and_output_paths(good: Path, tmp_path: Path, capsys):
    fifo = tmp_path / "fifo.pth"
    os.mkfifo(fifo)
    _assert_refused(fifo, capsys, expect="FIFO")  # never opened: opening would block
    fifo.unlink()
    zero = tmp_path / "zero.pth"
    zero.symlink_to("/dev/zero")
    _assert_refused(zero, capsys, expect="character device")
    zero.unlink()
    # -o the input itself, a folder, a file that is not a checkpoint
    before = good.read_bytes()
    _assert_refused(good, capsys, out=good, expect="is the input")
    assert good.read_bytes() == before
    (tmp_path / "folder").mkdir()
    _assert_refused(good, capsys, out=tmp_path / "folder", expect="directory")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    _assert_refused(good, capsys, out=notes, expect="not a checkpoint")
    assert notes.read_text() == "my notes"
    rc, text = _run(["weights", str(good), "-o", str(notes), "--force"], capsys)
    assert rc == WRITTEN_GUESSED and read_ckpt(notes)
    # an earlier .ckpt is replaced without --force
    rc, text = _run(["weights", str(good), "-o", str(notes)], capsys)
    assert rc == WRITTEN_GUESSED, text


def test_r21_killed_run_leaves_no_file(tmp_path: Path):
    """SIGKILL while the .ckpt is being written (space preallocated): nothing is left, no OUT, no OUT.tmp."""
    big = tmp_path / "big.pth"
    save_torch_zip({f"w{i}": np.full((1024, 1024), i, np.float32) for i in range(48)}, big)  # 192 MiB
    # The child stops itself mid-write and says so through a pipe: after the writer has taken three
    # tensors (so it has written into the output) it writes one byte and blocks; the parent then kills it.
    # A handshake, not a clock: however loaded the machine, the kill lands while the .ckpt is half written.
    script = (
        "import os, sys, threading\nfrom torch2ms.weights import convert as c\n"
        "orig, ready = c._materialize, int(sys.argv[1])\n"
        "def paused(*a, **k):\n"
        "    for i, item in enumerate(orig(*a, **k)):\n"
        "        if i == 3:\n"
        "            os.write(ready, b'w')\n"
        "            threading.Event().wait()\n"
        "        yield item\n"
        "c._materialize = paused\n"
        "from torch2ms.cli import main\nsys.exit(main(sys.argv[2:]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = tmp_path / "big.ckpt"
    ready_r, ready_w = os.pipe()
    cmd = [sys.executable, "-c", script, str(ready_w), "weights", str(big), "-o", str(out)]
    proc = subprocess.Popen(cmd, env=env, pass_fds=(ready_w,))
    os.close(ready_w)
    try:
        readable, _, _ = select.select([ready_r], [], [], 300)
        assert readable and os.read(ready_r, 1) == b"w", "the writer never reached the fourth tensor"
        links = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")]
        assert any(str(tmp_path) in link and "big.pth" not in link for link in links), links  # mid-write
    finally:
        os.close(ready_r)
        proc.kill()
        proc.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.pth"]
