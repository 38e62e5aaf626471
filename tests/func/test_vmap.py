"""vmap against torch.func.vmap: batching rules, in_dims/out_dims, nesting, randomness, the
per-example fallback, per-example gradients of an MLP and a CNN, and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_async as aa
import autograd_async.nn.functional as F
from autograd_async import func, nn
from autograd_async.func import dispatch


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, aa.Tensor) else t.detach().numpy()


def _close(ours, theirs, atol=1e-5):
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-4, atol=atol)


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _both(torch, device, *arrays):
    return [aa.tensor(a, device=device) for a in arrays], [torch.from_numpy(a) for a in arrays]


# Functions written once for both libraries: (name, function of (lib, *tensors), in_dims, shapes)
CASES = [
    ("unary", lambda L, x: x.exp().tanh() + x.sigmoid() * x.relu(), 0, [(4, 3)]),
    ("binary broadcast", lambda L, x, y: x * y - y / (x.abs() + 1), (0, None), [(4, 3), (2, 1, 3)]),
    ("both batched", lambda L, x, y: L.maximum(x, y) ** 2, (1, 0), [(3, 4), (4, 3)]),
    ("matmul vec", lambda L, x, w: x @ w, (0, None), [(4, 3), (3, 5)]),
    ("matmul mat batched", lambda L, w, x: w @ x, (None, 0), [(2, 3), (4, 3)]),
    ("matmul both", lambda L, a, b: a @ b, (0, 0), [(4, 2, 3), (4, 3, 5)]),
    ("dot", lambda L, a, b: L.dot(a, b), (0, 0), [(4, 3), (4, 3)]),
    (
        "reductions",
        lambda L, x: (
            x.sum() + x.mean(1).max() + x.logsumexp(0).min() + x.var(1).sum() + x.std(0).sum()
        ),
        0,
        [(4, 3, 5)],
    ),
    ("max dim", lambda L, x: x.max(1)[0] + x.amax(0).sum(), 0, [(4, 3, 2)]),
    (
        "views",
        lambda L, x: (
            x.reshape(6, 2)
            .t()
            .permute(1, 0)
            .unsqueeze(0)
            .squeeze(0)
            .flatten()
            .view(3, 4)
            .transpose(0, 1)[1:, ::2]
            .select(1, 0)
        ),
        0,
        [(4, 3, 4)],
    ),
    ("expand", lambda L, x: x.unsqueeze(0).expand(2, 3) + x[0], 0, [(4, 3)]),
    (
        "cat stack",
        lambda L, x, y: L.cat([x, y], 0).sum() + L.stack([x, y], 1),
        (0, None),
        [(4, 3), (3,)],
    ),
    ("softmax", lambda L, x: L.softmax(x, -1) + L.log_softmax(x, 0), 0, [(4, 2, 3)]),
    (
        "activations",
        lambda L, x: (
            L.nn.functional.gelu(x) + L.nn.functional.silu(x) + L.nn.functional.leaky_relu(x, 0.1)
        ),
        0,
        [(4, 5)],
    ),
    (
        "linear",
        lambda L, x, w, b: L.nn.functional.linear(x, w, b),
        (0, None, None),
        [(4, 3), (2, 3), (2,)],
    ),
    (
        "linear batched weight",
        lambda L, x, w: L.nn.functional.linear(x, w),
        (None, 0),
        [(3,), (4, 2, 3)],
    ),
    ("mse", lambda L, x, y: L.nn.functional.mse_loss(x, y), (0, 0), [(4, 3), (4, 3)]),
    ("where compare", lambda L, x: L.where(x > 0, x, x * 0.1), 0, [(4, 3)]),
    (
        "masked_fill",
        lambda L, x, y: x.masked_fill(y > 0, 0.5) + y.masked_fill(x > 0, 1.0),
        (0, None),
        [(4, 3), (3,)],
    ),
    ("einsum", lambda L, a, b: L.einsum("ij,jk->ik", a, b), (0, None), [(4, 2, 3), (3, 2)]),
    ("indexing", lambda L, x: x[..., 1] + x[0, :], 0, [(4, 3, 3)]),
    ("argsort argmax", lambda L, x: x.argsort(0) + x.argmax(-1, keepdim=True), 0, [(4, 3, 2)]),
    (
        "pad norm",
        lambda L, x: L.nn.functional.pad(x, (1, 2)).sum(0) + x.norm(dim=1).sum(),
        0,
        [(4, 3, 2)],
    ),
    (
        "bce",
        lambda L, x, t: L.nn.functional.binary_cross_entropy(x.sigmoid(), t.sigmoid()),
        (0, 0),
        [(4, 3), (4, 3)],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_vmap_matches_torch(torch, device, case):
    _, fn, in_dims, shapes = case
    arrays = [_data(*s, seed=i) for i, s in enumerate(shapes)]
    ours, theirs = _both(torch, device, *arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # these ops all have rules: no per-example fallback
        got = func.vmap(lambda *xs: fn(aa, *xs), in_dims=in_dims)(*ours)
    expected = torch.func.vmap(lambda *xs: fn(torch, *xs), in_dims=in_dims)(*theirs)
    assert tuple(got.shape) == tuple(expected.shape)
    _close(got, expected)


def test_in_dims_pytrees_out_dims_and_none(torch, device):
    a, b, c = _data(3, 4), _data(4, 3, seed=1), _data(2, seed=2)
    (x, y, z), (tx, ty, tz) = _both(torch, device, a, b, c)

    def f(pair, d, scale):
        return {"s": pair[0] * pair[1] + d["v"].sum() * scale, "k": pair[1]}, scale

    in_dims = ((1, 0), {"v": None}, None)
    got = func.vmap(f, in_dims=in_dims, out_dims=({"s": 1, "k": 0}, None))((x, y), {"v": z}, 2.0)
    expected = torch.func.vmap(f, in_dims=in_dims, out_dims=({"s": 1, "k": 0}, None))(
        (tx, ty), {"v": tz}, 2.0
    )
    _close(got[0]["s"], expected[0]["s"])
    _close(got[0]["k"], expected[0]["k"])
    assert got[1] == 2.0
    unbatched = func.vmap(lambda v: z * 2)(x)  # an output the same for every example
    _close(unbatched, torch.func.vmap(lambda v: tz * 2)(tx))


def test_nested_vmap_and_chunks(torch, device):
    a, b = _data(2, 3, 4), _data(4, 5, seed=1)
    (x, w), (tx, tw) = _both(torch, device, a, b)

    def f(v, m):
        return (v @ m).tanh().sum(-1) + v.mean()

    got = func.vmap(func.vmap(f, in_dims=(0, None)), in_dims=(1, None))(x, w)
    expected = torch.func.vmap(torch.func.vmap(f, in_dims=(0, None)), in_dims=(1, None))(tx, tw)
    _close(got, expected)
    _close(
        func.vmap(f, in_dims=(0, None), chunk_size=1)(x, w),
        torch.func.vmap(f, in_dims=(0, None))(tx, tw),
    )


def test_randomness_modes(device):
    x = aa.zeros(5, 3, device=device)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error"):
        func.vmap(lambda v: v + aa.randn(3, device=device))(x)
    same = func.vmap(lambda v: v + aa.rand(3, device=device), randomness="same")(x).cpu().numpy()
    assert (same == same[0]).all()
    different = func.vmap(lambda v: v + aa.rand_like(v), randomness="different")(x).cpu().numpy()
    assert len({tuple(row) for row in different}) == 5
    ones = aa.ones(4, 6, device=device)
    masks = func.vmap(lambda v: F.dropout(v, 0.5), randomness="same")(ones).cpu().numpy()
    assert (masks == masks[0]).all()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda v: F.dropout(v, 0.5))(ones)
    probs = aa.full((4, 200), 0.3, device=device)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(aa.bernoulli)(probs)
    drawn = func.vmap(aa.bernoulli, randomness="different")(probs).cpu().numpy()
    assert len({tuple(row) for row in drawn}) == 4 and 0.2 < drawn.mean() < 0.4
    filled = func.vmap(lambda v: v.clone().uniform_(), randomness="different")(x).cpu().numpy()
    assert len({tuple(row) for row in filled}) == 5
    filled = func.vmap(lambda v: v.clone().normal_(), randomness="same")(x).cpu().numpy()
    assert (filled == filled[0]).all() and filled.std() > 0
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda v: v.clone().uniform_())(x)


def test_per_example_fallback_warns_once_and_is_right(torch, device):
    a = _data(4, 5)
    (x,), (tx,) = _both(torch, device, a)
    dispatch._WARNED.discard("diag")  # said once per process: forget it was said
    with pytest.warns(UserWarning, match="batching rule for diag"):
        got = func.vmap(lambda v: aa.diag(v, 1) * 2)(x)
    _close(got, torch.func.vmap(lambda v: torch.diag(v, 1) * 2)(tx))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per op
        func.vmap(lambda v: aa.diag(v))(x)


def test_vmap_errors_say_what_torch_says():
    x, y = aa.ones(3), aa.ones(4)
    with pytest.raises(
        ValueError,
        match="Expected all tensors to have the same size in the "
        r"mapped dimension, got sizes \[3, 4\]",
    ):
        func.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(ValueError, match="expected in_dim to satisfy -1 <= in_dim < 1"):
        func.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        func.vmap(lambda a: a)(3.0)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        func.vmap(lambda a: a, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda a: 3.0)(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        func.vmap(lambda a: a, randomness="foo")
    with pytest.raises(RuntimeError, match=r"calling \.item\(\) on a Tensor"):
        func.vmap(lambda a: a.sum().item())(aa.ones(2, 2))
    with pytest.raises(RuntimeError, match="can output dynamic shape"):
        func.vmap(aa.nonzero)(aa.ones(2, 2))
    with pytest.raises(ValueError, match="got no inputs"):
        func.vmap(lambda: x)()


def _mlp_loss(lib, model, params, x, y):
    out = lib.func.functional_call(model, params, (x.unsqueeze(0),))
    return lib.nn.functional.cross_entropy(out, y.unsqueeze(0))


def _per_example_loop(loss, params, xs, ys):
    rows = [func.grad(loss)(params, xs[i], ys[i]) for i in range(xs.shape[0])]
    return {k: aa.stack([r[k] for r in rows]) for k in rows[0]}


def test_per_example_gradients_of_an_mlp(device):
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = aa.tensor(_data(5, 6), device=device)
    ys = aa.tensor([0, 2, 1, 1, 0], device=device)

    def loss(p, x, y):
        return F.cross_entropy(func.functional_call(model, p, (x,)), y)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # batched all through, backward included
        got = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    expected = _per_example_loop(loss, params, xs, ys)
    for k in got:
        assert tuple(got[k].shape) == (5,) + tuple(params[k].shape)
        _close(got[k], expected[k])


def test_per_example_gradients_of_a_cnn(torch, device):
    model = nn.Sequential(
        nn.Conv2d(1, 3, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(0),
        nn.Linear(12, 4),
    ).to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = aa.tensor(_data(3, 1, 6, 6), device=device)
    ys = aa.tensor([1, 0, 3], device=device)

    def loss(p, x, y):
        return F.cross_entropy(func.functional_call(model, p, (x,)), y)

    got = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    expected = _per_example_loop(loss, params, xs, ys)
    for k in got:
        _close(got[k], expected[k], atol=1e-4)
    tmodel = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(0),
        torch.nn.Linear(12, 4),
    )
    tparams = {k: torch.from_numpy(_np(v).copy()) for k, v in params.items()}

    def tloss(p, x, y):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(tmodel, p, (x,)), y)

    tgot = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(
        tparams, torch.from_numpy(_data(3, 1, 6, 6)), torch.tensor([1, 0, 3])
    )
    for k in got:
        _close(got[k], tgot[k], atol=1e-4)


def test_jacrev_inside_vmap_and_hessian_vs_torch(torch, device):
    a = _data(4, 3)
    (x,), (tx,) = _both(torch, device, a)

    def f(v):
        return (v.sin() * v).sum()

    _close(func.vmap(func.jacrev(f))(x), torch.func.vmap(torch.func.jacrev(f))(tx))
    _close(func.vmap(func.hessian(f))(x), torch.func.vmap(torch.func.hessian(f))(tx), atol=1e-4)


def test_indexing_by_a_batched_integer_tensor(device):
    # torch.func refuses `x[i]` for a batched 0-d `i` (it calls .item()); ours gathers per example
    a, w = _data(4, 5, 3), _data(5, 3, seed=1)
    x, table = aa.tensor(a, device=device), aa.tensor(w, device=device)
    index = [0, 4, 2, 1]
    y = aa.tensor(index, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = func.vmap(lambda v, i: v[i] * table[i])(x, y)
        grads = func.vmap(func.grad(lambda v, i: (v[i] * table[i]).sum()))(x, y)
    rows = np.arange(4)
    np.testing.assert_allclose(_np(got), a[rows, index] * w[index], rtol=1e-6)
    expected = np.zeros_like(a)
    expected[rows, index] = w[index]
    np.testing.assert_allclose(_np(grads), expected, rtol=1e-6)


def test_compositions_match_torch(torch):
    xs, w = _data(2, 3, 4), _data(4, 5, seed=1)

    def loss(lib):
        return lambda m, x: ((x @ m).tanh() ** 2).sum()

    def run(lib, tr, make):
        m, x = make(w), make(xs)
        return {
            "vmap vmap grad": tr.vmap(
                tr.vmap(tr.grad(loss(lib)), in_dims=(None, 0)), in_dims=(None, 0)
            )(m, x),
            "grad of vmap": tr.grad(lambda m: tr.vmap(loss(lib), in_dims=(None, 0))(m, x[0]).sum())(
                m
            ),
            "jacrev of vmap": tr.jacrev(lambda m: tr.vmap(loss(lib), in_dims=(None, 0))(m, x[0]))(
                m
            ),
            "vmap hessian": tr.vmap(tr.hessian(loss(lib)), in_dims=(None, 0))(
                m[:2, :2], x[0][:, :2]
            ),
            "vmap jvp": tr.vmap(lambda v: tr.jvp(lambda a: loss(lib)(m, a), (v,), (v,))[1])(x[0]),
            "grad of vmap grad": tr.grad(
                lambda m: tr.vmap(tr.grad(loss(lib)), in_dims=(None, 0))(m, x[0]).pow(2).sum()
            )(m),
        }

    ours = run(aa, func, aa.tensor)
    theirs = run(torch, torch.func, torch.from_numpy)
    for key in ours:
        assert tuple(ours[key].shape) == tuple(theirs[key].shape), key
        _close(ours[key], theirs[key], atol=1e-4)


def test_in_place_ops_on_batched_tensors_match_torch(torch, device):
    a = _data(3, 4)
    (x,), (tx,) = _both(torch, device, a)

    def f(v):
        y = v * 2
        y[0] = 5.0
        y[1:3] = v[:2] * 3
        y += v[3]
        return y.mul_(v).pow(2).sum()

    _close(func.vmap(func.grad(f))(x), torch.func.vmap(torch.func.grad(f))(tx))

    def g(v):
        return (v * 2).relu_().sum()

    _close(func.vmap(func.grad(g))(x), torch.func.vmap(torch.func.grad(g))(tx))
    with pytest.raises(RuntimeError, match=r"add_\(self, \*extra_args\) is not possible"):
        func.vmap(lambda v: aa.zeros(4, device=device).add_(v))(x)


@pytest.mark.parametrize("rows", [True, False], ids=["rows", "one row"])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"ignore_index": 1},
        {"ignore_index": 1, "reduction": "sum"},
        {"reduction": "none"},
        {"label_smoothing": 0.1},
    ],
    ids=["mean", "ignored", "ignored sum", "none", "smoothing"],
)
def test_class_index_losses_per_example_match_torch(torch, rows, options):
    xs = _data(4, 3, 5)
    ys = np.array([[0, 1, 4], [2, 2, 1], [3, 0, 0], [1, 1, 1]])
    if not rows:
        xs, ys = xs[:, 0], ys[:, 0]

    def loss(lib, functional):
        if "label_smoothing" in options:
            return lambda x, y: functional.cross_entropy(x, y, **options).sum()
        return lambda x, y: functional.nll_loss(functional.log_softmax(x, -1), y, **options).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # label smoothing runs per example
        got = func.vmap(func.grad(loss(aa, F)))(aa.tensor(xs), aa.tensor(ys))
        values = func.vmap(loss(aa, F))(aa.tensor(xs), aa.tensor(ys))
    tf = torch.nn.functional
    expected = torch.func.vmap(torch.func.grad(loss(torch, tf)))(
        torch.from_numpy(xs), torch.from_numpy(ys)
    )
    tvalues = torch.func.vmap(loss(torch, tf))(torch.from_numpy(xs), torch.from_numpy(ys))
    _close(got, expected)
    np.testing.assert_allclose(_np(values), _np(tvalues), rtol=1e-5, equal_nan=True)
