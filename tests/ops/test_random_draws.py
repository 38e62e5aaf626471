"""Random draws shaped by tensors: `bernoulli`, `normal`, `multinomial`, `poisson`; seeded on
every device, their distributions, and PyTorch's shapes, dtypes, nodes and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from seeding import assert_follows_the_seed, host

import autograd_async as aa

N = 100_000  # statistical checks allow 6 standard errors: they cannot flake

DRAWS = {
    "bernoulli": lambda d, g: aa.bernoulli(aa.full((4, 5), 0.4, device=d), generator=g),
    "bernoulli(p)": lambda d, g: aa.bernoulli(aa.zeros(6, device=d), 0.5, generator=g),
    "normal(T, T)": lambda d, g: aa.normal(
        aa.zeros(3, 1, device=d), aa.ones(4, device=d), generator=g
    ),
    "normal(T, f)": lambda d, g: aa.normal(aa.arange(5.0, device=d), 2.0, generator=g),
    "normal(f, T)": lambda d, g: aa.normal(1.0, aa.ones(5, device=d), generator=g),
    "normal(f, f)": lambda d, g: aa.normal(0.0, 1.0, (2, 3), device=d, generator=g),
    "multinomial": lambda d, g: aa.multinomial(aa.ones(3, 8, device=d), 5, generator=g),
    "multinomial(replacement)": lambda d, g: aa.multinomial(
        aa.ones(2, 8, device=d), 9, replacement=True, generator=g
    ),
    "poisson": lambda d, g: aa.poisson(aa.full((8,), 20.0, device=d), g),
}


def _fraction_within(hits: np.ndarray, p: float) -> None:
    """The observed frequency lies within 6 standard errors of `p`."""
    hits = hits.astype(np.float64)
    assert abs(hits.mean() - p) <= 6 * math.sqrt(p * (1 - p) / hits.size), (hits.mean(), p)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_the_same_seed_gives_the_same_values(device, name):
    assert_follows_the_seed(DRAWS[name], device)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_cpu_and_sim_draw_the_same_values_from_one_seed(name):
    aa.manual_seed(17)
    on_cpu = host(DRAWS[name]("cpu", None))
    aa.manual_seed(17)
    np.testing.assert_array_equal(on_cpu, host(DRAWS[name]("sim:1", None)))


# ------------------------------------------------------------- bernoulli
def test_bernoulli_frequencies_and_dtype(device):
    probs = aa.tensor([0.0, 1.0, 0.25], dtype=aa.float64, device=device).expand(N // 10, 3)
    draws = aa.bernoulli(probs)
    assert draws.dtype == aa.float64 and draws.shape == (N // 10, 3)
    values = host(draws)
    assert set(np.unique(values)) <= {0.0, 1.0}
    assert not values[:, 0].any() and values[:, 1].all()
    _fraction_within(values[:, 2], 0.25)
    method = aa.full((N,), 0.7, device=device, dtype=aa.float16).bernoulli()
    assert method.dtype == aa.float16
    _fraction_within(host(method), 0.7)
    fixed = aa.zeros(N, device=device).bernoulli(0.1)
    _fraction_within(host(fixed), 0.1)


def test_bernoulli_has_a_zero_gradient_like_torch(torch):
    def run(lib):
        x = lib.tensor([0.2, 0.9, 0.5], requires_grad=True)
        y = lib.bernoulli(x)
        name = type(y.grad_fn).__name__
        (y * 3 + x).sum().backward()
        return name, y.dtype == x.dtype, y.requires_grad, x.grad.tolist()

    ours, theirs = run(aa), run(torch)
    assert ours[:3] == theirs[:3] == ("BernoulliBackward0", True, True)
    assert host(aa.tensor(ours[3])).tolist() == theirs[3] == [1.0, 1.0, 1.0]


def test_bernoulli_with_a_float_p_refuses_backward_like_torch(torch):
    for lib in (aa, torch):
        x = lib.tensor([0.2, 0.9], requires_grad=True)
        y = lib.bernoulli(x, 0.5)
        assert y.requires_grad and y.shape == x.shape
        assert (y.grad_fn.name() if lib is aa else type(y.grad_fn).__name__) == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
            y.sum().backward()


def test_bernoulli_errors_like_torch(torch):
    calls = [
        lambda lib: lib.bernoulli(lib.tensor([0, 1])),
        lambda lib: lib.bernoulli(lib.tensor([0.5, 1.5])),
        lambda lib: lib.bernoulli(lib.tensor([0.5, float("nan")])),
        lambda lib: lib.bernoulli(lib.zeros(2), 1.5),
    ]
    for call in calls:
        _same_error(torch, call)
    with pytest.raises(TypeError, match="takes a float p"):
        aa.bernoulli(aa.zeros(2), aa.zeros(2))


def _same_error(torch, call) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(aa)
    expected = str(theirs.value).split("  (Could this error message be improved?")[0]
    assert str(ours.value) == expected


# ---------------------------------------------------------------- normal
def test_normal_forms_shapes_dtypes_and_nodes_like_torch(torch):
    def run(lib):
        m = lib.zeros(3, 1, requires_grad=True)
        s = lib.ones(4, dtype=lib.float64, requires_grad=True)
        m64 = lib.zeros(2, dtype=lib.float64, requires_grad=True)
        results = [
            lib.normal(m, s),
            lib.normal(m64, 2.0),
            lib.normal(1.0, s),
            lib.normal(0.0, 1.0, (2, 3)),
            lib.normal(0.0, 1.0, size=(4,), dtype=lib.float64, requires_grad=True),
        ]
        sum(r.sum() for r in results[:3]).backward()
        described = [
            (tuple(r.shape), str(r.dtype).split(".")[-1], r.requires_grad, _node_name(r))
            for r in results
        ]
        grads = [np.asarray(g.tolist()).tolist() for g in (m.grad, s.grad, m64.grad)]
        return described, grads

    ours, theirs = run(aa), run(torch)
    assert ours == theirs
    assert [d[3] for d in ours[0]] == [
        "NormalBackward3",
        "NormalBackward1",
        "NormalBackward2",
        None,
        None,
    ]


def _node_name(t) -> str | None:
    fn = t.grad_fn
    return None if fn is None else type(fn).__name__


def test_normal_moments(device):
    mean = aa.full((N,), 2.0, device=device)
    values = host(aa.normal(mean, 3.0)).astype(np.float64)
    assert abs(values.mean() - 2.0) <= 6 * 3.0 / math.sqrt(N)
    assert np.std(values) == pytest.approx(3.0, rel=0.03)
    std = aa.tensor([0.0, 1.0], device=device).expand(N // 2, 2)
    values = host(aa.normal(5.0, std))
    assert np.all(values[:, 0] == 5.0)
    assert np.std(values[:, 1]) == pytest.approx(1.0, rel=0.04)


def test_normal_errors_like_torch(torch):
    calls = [
        lambda lib: lib.normal(lib.zeros(2), -1.0),
        lambda lib: lib.normal(lib.zeros(2), -lib.ones(2)),
        lambda lib: lib.normal(0.0, -1.0, (2,)),
        lambda lib: lib.normal(lib.zeros(2, dtype=lib.int64), 1.0),
        lambda lib: lib.normal(lib.zeros(2), lib.ones(3)),
    ]
    for call in calls:
        _same_error(torch, call)
    with pytest.raises(TypeError, match="needs a size"):
        aa.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="size is only taken"):
        aa.normal(aa.zeros(2), aa.ones(2), (2,))


# ----------------------------------------------------------- multinomial
def test_multinomial_without_replacement_draws_distinct_categories(device):
    probs = aa.tensor([[0.0, 1.0, 2.0, 0.0, 3.0], [1.0, 1.0, 1.0, 1.0, 1.0]], device=device)
    for _ in range(20):
        picked = host(aa.multinomial(probs, 3))
        assert picked.dtype == np.int64 and picked.shape == (2, 3)
        assert sorted(picked[0]) == [1, 2, 4]  # every category of nonzero probability first
        assert len(set(picked[1])) == 3
    all_of_them = host(aa.multinomial(probs, 5))
    assert sorted(all_of_them[0]) == list(range(5))


def test_multinomial_with_replacement_follows_the_weights(device):
    probs = aa.tensor([0.0, 1.0, 3.0, 0.0], device=device)  # weights, not normalised
    picked = host(aa.multinomial(probs, N, replacement=True))
    assert picked.shape == (N,) and set(np.unique(picked)) <= {1, 2}
    _fraction_within(picked == 2, 0.75)
    rows = host(
        aa.multinomial(aa.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]], device=device), 50, True)
    )
    assert np.all(rows[0] == 0) and np.all(rows[1] == 1) and np.all(rows[2] == 1)
    first_draw = host(aa.multinomial(aa.tensor([1.0, 1.0], device=device), N, True))
    _fraction_within(first_draw == 0, 0.5)


def test_multinomial_without_replacement_first_pick_follows_the_weights():
    probs = aa.tensor([1.0, 3.0]).expand(N, 2)
    first = host(aa.multinomial(probs, 1))[:, 0]
    _fraction_within(first == 1, 0.75)


def test_multinomial_is_off_the_graph_like_torch(torch):
    for lib in (aa, torch):
        out = lib.multinomial(lib.ones(3, requires_grad=True), 2)
        assert out.grad_fn is None and not out.requires_grad
        assert out.dtype == lib.int64
        assert tuple(lib.ones(2, 3).multinomial(4, True).shape) == (2, 4)


def test_multinomial_errors_like_torch(torch):
    calls = [
        lambda lib: lib.multinomial(lib.tensor([0.1, 0.9]), 3),
        lambda lib: lib.multinomial(lib.tensor([-1.0, 1.0]), 1),
        lambda lib: lib.multinomial(lib.tensor([float("inf"), 0.0]), 1),
        lambda lib: lib.multinomial(lib.tensor([float("nan"), 1.0]), 1),
        lambda lib: lib.multinomial(lib.tensor([0.0, 0.0]), 1),
        lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1),
        lambda lib: lib.multinomial(lib.ones(()), 1),
        lambda lib: lib.multinomial(lib.ones(3), 0),
        lambda lib: lib.multinomial(lib.ones(3, dtype=lib.int64), 1),
    ]
    for call in calls:
        _same_error(torch, call)


# --------------------------------------------------------------- poisson
def test_poisson_mean_dtype_and_zero_gradient(device):
    rates = aa.tensor([0.0, 4.0], dtype=aa.float64, device=device).expand(N, 2)
    counts = host(aa.poisson(rates))
    assert counts.dtype == np.float64 and np.all(counts == np.round(counts))
    assert np.all(counts[:, 0] == 0)
    assert abs(counts[:, 1].mean() - 4.0) <= 6 * 2.0 / math.sqrt(N)
    x = aa.full((3,), 2.0, device=device, requires_grad=True)
    y = aa.poisson(x * 1)
    assert y.grad_fn.name() == "PoissonBackward0"
    (y + x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.ones(3, np.float32))


def test_poisson_like_torch(torch):
    for lib in (aa, torch):
        assert lib.poisson(lib.ones(2, 3)).dtype == lib.float32
    _same_error(torch, lambda lib: lib.poisson(lib.tensor([-1.0])))
    _same_error(torch, lambda lib: lib.poisson(lib.tensor([1], dtype=lib.int64)))
    assert not hasattr(aa.Tensor, "poisson") and not hasattr(torch.Tensor, "poisson")
    assert not hasattr(aa.Tensor, "normal") and not hasattr(torch.Tensor, "normal")
