"""torch.nn.functional.multi_head_attention_forward on MindSpore tensors (both modes).

MindSpore's own ``nn.MultiheadAttention`` runs ``ops.function.nn_func.multi_head_attention_forward``,
which takes torch's arguments but has no ``need_weights`` (it always returns the weights) and takes
the mask dtype as an argument. This wrapper keeps torch's signature and result: (output, weights or
None). Needs MindSpore only.
"""

from __future__ import annotations

from typing import Any

from mindspore import ops

__all__ = ["multi_head_attention_forward"]


def multi_head_attention_forward(
    query: Any,
    key: Any,
    value: Any,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Any,
    in_proj_bias: Any,
    bias_k: Any,
    bias_v: Any,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Any,
    out_proj_bias: Any,
    training: bool = True,
    key_padding_mask: Any = None,
    need_weights: bool = True,
    attn_mask: Any = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Any = None,
    k_proj_weight: Any = None,
    v_proj_weight: Any = None,
    static_k: Any = None,
    static_v: Any = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> Any:
    """torch's F.multi_head_attention_forward: inputs (L, N, E) or (L, E); returns (output, weights)
    with weights None when ``need_weights`` is False, as torch."""
    out, weights = ops.function.nn_func.multi_head_attention_forward(
        query,
        key,
        value,
        embed_dim_to_check,
        num_heads,
        in_proj_weight,
        in_proj_bias,
        bias_k,
        bias_v,
        add_zero_attn,
        dropout_p,
        out_proj_weight,
        out_proj_bias,
        training=training,
        key_padding_mask=key_padding_mask,
        attn_mask=attn_mask,
        use_separate_proj_weight=use_separate_proj_weight,
        q_proj_weight=q_proj_weight,
        k_proj_weight=k_proj_weight,
        v_proj_weight=v_proj_weight,
        static_k=static_k,
        static_v=static_v,
        average_attn_weights=average_attn_weights,
        is_causal=is_causal,
        dtype=query.dtype,
    )
    if need_weights:
        return out, weights
    return out, None
