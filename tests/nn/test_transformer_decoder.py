"""TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch's: state_dict
keys, outputs and every gradient in float64, with masks, layouts and pre-norm."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn

from .layer_helpers import compare_layer

rng = np.random.default_rng(0)
T, S, N, E = 4, 5, 3, 8


def _x(*shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize(
    "options",
    [{}, {"norm_first": True}, {"batch_first": True, "activation": "gelu"}, {"bias": False}],
)
def test_decoder_layer_matches_torch(torch, options):
    ours = nn.TransformerDecoderLayer(E, 2, dim_feedforward=16, dropout=0.0, **options)
    theirs = torch.nn.TransformerDecoderLayer(E, 2, dim_feedforward=16, dropout=0.0, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    shape_t, shape_m = (
        ((N, T, E), (N, S, E)) if options.get("batch_first") else ((T, N, E), (S, N, E))
    )
    compare_layer(torch, ours, theirs, _x(*shape_t), _x(*shape_m))


def test_decoder_with_masks_and_final_norm_matches_torch(torch):
    def make(lib):
        layer = lib.nn.TransformerDecoderLayer(E, 2, dim_feedforward=12, dropout=0.0)
        return lib.nn.TransformerDecoder(layer, 2, norm=lib.nn.LayerNorm(E))

    ours, theirs = make(aa), make(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    causal = np.triu(np.ones((T, T), bool), 1)
    memory_mask = _x(T, S)
    padding = np.array([[0, 0, 0, 1, 1], [0] * 5, [0, 1, 0, 0, 0]], bool)

    def call(layer, tgt, memory):
        lib = aa if isinstance(layer, nn.Module) else torch
        return layer(
            tgt,
            memory,
            tgt_mask=lib.tensor(causal),
            memory_mask=lib.tensor(memory_mask),
            memory_key_padding_mask=lib.tensor(padding),
            tgt_is_causal=True,
        )

    compare_layer(torch, ours, theirs, _x(T, N, E), _x(S, N, E), call=call)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(torch, batch_first):
    def make(lib):
        return lib.nn.Transformer(
            E, 2, 2, 1, dim_feedforward=12, dropout=0.0, batch_first=batch_first
        )

    ours, theirs = make(aa), make(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    src, tgt = ((N, S, E), (N, T, E)) if batch_first else ((S, N, E), (T, N, E))
    mask = theirs.generate_square_subsequent_mask(T).numpy()
    np.testing.assert_array_equal(np.asarray(ours.generate_square_subsequent_mask(T)), mask)

    def call(layer, a, b):
        lib = aa if isinstance(layer, nn.Module) else torch
        return layer(a, b, tgt_mask=lib.tensor(mask))

    compare_layer(torch, ours, theirs, _x(*src), _x(*tgt), call=call)


def test_transformer_init_and_errors():
    model = nn.Transformer(E, 2, 1, 1, dim_feedforward=12)
    for p in model.parameters():  # every matrix xavier-uniform, as PyTorch re-initialises them
        if p.dim() > 1:
            bound = np.sqrt(6 / (p.shape[0] + p.shape[1]))
            values = np.abs(np.asarray(p.detach()))
            assert values.max() <= bound and values.max() > 0.8 * bound
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(aa.randn(S, 2, E), aa.randn(T, 3, E))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal"):
        model(aa.randn(S, 2, E), aa.randn(T, 2, E + 1))
    custom = nn.Transformer(
        E, 2, custom_encoder=nn.Identity(), num_decoder_layers=1, dim_feedforward=12
    )
    assert isinstance(custom.encoder, nn.Identity)
