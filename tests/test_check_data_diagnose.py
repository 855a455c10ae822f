"""R25 with R14–R16: the check-data diagnosis names each pitfall from the numbers alone (numpy, no frameworks)."""

from __future__ import annotations

import numpy as np

from torch2ms.data import Side, compare_sides
from torch2ms.data.diagnose import (
    channel_stats,
    diagnose_affine,
    diagnose_batch_count,
    diagnose_dtype,
    diagnose_error,
    diagnose_labels,
    diagnose_pixels,
    diagnose_shapes,
)

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
RNG = np.random.default_rng(0)
RAW = RNG.random((6, 3, 12, 12))  # "ToTensor" output: CHW in [0, 1]
REF = (RAW - MEAN[:, None, None]) / STD[:, None, None]  # torch: ToTensor + Normalize


def _stats_finding(ms: np.ndarray):
    return diagnose_affine(*channel_stats(REF), *channel_stats(ms))


def test_r25_agreeing_numbers_give_no_finding():
    assert diagnose_shapes(REF.shape, REF.shape) is None
    assert _stats_finding(REF.astype(np.float32)) is None
    assert diagnose_pixels(REF, REF.astype(np.float32)) is None
    assert diagnose_labels(np.array([0, 1, 1]), np.array([0, 1, 1], np.int32)) is None
    assert diagnose_batch_count(3, 3) is None


def test_r15_transposed_shape_is_hwc_vs_chw():
    f = diagnose_shapes((4, 3, 32, 32), (4, 32, 32, 3))
    assert f.pitfall == "layout" and "NHWC" in f.message


def test_r15_values_times_255_is_to_tensor_missing():
    f = _stats_finding(RAW * 255)  # torch without Normalize vs MS without ToTensor
    f0 = diagnose_affine(*channel_stats(RAW), *channel_stats(RAW * 255))
    assert f0.pitfall == "to_tensor" and "×255" in f0.message
    assert f.pitfall == "to_tensor"  # neither scaled nor normalised: still the ToTensor pitfall
    assert "0.485" in f.message  # and it recovers the torch Normalize mean


def test_r15_unnormalised_values_recover_the_torch_normalize_parameters():
    f = diagnose_pixels(REF, RAW)
    assert f.pitfall == "normalize" and "mean≈[0.485, 0.456, 0.406]" in f.message and "0.229" in f.message


def test_r15_per_channel_mean_offset_is_normalize_position():
    # Normalize on the 0–255 scale before ToTensor: same spread, each channel shifted
    ms = (RAW * 255 - MEAN[:, None, None]) / STD[:, None, None] / 255
    f = diagnose_pixels(REF, ms)
    assert f.pitfall == "normalize" and "offset" in f.message
    assert _stats_finding(ms).pitfall == "normalize"


def test_r16_batch_count_off_by_one_is_drop_last():
    f = diagnose_batch_count(3, 2, bs_torch=3, bs_ms=3, drop_last=False, drop_remainder=True)
    assert f.pitfall == "drop_last" and "MindSpore drops" in f.message
    assert diagnose_batch_count(2, 3).message.endswith("torch drops the last partial batch")
    assert diagnose_batch_count(3, 4, bs_torch=3, bs_ms=2).pitfall == "batch_size"


def test_r16_reordered_labels_are_the_shuffle_default():
    t = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    f = diagnose_labels(t, np.array([1, 0, 0, 1, 1, 1, 0, 0], np.int32))
    assert f.pitfall == "shuffle" and "MindSpore shuffles" in f.message and f.level == "error"
    both = diagnose_labels(t, t[::-1], shuffle_torch=True, shuffle_ms=True)
    assert both.level == "info"  # both shuffle on purpose: order is not compared


def test_r14_consistent_relabelling_is_class_indexing():
    f = diagnose_labels(np.array([0, 0, 1, 1, 0, 1]), np.array([1, 1, 0, 0, 1, 0]))
    assert f.pitfall == "class_index" and "{0: 1, 1: 0}" in f.message


