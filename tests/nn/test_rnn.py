"""RNN, LSTM and GRU against PyTorch with the same weights (float64): outputs, final states and
the gradients of the input, the initial states and every parameter, over the option grid."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn.utils import rnn as rnn_utils
from autograd_async.ops import rnn as rules
from autograd_async.ops.rnn_arrays import backward_arrays, forward_arrays

INPUT, HIDDEN = 3, 4

CASES = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bidirectional": True, "batch_first": True}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"bias": False, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"proj_size": 2}),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True, "bias": False}),
]
IDS = [f"{kind}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for kind, kw in CASES]


def to_numpy(t):
    return t.detach().cpu().numpy()


def pair(torch, kind, kwargs, device="cpu"):
    """The same layer in both libraries, float64, PyTorch's weights loaded into ours."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(INPUT, HIDDEN, **kwargs).double()
    ours = getattr(nn, kind)(INPUT, HIDDEN, **kwargs).double()
    ours.load_state_dict({k: aa.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours.to(device), theirs


def state_shapes(kind, kwargs, batch):
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h_size = kwargs.get("proj_size") or HIDDEN
    shape = lambda size: (layers, batch, size) if batch else (layers, size)  # noqa: E731
    return [shape(h_size), shape(HIDDEN)] if kind == "LSTM" else [shape(h_size)]


def flat_outputs(out, pad):
    """(output tensor, final states) of either library's result; packed output padded again
    (`pad`), as the packed order of equal lengths is PyTorch's own."""
    output, states = out
    if pad is not None:
        output = pad(output)[0]
    return output, list(states) if isinstance(states, tuple) else [states]


def compare(torch, ours, theirs, x, states, device, pack=None):
    """Run both on `x` (and initial `states`, or none); compare values and all gradients."""
    xs_ours = aa.tensor(x, requires_grad=True, device=device)
    xs_theirs = torch.tensor(x, requires_grad=True)
    s_ours = [aa.tensor(s, requires_grad=True, device=device) for s in states]
    s_theirs = [torch.tensor(s, requires_grad=True) for s in states]
    in_ours, in_theirs = xs_ours, xs_theirs
    if pack is not None:
        lengths, enforce_sorted, batch_first = pack
        in_ours = rnn_utils.pack_padded_sequence(
            xs_ours, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted
        )
        in_theirs = torch.nn.utils.rnn.pack_padded_sequence(
            xs_theirs, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted
        )
    hx_ours = None if not states else (s_ours[0] if len(s_ours) == 1 else tuple(s_ours))
    hx_theirs = None if not states else (s_theirs[0] if len(s_theirs) == 1 else tuple(s_theirs))
    packed = pack is not None
    out_ours, st_ours = flat_outputs(
        ours(in_ours, hx_ours), rnn_utils.pad_packed_sequence if packed else None
    )
    out_theirs, st_theirs = flat_outputs(
        theirs(in_theirs, hx_theirs), torch.nn.utils.rnn.pad_packed_sequence if packed else None
    )
    rng = np.random.default_rng(3)
    loss_ours, loss_theirs = 0, 0
    for a, b in zip([out_ours, *st_ours], [out_theirs, *st_theirs], strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(to_numpy(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = rng.standard_normal(tuple(b.shape))
        loss_ours = loss_ours + (a * aa.tensor(w, device=device)).sum()
        loss_theirs = loss_theirs + (b * torch.tensor(w)).sum()
    loss_ours.backward()
    loss_theirs.backward()
    for a, b in zip([xs_ours, *s_ours], [xs_theirs, *s_theirs], strict=True):
        np.testing.assert_allclose(to_numpy(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-11)
    expected = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            to_numpy(p.grad), expected[name].grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=name
        )


@pytest.mark.parametrize(("kind", "kwargs"), CASES, ids=IDS)
@pytest.mark.parametrize("with_states", [False, True], ids=["zero-states", "given-states"])
def test_padded_batch_matches_torch(torch, device, kind, kwargs, with_states):
    ours, theirs = pair(torch, kind, kwargs, device)
    rng = np.random.default_rng(0)
    batch, steps = 3, 5
    shape = (batch, steps, INPUT) if kwargs.get("batch_first") else (steps, batch, INPUT)
    states = [rng.standard_normal(s) for s in state_shapes(kind, kwargs, batch)]
    compare(torch, ours, theirs, rng.standard_normal(shape), states if with_states else [], device)


@pytest.mark.parametrize(("kind", "kwargs"), CASES[::2], ids=IDS[::2])
def test_unbatched_input_matches_torch(torch, device, kind, kwargs):
    ours, theirs = pair(torch, kind, kwargs, device)
    rng = np.random.default_rng(1)
    states = [rng.standard_normal(s) for s in state_shapes(kind, kwargs, None)]
    compare(torch, ours, theirs, rng.standard_normal((4, INPUT)), states, device)
    compare(torch, ours, theirs, rng.standard_normal((4, INPUT)), [], device)


@pytest.mark.parametrize(("kind", "kwargs"), CASES, ids=IDS)
@pytest.mark.parametrize("enforce_sorted", [True, False], ids=["sorted", "unsorted"])
def test_packed_batch_matches_torch(torch, device, kind, kwargs, enforce_sorted):
    ours, theirs = pair(torch, kind, kwargs, device)
    rng = np.random.default_rng(2)
    lengths = [5, 4, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4, 4]
    batch_first = kwargs.get("batch_first", False)
    shape = (5, 5, INPUT)
    states = [rng.standard_normal(s) for s in state_shapes(kind, kwargs, 5)]
    compare(
        torch,
        ours,
        theirs,
        rng.standard_normal(shape),
        states,
        device,
        pack=(lengths, enforce_sorted, batch_first),
    )


def test_packed_output_keeps_the_packing(torch):
    ours, theirs = pair(torch, "LSTM", {"bidirectional": True})
    x = np.random.default_rng(4).standard_normal((4, 3, INPUT))
    packed = rnn_utils.pack_padded_sequence(
        aa.tensor(x), aa.tensor([2, 4, 3]), enforce_sorted=False
    )
    out, (h, c) = ours(packed)
    ref, (h_ref, c_ref) = theirs(
        torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(x), torch.tensor([2, 4, 3]), enforce_sorted=False
        )
    )
    assert isinstance(out, rnn_utils.PackedSequence)
    assert out.batch_sizes.tolist() == ref.batch_sizes.tolist()
    assert out.sorted_indices.tolist() == ref.sorted_indices.tolist()
    assert out.unsorted_indices.tolist() == ref.unsorted_indices.tolist()
    np.testing.assert_allclose(to_numpy(out.data), ref.data.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(to_numpy(h), h_ref.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(to_numpy(c), c_ref.detach().numpy(), rtol=1e-10)


def test_state_dict_keys_shapes_and_all_weights_follow_torch(torch):
    for kind, kwargs in CASES:
        ours, theirs = pair(torch, kind, kwargs)
        mine = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
        ref = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
        assert list(mine) == list(ref)
        assert mine == ref
        assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == [
            [tuple(w.shape) for w in ws] for ws in theirs.all_weights
        ]
        assert ours._flat_weights_names == theirs._flat_weights_names
        assert repr(ours) == repr(theirs)
        ours.flatten_parameters()


def test_initialisation_is_uniform_within_one_over_sqrt_hidden():
    layer = nn.LSTM(5, 16, num_layers=2, bidirectional=True, proj_size=4)
    bound = 1 / np.sqrt(16)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.9 * bound and values.max() > 0.9 * bound
    assert abs(values.mean()) < 0.02


def test_dropout_between_layers_only_while_training(torch):
    aa.manual_seed(0)
    layer = nn.GRU(INPUT, HIDDEN, num_layers=2, dropout=0.5).double()
    x = aa.tensor(np.random.default_rng(5).standard_normal((6, 2, INPUT)))
    first, second = layer(x)[0], layer(x)[0]
    assert not np.allclose(first.detach().numpy(), second.detach().numpy())
    layer.eval()
    a, b = layer(x)[0], layer(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    single = nn.GRU(INPUT, HIDDEN, num_layers=2).double()
    single.load_state_dict(layer.state_dict())
    np.testing.assert_allclose(single(x)[0].detach().numpy(), a.detach().numpy())


def test_one_graph_node_per_layer_direction():
    layer = nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True)
    out, _ = layer(aa.randn(30, 2, INPUT, requires_grad=True))
    names = [type(n).__name__ for n in _nodes(out.grad_fn)]
    assert names.count("RecurrentLayerBackward0") == 4
    assert len(names) < 30  # not one node per step or per gate (30 steps)


def _nodes(root):
    seen, stack, found = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        found.append(node)
        stack.extend(fn for fn, _ in node.next_functions)
    return found


def test_gradcheck_float64():
    aa.manual_seed(0)
    for layer in (nn.LSTM(2, 3, proj_size=2, bidirectional=True), nn.GRU(2, 3), nn.RNN(2, 3)):
        layer.double()
        x = aa.randn(3, 2, 2, dtype=aa.float64, requires_grad=True)
        h0 = aa.randn(
            2 if layer.bidirectional else 1,
            2,
            layer.proj_size or 3,
            dtype=aa.float64,
            requires_grad=True,
        )
        if isinstance(layer, nn.LSTM):
            c0 = aa.randn(2, 2, 3, dtype=aa.float64, requires_grad=True)
            params = [x, h0, c0, *layer.parameters()]

            def fn(x, h0, c0, *_, layer=layer):
                out, (h, c) = layer(x, (h0, c0))
                return out, h, c
        else:
            params = [x, h0, *layer.parameters()]

            def fn(x, h0, *_, layer=layer):
                return layer(x, h0)

        assert aa.autograd.gradcheck(fn, params)


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("LSTM", {"proj_size": 2}),
        ("GRU", {}),
        ("RNN", {}),
        ("LSTM", {"bidirectional": True, "num_layers": 2}),
        ("GRU", {"bidirectional": True}),
    ],
)
def test_double_backward_matches_torch(torch, device, kind, kwargs):
    ours, theirs = pair(torch, kind, kwargs, device)
    rng = np.random.default_rng(6)
    lengths = [3, 2, 2]
    x = rng.standard_normal((3, 3, INPUT))
    results = []
    for lib, layer in (("ours", ours), ("torch", theirs)):
        if lib == "ours":
            xt = aa.tensor(x, requires_grad=True, device=device)
            packed = rnn_utils.pack_padded_sequence(xt, lengths)
            grad = aa.autograd.grad
        else:
            xt = torch.tensor(x, requires_grad=True)
            packed = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths)
            grad = torch.autograd.grad
        out, _ = layer(packed)
        weights = list(layer.parameters())
        first = grad((out.data**2).sum(), [xt, *weights], create_graph=True)
        total = sum((g * g).sum() for g in first)
        second = grad(total, [xt, *weights])
        results.append([to_numpy(g) if lib == "ours" else g.numpy() for g in second])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_in_place_loops_agree_with_the_plain_rules(mode, reverse):
    rng = np.random.default_rng(7)
    batch_sizes, hidden, proj = (3, 3, 2, 1), 4, 3 if mode == "LSTM" else None
    gates = rules.GATES[mode] * hidden
    size = proj or hidden
    x = rng.standard_normal((sum(batch_sizes), 2))
    h0, c0 = rng.standard_normal((3, size)), rng.standard_normal((3, hidden))
    w_ih, w_hh = rng.standard_normal((gates, 2)), rng.standard_normal((gates, size))
    b_ih, b_hh = rng.standard_normal(gates), rng.standard_normal(gates)
    w_hr = rng.standard_normal((proj, hidden)) if proj else None
    c0 = c0 if mode == "LSTM" else None
    inputs = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
    plain = rules.run_layer(mode, batch_sizes, reverse, *inputs)
    fast = forward_arrays(mode, rules.step_spans(batch_sizes), reverse, *inputs)
    for a, b in zip(plain[:3], fast[:3], strict=True):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    g_out = rng.standard_normal(plain[0].shape)
    g_h = rng.standard_normal(h0.shape)
    g_c = rng.standard_normal((3, hidden)) if mode == "LSTM" else None
    need = (True, True, mode == "LSTM", True, True, True, True, proj is not None)
    expected = rules.backprop_layer(
        mode, batch_sizes, reverse, plain[3], need, x, w_ih, w_hh, w_hr, g_out, g_h, g_c
    )
    got = backward_arrays(
        mode,
        rules.step_spans(batch_sizes),
        reverse,
        fast[3],
        need,
        x,
        w_ih,
        w_hh,
        w_hr,
        g_out,
        g_h,
        g_c,
    )
    for a, b in zip(expected, got, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
