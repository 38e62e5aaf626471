"""MultiheadAttention and the transformer encoder against PyTorch's: outputs, attention weights,
input and parameter gradients (float64) with every mask kind, layouts and options."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn.modules.attention import generate_square_subsequent_mask

from .layer_helpers import compare_layer

rng = np.random.default_rng(0)
L, S, N, E = 4, 5, 3, 8


def _x(*shape):
    return rng.standard_normal(shape)


def _mha_call(masks):
    def call(layer, q, k, v):
        lib = aa if isinstance(layer, nn.Module) else __import__("torch")
        made = {
            name: lib.tensor(value) if value is not None else None for name, value in masks.items()
        }
        return layer(q, k, v, **made)

    return call


MHA_CASES = [
    ({}, {}),
    ({"batch_first": True}, {}),
    ({}, {"attn_mask": np.triu(np.ones((L, S), bool), 1)}),
    ({}, {"attn_mask": _x(L, S)}),
    ({}, {"key_padding_mask": np.array([[0, 0, 0, 1, 1], [0] * 5, [0, 1, 0, 0, 0]], bool)}),
    ({"bias": False}, {"attn_mask": _x(N * 2, L, S), "average_attn_weights": False}),
    ({"kdim": 6, "vdim": 5}, {"need_weights": False}),
    (
        {"add_bias_kv": True, "add_zero_attn": True},
        {
            "attn_mask": np.triu(np.ones((L, S), bool), 2),
            "key_padding_mask": np.array([[0, 0, 0, 1, 1], [0] * 5, [0, 1, 0, 0, 0]], bool),
        },
    ),
]


@pytest.mark.parametrize(("options", "masks"), MHA_CASES)
def test_multihead_attention_matches_torch(torch, options, masks):
    ours = nn.MultiheadAttention(E, 2, **options)
    theirs = torch.nn.MultiheadAttention(E, 2, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    flags = {k: v for k, v in masks.items() if not isinstance(v, np.ndarray)}
    arrays = {k: v for k, v in masks.items() if isinstance(v, np.ndarray)}
    batch_first = options.get("batch_first", False)
    q_shape = (N, L, E) if batch_first else (L, N, E)
    k_shape = (N, S, options.get("kdim", E)) if batch_first else (S, N, options.get("kdim", E))
    v_shape = (N, S, options.get("vdim", E)) if batch_first else (S, N, options.get("vdim", E))

    def call(layer, q, k, v):
        lib = aa if isinstance(layer, nn.Module) else torch
        return layer(q, k, v, **{n: lib.tensor(a) for n, a in arrays.items()}, **flags)

    compare_layer(torch, ours, theirs, _x(*q_shape), _x(*k_shape), _x(*v_shape), call=call)


def test_unbatched_attention_matches_torch(torch):
    ours, theirs = nn.MultiheadAttention(E, 4), torch.nn.MultiheadAttention(E, 4)
    compare_layer(torch, ours, theirs, _x(L, E), _x(S, E), _x(S, E))


def test_causal_mask_matches_torch(torch):
    ours = generate_square_subsequent_mask(4)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    assert ours.dtype == aa.float32


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"norm_first": True},
        {"activation": "gelu", "batch_first": True},
        {"dim_feedforward": 16, "bias": False},
    ],
)
def test_encoder_layer_matches_torch(torch, options):
    ours = nn.TransformerEncoderLayer(E, 2, dropout=0.0, **options)
    theirs = torch.nn.TransformerEncoderLayer(E, 2, dropout=0.0, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.eval()  # the fused fast path PyTorch takes in eval gives the same numbers; train is plain
    compare_layer(torch, ours, theirs, _x(L, N, E))
    ours.train()
    theirs.train()
    compare_layer(torch, ours, theirs, _x(L, N, E))


def test_encoder_with_masks_and_final_norm_matches_torch(torch):
    def make(lib):
        layer = lib.nn.TransformerEncoderLayer(
            E, 2, dim_feedforward=12, dropout=0.0, batch_first=True
        )
        return lib.nn.TransformerEncoder(
            layer, 2, norm=lib.nn.LayerNorm(E), enable_nested_tensor=False
        )

    ours, theirs = make(aa), make(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    causal = np.triu(np.ones((L, L), bool), 1)
    padding = np.array([[0, 0, 0, 1], [0] * 4, [0, 0, 1, 1]], bool)

    def call(layer, x):
        lib = aa if isinstance(layer, nn.Module) else torch
        return layer(x, mask=lib.tensor(causal), src_key_padding_mask=lib.tensor(padding))

    compare_layer(torch, ours, theirs, _x(N, L, E), call=call)


def test_encoder_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(E, 2)
    encoder = nn.TransformerEncoder(layer, 3)
    weights = [m.linear1.weight for m in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(
        w is not layer.linear1.weight for w in weights
    )
    assert len(list(encoder.parameters())) == 3 * len(list(layer.parameters()))


def test_attention_dropout_only_in_training():
    layer = nn.MultiheadAttention(E, 2, dropout=0.5)
    x = aa.tensor(_x(L, N, E), dtype=aa.float32)
    layer.eval()
    first, _ = layer(x, x, x)
    second, _ = layer(x, x, x)
    np.testing.assert_array_equal(np.asarray(first.detach()), np.asarray(second.detach()))
    layer.train()
    aa.manual_seed(0)
    noisy, _ = layer(x, x, x)
    assert not np.allclose(np.asarray(noisy.detach()), np.asarray(first.detach()))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda m: m(aa.zeros(L, N, 6), aa.zeros(S, N, E), aa.zeros(S, N, E)),
            RuntimeError,
            r"expected query of shape \(L, 8\)",
        ),
        (
            lambda m: m(aa.zeros(L, N, E), aa.zeros(S, E), aa.zeros(S, E)),
            RuntimeError,
            "all be batched",
        ),
        (
            lambda m: m(
                aa.zeros(L, N, E), aa.zeros(S, N, E), aa.zeros(S, N, E), attn_mask=aa.zeros(3, 3)
            ),
            RuntimeError,
            "The shape of the attn_mask",
        ),
        (
            lambda m: m(aa.zeros(L, N, E), aa.zeros(S, N, E), aa.zeros(S, N, E), is_causal=True),
            RuntimeError,
            "Need attn_mask if specifying the is_causal hint",
        ),
        (
            lambda m: m([1.0], aa.zeros(S, N, E), aa.zeros(S, N, E)),
            TypeError,
            "argument 'query' must be Tensor, not list",
        ),
    ],
)
def test_attention_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.MultiheadAttention(E, 2))


def test_attention_constructor_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(E, 2, activation="tanh")