def test_r14_labels_int32_are_expected_int64_is_a_warning():
    assert diagnose_dtype("label", np.int64, np.int32).level == "info"
    assert diagnose_dtype("label", np.int32, np.int32) is None
    assert diagnose_dtype("label", np.int64, np.int64).level == "warn"
    w = diagnose_dtype("label", np.int32, np.int64)
    assert w.level == "warn" and w.pitfall == "label_dtype"
    assert diagnose_dtype("image", np.float32, np.uint8).pitfall == "to_tensor"


def test_r25_one_pixel_shift_on_some_samples_is_center_crop_rounding():
    big = RNG.random((4, 3, 20, 20))
    t = big[:, :, 2:18, 2:18]
    m = t.copy()
    m[1] = big[1, :, 1:17, 1:17]  # this sample cropped 1 px up-left (floor vs round)
    f = diagnose_pixels(t, m)
    assert f.pitfall == "center_crop" and "1 of 4" in f.message


def test_r25_sharper_resampling_is_the_opencv_path():
    smooth = np.cumsum(RNG.random((4, 3, 16, 16)), axis=-1) / 16
    sharp = smooth + 0.3 * (RNG.random(smooth.shape) - 0.5)  # more high-frequency energy, same centre
    f = diagnose_pixels(smooth, sharp)
    assert f.pitfall == "decode_pil" and "sharper" in f.message
    assert diagnose_pixels(sharp, smooth).pitfall == "interpolation"


def test_r14_pipeline_errors_are_named():
    assert (
        diagnose_error(
            "MindSpore",
            "map operation: [Resize] failed. Resize: the image tensor should have at "
            "least two dimensions. You may need to perform Decode first.",
        ).pitfall
        == "decode"
    )
    f = diagnose_error(
        "MindSpore",
        "Normalize: number of channels does not match the size of mean and std "
        "vectors, got channels: 32, size of mean: 3",
    )
    assert f.pitfall == "normalize_hwc"
    assert diagnose_error("torch", "boom").pitfall == "error"


def test_r25_compare_sides_report_and_json_roundtrip():
    t = Side(
        "torch",
        batches=[(REF[:3].astype(np.float32), np.array([0, 0, 1])), (REF[3:].astype(np.float32), np.array([1, 1, 1]))],
        batches_per_epoch=2,
    )
    m = Side(
        "MindSpore",
        batches=[(b[0].transpose(0, 2, 3, 1), b[1].astype(np.int32)) for b in t.batches],
        columns=["image", "label"],
        batches_per_epoch=2,
    )
    rep = compare_sides(t, m)
    assert not rep.ok
    assert [f.pitfall for f in rep.findings if f.level == "error"] == ["layout"]
    img = rep.columns[0]
    assert img.d_mean < 1e-6 and img.max_abs < 1e-6  # compared in the torch layout once transposed
    d = rep.to_dict()
    assert d["torch"]["batches_per_epoch"] == 2 and d["columns"][1]["label_agreement"] == 1.0
    assert "HWC vs CHW" in rep.to_markdown()


def test_r16_same_samples_in_another_order_are_found_even_when_labels_line_up():
    from torch2ms.data.diagnose import diagnose_order, sample_permutation

    perm = sample_permutation(REF, REF[[2, 0, 1, 3, 5, 4]])
    assert perm.tolist() == [2, 0, 1, 3, 5, 4]
    assert diagnose_order(perm, shuffle_ms=True, shuffle_torch=False).pitfall == "shuffle"
    assert diagnose_order(sample_permutation(REF, REF)) is None
    assert sample_permutation(REF, REF + 0.5) is None  # different samples: no permutation
    t = Side("torch", batches=[(REF[:3], np.array([0, 0, 0])), (REF[3:], np.array([0, 0, 0]))], batches_per_epoch=2)
    zeros = np.zeros(3, np.int32)
    m = Side("MindSpore", batches=[(REF[[4, 1, 2]], zeros), (REF[[3, 0, 5]], zeros)], batches_per_epoch=2)
    rep = compare_sides(t, m)
    assert [f.pitfall for f in rep.findings if f.level != "info"] == [
        "shuffle"
    ]  # one class: labels agree, the order does not
    assert rep.columns[0].max_abs == 0.0  # compared after reordering
