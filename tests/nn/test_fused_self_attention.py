"""MultiheadAttention's one-node path (self-attention whose weights are not returned) against
PyTorch in float64: layouts, unbatched input, every mask kind, a mask that takes a gradient."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn

from .layer_helpers import compare_layer

rng = np.random.default_rng(5)
L, N, E, HEADS = 5, 3, 8, 2


def _x(*shape):
    return rng.standard_normal(shape)


def _node_names(out: aa.Tensor) -> set[str]:
    """The names of every node in the graph behind `out`."""
    seen, stack, names = set(), [out.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.name())
        stack.extend(fn for fn, _ in node.next_functions)
    return names


def _self_attention(masks):
    def call(layer, x, *mask_arrays):
        lib = aa if isinstance(layer, nn.Module) else __import__("torch")
        given = {
            name: lib.tensor(a) if isinstance(a, np.ndarray) else a for name, a in masks.items()
        }
        for name, a in zip(("attn_mask",), mask_arrays, strict=False):
            given[name] = a  # a float mask passed as an input: it takes a gradient
        return layer(x, x, x, need_weights=False, **given)

    return call


PADDING = np.array([[0, 0, 0, 1, 1], [0] * 5, [0, 1, 0, 0, 0]], bool)
CASES = [
    ({}, {}),
    ({"batch_first": True}, {}),
    ({"bias": False}, {"attn_mask": np.triu(np.ones((L, L), bool), 1)}),
    ({"batch_first": True}, {"attn_mask": _x(L, L)}),
    ({}, {"attn_mask": _x(N * HEADS, L, L)}),
    ({"batch_first": True}, {"key_padding_mask": PADDING}),
    ({}, {"attn_mask": np.triu(np.ones((L, L), bool), 2), "key_padding_mask": PADDING}),
]


@pytest.mark.parametrize(("options", "masks"), CASES)
def test_self_attention_matches_torch(torch, options, masks):
    ours = nn.MultiheadAttention(E, HEADS, **options)
    theirs = torch.nn.MultiheadAttention(E, HEADS, **options)
    shape = (N, L, E) if options.get("batch_first") else (L, N, E)
    compare_layer(torch, ours, theirs, _x(*shape), call=_self_attention(masks))
    x = aa.tensor(_x(*shape), dtype=aa.float64, requires_grad=True)
    out, weights = _self_attention(masks)(ours, x)
    assert weights is None
    assert "NativeSelfAttentionBackward0" in _node_names(out)


def test_unbatched_self_attention_matches_torch(torch):
    ours, theirs = nn.MultiheadAttention(E, HEADS), torch.nn.MultiheadAttention(E, HEADS)
    compare_layer(torch, ours, theirs, _x(L, E), call=_self_attention({}))
    padding = np.array([0, 0, 1, 0, 1], bool)
    compare_layer(
        torch, ours, theirs, _x(L, E), call=_self_attention({"key_padding_mask": padding})
    )


def test_a_mask_that_takes_a_gradient_matches_torch(torch):
    ours = nn.MultiheadAttention(E, HEADS, batch_first=True)
    theirs = torch.nn.MultiheadAttention(E, HEADS, batch_first=True)
    compare_layer(torch, ours, theirs, _x(N, L, E), _x(N * HEADS, L, L), call=_self_attention({}))
    compare_layer(torch, ours, theirs, _x(N, L, E), _x(L, L), call=_self_attention({}))


def test_dropout_off_in_eval_gives_the_same_output_as_no_dropout():
    noisy = nn.MultiheadAttention(E, HEADS, dropout=0.5)
    plain = nn.MultiheadAttention(E, HEADS)
    plain.load_state_dict(noisy.state_dict())
    noisy.eval()
    x = aa.tensor(_x(L, N, E), dtype=aa.float32)
    first, _ = noisy(x, x, x, need_weights=False)
    second, _ = plain(x, x, x, need_weights=False)
    np.testing.assert_allclose(np.asarray(first), np.asarray(second), rtol=1e-6)
    noisy.train()
    aa.manual_seed(0)
    dropped, _ = noisy(x, x, x, need_weights=False)
    assert not np.allclose(np.asarray(dropped.detach()), np.asarray(first))


def test_returned_weights_equal_the_one_node_output():
    layer = nn.MultiheadAttention(E, HEADS, batch_first=True)
    x = aa.tensor(_x(N, L, E), dtype=aa.float32)
    fused, _ = layer(x, x, x, need_weights=False)
    composed, weights = layer(x, x, x)
    np.testing.assert_allclose(
        np.asarray(fused.detach()), np.asarray(composed.detach()), rtol=1e-5, atol=1e-6
    )
    assert tuple(weights.shape) == (N, L, L)


def test_encoder_layer_relu_leaves_a_hooked_hidden_layer_intact():
    layer = nn.TransformerEncoderLayer(E, HEADS, dim_feedforward=16, dropout=0.0)
    kept = []
    layer.linear1.register_forward_hook(lambda module, args, out: kept.append(out))
    x = aa.tensor(_x(L, N, E), dtype=aa.float32)
    layer(x)
    (hidden,) = kept
    assert (np.asarray(hidden.detach()) < 0).any()  # the pre-activation, not ReLU's output
