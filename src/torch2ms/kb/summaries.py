"""The one-line summaries (first docstring lines) of the argument transforms and call handlers that
``lookup`` shows, marked for the message catalog so that they read in Chinese too: Babel does not
extract docstrings. Those of the 150 most used entries are listed (tests/test_i18n_marks.py checks
it, and that each still is a docstring's first line); a summary not listed shows in English.
"""

from __future__ import annotations

from ..i18n import N_

SUMMARIES = (
    N_("torch padding (int, tuple, 'same', 'valid') → MindSpore pad_mode + padding."),
    N_("torch.FloatTensor(data) → mindspore.Tensor(input_data=data, dtype=mindspore.float32)."),
    N_("BatchNorm momentum: MindSpore weighs the old running value, torch the new batch value."),
    N_("x.to(dtype) → x.to(dtype); x.to(device) → x; x.to(other) → x.astype(other.dtype)."),
    N_("x.size() → x.shape; x.size(i) → x.shape[i] (MindSpore's size is numel)."),
    N_("torch.nn.init.X_(t, ...) → t.set_data(initializer(<MindSpore initializer>, t.shape, t.dtype))."),
    N_(
        "DataLoader(ds, batch_size, shuffle, ...) → GeneratorDataset(ds, column_names, shuffle).batch(bs, drop_remainder)."
    ),
    N_("torch pooling stride defaults to kernel_size; MindSpore's defaults to 1."),
    N_("Pooling padding: MindSpore needs pad_mode='pad' for any padding or ceil_mode."),
    N_("torch.device('cuda', 0) → torch2ms.runtime.torch_device('cuda', 0): a Device value (type, index)."),
    N_("LayerNorm normalized_shape → a tuple; only the last dim normalises with MindSpore's default axes."),
    N_("ms(*args, **kw) for a signature with one *name parameter (rand(*size), meshgrid(*tensors))."),
    N_("torch.accelerator.current_accelerator() → the target's Device, None on the CPU target."),
    N_("torch.zeros(2, 3, dtype=...) → ops.zeros((2, 3), dtype=...) (MS takes one shape)."),
    N_("Normalize(mean, std) → vision.Normalize(mean, std, is_hwc=False): torchvision normalises CHW tensors."),
    N_("torch Adam → experimental AdamW(weight_decay=0.0) when there is no weight decay."),
    N_("MNIST(root, train) → MnistDataset(root + '/MNIST/raw', usage) + ToPIL first + int32 labels."),
    N_("InstanceNormNd → nn.GroupNorm(C, C): MindSpore's InstanceNorm kernel is not on CPU."),
    N_("kaiming_{uniform,normal}_ → HeUniform/HeNormal(negative_slope=a, mode, nonlinearity)."),
    N_(
        "Resize(size, interpolation) → vision.Resize(size, interpolation) on the PIL image (same filter as torchvision)."
    ),
    N_("Same method, every argument passed positionally (MindSpore's keyword names differ from torch's)."),
    N_("x.type(torch.float16) → x.astype(mindspore.float16); x.type() → torch-style type string."),
    N_("ConvTranspose padding (+ output_padding for 2-D) → MindSpore pad_mode/padding."),
    N_("torch softmax-family dim → MindSpore axis."),
    N_("nn.ModuleList([...]) → CellList([...]); built empty → torch2ms.runtime.ModuleList()."),
    N_("uniform_(t, a, b) → Uniform(scale) draws U(-scale, scale): scale (b-a)/2, shifted by (a+b)/2."),
    N_("x.max() / x.max(dim, keepdim) keep the method; x.max(other) → ops.maximum."),
    N_("x.new_zeros(2, 3) / ((2, 3)) / (size=...) with x's dtype unless dtype= is given."),
    N_(
        "ImageFolder(root, transform) → ImageFolderDataset(root, shuffle=False) + Decode(to_pil=True) first + int32 labels."
    ),
    N_("x.argmax() over all elements; with dim, MindSpore's axis/keepdims."),
    N_("nn.CrossEntropyLoss → WithLossCell(LogSoftmax(axis=1), NLLLoss(...))."),
    N_("torch GELU approximate='none'|'tanh' → MindSpore approximate=False|True."),
    N_("F.interpolate / F.upsample* → ops.interpolate, with scale_factor turned into a size."),
    N_("calculate_gain with literal arguments is a constant; MindSpore has no public equivalent."),
    N_("The parameters an optimizer is built on: model.parameters() → model.trainable_params()."),
    N_("An optimizer hyper-parameter MindSpore type-checks as float (ASGD t0/lambd, Adadelta rho): 2 → 2.0."),
    N_("A dim given as a list becomes a tuple: MindSpore reductions reject lists in graph mode."),
)
