"""`TransformerEncoderLayer` (post- or pre-norm) and `TransformerEncoder`, as PyTorch's."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ...core.tensor import Tensor
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and a LayerNorm."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        make = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **make
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **make)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **make)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **make)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise RuntimeError(f"activation should be relu/gelu, not {activation}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """The layer's output, of the input's shape."""
        x = src
        if self.norm_first:
            x = x + self._self_attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._self_attention(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward(x))

    def _self_attention(
        self, x: Tensor, mask: Tensor | None, padding: Tensor | None, is_causal: bool
    ) -> Tensor:
        out, _ = self.self_attn(
            x,
            x,
            x,
            attn_mask=mask,
            key_padding_mask=padding,
            need_weights=False,
            is_causal=is_causal,
        )
        return self.dropout1(out)

    def _feed_forward(self, x: Tensor) -> Tensor:
        hidden = self.linear1(x)
        if self.activation is F.relu and _output_unseen(self.linear1):
            # The hidden layer is a new array only this line holds: ReLU writes over it instead
            # of filling a second one (as Sequential does after a Linear).
            hidden = F.relu_over_temporary(hidden)
        else:
            hidden = self.activation(hidden)
        return self.dropout2(self.linear2(self.dropout(hidden)))


def _output_unseen(layer: Module) -> bool:
    """Whether `layer` is a plain Linear without hooks: nothing else can hold its output."""
    return (
        type(layer) is Linear
        and "forward" not in layer.__dict__
        and layer.__dict__.get("_module_hooks") is None
    )


class TransformerEncoder(Module):
    """`num_layers` copies of an encoder layer, then an optional final norm."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(
                f"TransformerEncoder: encoder_layer must be a Module, got "
                f"{type(encoder_layer).__name__}"
            )
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """The input through every layer (and the final norm)."""
        out = src
        for layer in self.layers:
            out = layer(
                out,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        if self.norm is not None:
            out = self.norm(out)
        return out


__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]
