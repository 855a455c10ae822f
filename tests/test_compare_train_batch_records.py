"""R26: what compare-train records of every batch (the statistics both sides compare, torch's batches
kept for replay) and that recording them stays cheap enough for the per-step overhead target."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torch2ms.trainrun.common import array_stats, load_sibling


@pytest.mark.parametrize(
    "array",
    [
        np.linspace(-3, 5, 16 * 3 * 4 * 4, dtype=np.float32).reshape(16, 3, 4, 4),
        np.arange(-5, 11, dtype=np.int64),
        np.array([True, False, True, True]),
        np.linspace(-1, 1, 20, dtype=np.float16).reshape(4, 5),
    ],
    ids=["float32", "int64", "bool", "float16"],
)
def test_r26_array_stats_are_float64_statistics_of_the_batch(array):
    before = array.copy()
    stats = array_stats(array)
    ref = [float(v) for v in array.reshape(-1)]
    mean = sum(ref) / len(ref)
    assert stats["shape"] == list(array.shape) and stats["dtype"] == str(array.dtype)
    assert stats["sum"] == pytest.approx(sum(ref), rel=1e-12, abs=1e-9)
    assert stats["abs_sum"] == pytest.approx(sum(abs(v) for v in ref), rel=1e-12)
    assert stats["mean"] == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert stats["std"] == pytest.approx((sum((v - mean) ** 2 for v in ref) / len(ref)) ** 0.5, rel=1e-9)
    np.testing.assert_array_equal(array, before)  # the caller's array is left alone


def test_r26_array_stats_of_an_empty_batch():
    stats = array_stats(np.zeros((0, 3), np.float32))
    assert (stats["sum"], stats["abs_sum"], stats["mean"], stats["std"]) == (0.0, 0.0, 0.0, 0.0)


def _side(tmp_path, data):
    load_sibling("common")
    hooks = load_sibling("torch_hooks")
    rec = hooks.Recorder("torch", {"work": str(tmp_path), "steps": 4})
    side = hooks.TorchSide(rec, {"data": data})
    side.iterators.append([])
    return side


def test_r26_replayed_batches_are_copies_and_their_statistics_the_first_leafs(tmp_path):
    side = _side(tmp_path, "replay")
    images, labels = torch.linspace(0, 1, 24).reshape(2, 3, 4), torch.tensor([1, 0])
    expected = images.numpy().copy()
    side.on_batch(0, [images, labels], record=True)
    side.rec.step(0, [0.1], None, {})
    images.add_(1)  # a script that changes its batch in place afterwards
    kept = side.iterators[0][0]
    np.testing.assert_array_equal(kept[0], expected)
    np.testing.assert_array_equal(kept[1], [1, 0])
    side.finish("stopped")  # the kept batch's statistics are filled in at the end, before the record is written
    assert side.rec.events[0]["inputs"] == array_stats(expected, [np.array([1, 0])])
    with np.load(tmp_path / "torch" / "batches.npz") as saved:
        np.testing.assert_array_equal(saved["i0_b0_l0"], expected)


def test_r26_batch_with_other_than_tensors_is_noted_and_still_described(tmp_path):
    side = _side(tmp_path, "replay")
    side.on_batch(0, {"x": torch.ones(2, 2), "name": "a"}, record=True)
    assert side.replay_note == "a batch holds something other than tensors: not replayed"
    assert side.iterators[0] == []
    assert side.rec.batch_stats["sum"] == 4.0
    side.on_batch(0, [torch.ones(3)], record=True)  # replay stays off, statistics go on
    assert side.iterators[0] == [] and side.rec.batch_stats["sum"] == 3.0


def test_r26_own_data_keeps_no_batches(tmp_path):
    side = _side(tmp_path, "own")
    side.on_batch(0, (torch.full((2,), 2.0), torch.tensor([1, 1])), record=False)
    assert side.iterators[0] == [] and side.replay_note is None
    assert side.rec.batch_stats["sum"] == 4.0


def _one_hot(n: int, k: int, dtype: str) -> np.ndarray:
    return np.eye(k, dtype=np.float32)[np.arange(n) % k].astype(dtype)


def _swap_rows(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    b[[0, 1]] = b[[1, 0]]
    return b


def _reverse(a: np.ndarray) -> np.ndarray:
    return a[::-1].copy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
@pytest.mark.parametrize("change", [_swap_rows, _reverse], ids=["rows swapped", "rows reversed"])
@pytest.mark.parametrize("where", ["first array", "second array"])
def test_batches_whose_rows_moved_are_not_identical(dtype, change, where):
    """Issue 23: two NLP scripts whose one-hot rows were swapped were reported identical (same sums)."""
    from torch2ms.trainrun.diagnose import identical_inputs, same_inputs

    x, y = _one_hot(6, 4, dtype), np.arange(6) % 3
    t = array_stats(x, [y])
    m = array_stats(change(x), [y]) if where == "first array" else array_stats(x, [change(y)])
    assert (m["sum"], m["abs_sum"]) == (t["sum"], t["abs_sum"])  # what the old check compared
    assert identical_inputs(t, m) is False
    if where == "first array":
        assert same_inputs(t, m) is False


@pytest.mark.parametrize(
    "torch_dtype,ms_dtype", [("int64", "int32"), ("float32", "float32"), ("float64", "float32"), ("bool", "bool")]
)
def test_the_same_values_in_each_frameworks_width_are_identical(torch_dtype, ms_dtype):
    from torch2ms.trainrun.diagnose import identical_inputs, same_inputs

    x = (np.arange(24).reshape(6, 4) % 3).astype(torch_dtype)
    labels = np.arange(6)
    t, m = array_stats(x, [labels]), array_stats(x.astype(ms_dtype), [labels.astype(np.int32)])
    assert identical_inputs(t, m) is True and same_inputs(t, m) is True


def test_values_equal_within_float_rounding_are_same_but_not_identical():
    from torch2ms.trainrun.diagnose import identical_inputs, same_inputs

    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
    t, m = array_stats(x), array_stats(np.nextafter(x, np.float32(2)))
    assert identical_inputs(t, m) is False and same_inputs(t, m) is True
