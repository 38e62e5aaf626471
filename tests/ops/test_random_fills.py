"""In-place random fills (normal_ uniform_ exponential_ random_ geometric_ log_normal_ cauchy_
bernoulli_): seeded values on every device, distributions, dtypes, and the in-place rules
(version counter, leaf refusal, views, zero gradient) as PyTorch has them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from seeding import assert_follows_the_seed, host

import autograd_async as aa
from autograd_async.ops.inplace import LEAF_MESSAGE, OVERLAP_MESSAGE

N = 100_000  # draws for the statistical checks; bounds are 6 standard errors, so never flaky

# name -> (call on a tensor with a generator, the node PyTorch records)
FILLS = {
    "normal_": (lambda t, g: t.normal_(2.0, 3.0, generator=g), "NormalBackward0"),
    "uniform_": (lambda t, g: t.uniform_(-1.0, 3.0, generator=g), "UniformBackward0"),
    "exponential_": (lambda t, g: t.exponential_(2.0, generator=g), "ExponentialBackward0"),
    "geometric_": (lambda t, g: t.geometric_(0.25, generator=g), "GeometricBackward0"),
    "log_normal_": (lambda t, g: t.log_normal_(0.5, 0.25, generator=g), "LogNormalBackward0"),
    "cauchy_": (lambda t, g: t.cauchy_(1.0, 2.0, generator=g), "CauchyBackward0"),
    "random_()": (lambda t, g: t.random_(generator=g), "RandomBackward2"),
    "random_(to)": (lambda t, g: t.random_(10, generator=g), "RandomBackward1"),
    "random_(from, to)": (lambda t, g: t.random_(-3, 10, generator=g), "RandomBackward0"),
    "bernoulli_(float)": (lambda t, g: t.bernoulli_(0.3, generator=g), "BernoulliBackward2"),
    "bernoulli_(tensor)": (
        lambda t, g: t.bernoulli_(aa.full(t.shape, 0.3, device=t.device), generator=g),
        "BernoulliBackward1",
    ),
}


def _filled(name: str, device: str, generator=None, shape=(6, 5)) -> np.ndarray:
    t = aa.zeros(*shape, device=device)
    out = FILLS[name][0](t, generator)
    assert out is t
    return host(t)


# ------------------------------------------------------------------ seeds
@pytest.mark.parametrize("name", sorted(FILLS))
def test_the_same_seed_gives_the_same_values(device, name):
    def fill(dev: str, generator) -> aa.Tensor:
        t = aa.zeros(6, 5, device=dev)
        return FILLS[name][0](t, generator)

    assert_follows_the_seed(fill, device)


@pytest.mark.parametrize("name", sorted(FILLS))
def test_cpu_and_sim_draw_the_same_values_from_one_seed(name):
    aa.manual_seed(21)
    on_cpu = _filled(name, "cpu")
    aa.manual_seed(21)
    np.testing.assert_array_equal(on_cpu, _filled(name, "sim:1"))


def test_normal_and_uniform_fills_draw_what_randn_and_rand_draw(device):
    aa.manual_seed(3)
    expected = host(aa.randn(4, 3, device=device))
    aa.manual_seed(3)
    np.testing.assert_array_equal(host(aa.empty(4, 3, device=device).normal_()), expected)
    g = aa.Generator(9)
    expected = host(aa.rand(7, device=device, dtype=aa.float64, generator=g))
    filled = aa.empty(7, device=device, dtype=aa.float64).uniform_(generator=aa.Generator(9))
    np.testing.assert_array_equal(host(filled), expected)


# ---------------------------------------------------------- distributions
def _mean_within(values: np.ndarray, mean: float, std: float) -> None:
    """The sample mean lies within 6 standard errors of the distribution's mean."""
    values = values.astype(np.float64)
    assert abs(values.mean() - mean) <= 6 * std / math.sqrt(values.size), (values.mean(), mean)


def _fraction_within(hits: np.ndarray, p: float) -> None:
    _mean_within(hits.astype(np.float64), p, math.sqrt(p * (1 - p)))


def test_normal_and_log_normal_moments(device):
    values = host(aa.empty(N, device=device).normal_(2.0, 3.0))
    _mean_within(values, 2.0, 3.0)
    assert np.std(values) == pytest.approx(3.0, rel=0.03)
    logs = np.log(host(aa.empty(N, device=device, dtype=aa.float64).log_normal_(0.5, 0.25)))
    _mean_within(logs, 0.5, 0.25)
    assert np.std(logs) == pytest.approx(0.25, rel=0.03)


def test_uniform_stays_in_its_range_with_the_right_mean(device):
    values = host(aa.empty(N, device=device).uniform_(-1.0, 3.0))
    assert values.min() >= -1.0 and values.max() < 3.0
    _mean_within(values, 1.0, 4 / math.sqrt(12))
    same = host(aa.empty(5, device=device).uniform_(2.5, 2.5))
    assert np.all(same == 2.5)  # from == to is allowed, as in PyTorch


def test_exponential_geometric_and_cauchy(device):
    values = host(aa.empty(N, device=device).exponential_(2.0))
    assert values.min() >= 0
    _mean_within(values, 0.5, 0.5)
    counts = host(aa.empty(N, device=device, dtype=aa.int64).geometric_(0.25))
    assert counts.min() >= 1 and np.all(counts == np.round(counts))
    _mean_within(counts, 4.0, math.sqrt(0.75) / 0.25)
    cauchy = host(aa.empty(N, device=device, dtype=aa.float64).cauchy_(1.0, 2.0))
    # Cauchy has no mean: half its mass is below the median, half within a scale of it.
    _fraction_within(cauchy < 1.0, 0.5)
    _fraction_within(np.abs(cauchy - 1.0) < 2.0, 0.5)


def test_bernoulli_fill_frequencies(device):
    hits = host(aa.empty(N, device=device).bernoulli_(0.3))
    assert set(np.unique(hits)) <= {0.0, 1.0}
    _fraction_within(hits, 0.3)
    probs = aa.tensor([0.0, 1.0, 0.5], device=device)
    rows = host(aa.empty(N // 10, 3, device=device, dtype=aa.bool).bernoulli_(probs))
    assert rows.dtype == np.bool_
    assert not rows[:, 0].any() and rows[:, 1].all()
    _fraction_within(rows[:, 2], 0.5)


@pytest.mark.parametrize(
    ("dtype", "top"),
    [
        ("uint8", 255),
        ("int8", 127),
        ("int16", 2**15 - 1),
        ("int32", 2**31 - 1),
        ("int64", 2**63 - 1),
        ("bool", 1),
        ("float16", 2**11),
        ("float32", 2**24),
        ("float64", 2**53),
    ],
)
def test_random_default_range_per_dtype(device, dtype, top):
    values = host(aa.empty(20_000, device=device, dtype=dtype).random_())
    assert values.dtype == np.dtype(dtype)
    assert values.min() >= 0 and int(values.max()) <= top
    # The draws cover the range: their largest is near its top (for bool: both values).
    assert int(values.max()) >= (1 if dtype == "bool" else top // 2)


def test_random_ranges_and_keywords(device):
    t = aa.empty(N, device=device)
    values = host(t.random_(-3, 4))
    assert set(np.unique(values)) == set(range(-3, 4))
    for value in range(-3, 4):
        _fraction_within(values == value, 1 / 7)
    assert set(np.unique(host(t.random_(3)))) == {0, 1, 2}
    assert set(np.unique(host(t.random_(**{"from": 5, "to": 7})))) == {5, 6}
    assert set(np.unique(host(t.random_(to=2)))) == {0, 1}
    big = host(aa.empty(1000, device=device, dtype=aa.int64).random_(2**62, None))
    assert big.min() >= 2**62
    small = host(aa.empty(1000, device=device, dtype=aa.int8).random_(100, None))
    assert small.min() >= 100 and small.max() <= 127


def test_uniform_takes_from_as_a_keyword_or_positionally(device):
    a = host(aa.empty(1000, device=device).uniform_(**{"from": -5, "to": -4}))
    b = host(aa.empty(1000, device=device).uniform_(-5, -4))
    c = host(aa.empty(1000, device=device).uniform_(to=-4, from_=-5))
    for values in (a, b, c):
        assert values.min() >= -5 and values.max() < -4
    with pytest.raises(TypeError, match="unexpected keyword argument 'low'"):
        aa.empty(3).uniform_(low=1)


# ---------------------------------------------------------------- dtypes
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", sorted(FILLS))
def test_fills_keep_the_tensor_dtype(name, dtype):
    t = aa.zeros(4, 3, dtype=dtype)
    FILLS[name][0](t, None)
    assert t.dtype == np.dtype(dtype) and host(t).dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda t: t.normal_(),
            NotImplementedError,
            "\"normal_kernel_cpu\" not implemented for 'Long'",
        ),
        (
            lambda t: t.uniform_(),
            NotImplementedError,
            "\"check_uniform_bounds\" not implemented for 'Long'",
        ),
        (
            lambda t: t.log_normal_(),
            NotImplementedError,
            "\"log_normal_cpu\" not implemented for 'Long'",
        ),
        (
            lambda t: t.exponential_(),
            RuntimeError,
            "Exponential distribution is a continuous probability distribution. dtype must be a "
            "floating point but you specified Long",
        ),
        (
            lambda t: t.cauchy_(),
            RuntimeError,
            "Cauchy distribution is a continuous probability distribution. dtype must be a "
            "floating point but you specified long int",
        ),
    ],
)
def test_continuous_fills_refuse_integer_tensors(call, error, message):
    t = aa.zeros(3, dtype=aa.int64)
    with pytest.raises(error) as info:
        call(t)
    assert str(info.value) == message
    assert t._version == 0


def test_integer_fills_on_integer_and_bool_tensors():
    assert set(np.unique(host(aa.zeros(500, dtype=aa.int32).bernoulli_(0.5)))) == {0, 1}
    assert host(aa.zeros(50, dtype=aa.int32).geometric_(0.5)).min() >= 1
    with pytest.raises(NotImplementedError, match="\"geometric_cpu\" not implemented for 'Bool'"):
        aa.zeros(3, dtype=aa.bool).geometric_(0.5)
    with pytest.raises(NotImplementedError, match="bernoulli_tensor_cpu_p_"):
        aa.zeros(3).bernoulli_(aa.tensor([0, 1, 1]))


# -------------------------------------------------------- in-place rules
@pytest.mark.parametrize("name", sorted(FILLS))
def test_version_counter_and_the_in_place_error(name):
    a = aa.rand(3, 2, requires_grad=True)
    c = a * 1
    e = c * c  # saves c
    before = c._version
    FILLS[name][0](c, None)
    assert c._version == before + 1
    expected_node = FILLS[name][1]
    assert c.grad_fn.name() == expected_node
    forward = expected_node.rsplit("Backward", 1)
    shown = forward[0] if forward[1] == "0" else forward[0] + forward[1]
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        e.sum().backward()
    assert (
        f"which is output 0 of {shown}, is at version {before + 1}; expected version "
        f"{before} instead" in str(info.value)
    )


@pytest.mark.parametrize("name", sorted(FILLS))
def test_a_leaf_that_requires_grad_is_refused(name):
    x = aa.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        FILLS[name][0](x, None)
    assert str(info.value) == LEAF_MESSAGE
    assert x._version == 0
    with aa.no_grad():
        FILLS[name][0](x, None)  # allowed outside grad mode, and it stays a leaf
    assert x.is_leaf and x.grad_fn is None and x.requires_grad and x._version == 1


def test_leaf_and_view_errors_match_torch(torch):
    for lib in (aa, torch):
        x = lib.rand(3, requires_grad=True)
        with pytest.raises(RuntimeError) as ours:
            x.normal_()
        with pytest.raises(RuntimeError) as of_view:
            x[:2].uniform_()
        if lib is aa:
            texts = (str(ours.value), str(of_view.value))
        else:
            assert (str(ours.value), str(of_view.value)) == texts


def test_an_expanded_tensor_is_refused():
    with pytest.raises(RuntimeError) as info:
        aa.zeros(1).expand(3).normal_()
    assert str(info.value) == OVERLAP_MESSAGE


def test_a_view_writes_into_its_base(device):
    base = aa.zeros(4, 3, device=device)
    base[1:3].normal_()
    values = host(base)
    assert np.all(values[[0, 3]] == 0) and np.all(values[1:3] != 0)
    column = base[:, 1]
    column.fill_(0.0)
    column.uniform_(5.0, 6.0)
    values = host(base)
    assert np.all(values[:, 1] >= 5) and np.all(values[:, [0, 2]] < 5)
    assert base._version == column._version


@pytest.mark.parametrize("name", sorted(FILLS))
def test_zero_gradient_through_the_filled_values(name, device):
    x = aa.rand(3, 2, device=device, requires_grad=True)
    y = x * 2
    FILLS[name][0](y, None)
    (y * 3 + x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.ones((3, 2), np.float32))


def test_a_filled_view_gives_its_base_copy_slices_like_torch(torch):
    def run(lib):
        a = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        c = a * 2
        c[1:3].uniform_()
        names = (type(c.grad_fn).__name__, type(c[1:3].grad_fn).__name__)
        c.sum().backward()
        return names, a.grad.tolist() if lib is torch else host(a.grad).tolist()

    ours, theirs = run(aa), run(torch)
    assert ours[1] == theirs[1] == [2.0, 0.0, 0.0, 2.0]
    assert ours[0][0] == "CopySlices" and theirs[0][0] == "CopySlices"


def test_tensor_probabilities_get_a_zero_gradient_like_torch(torch):
    def run(lib):
        x = lib.tensor([0.5, 0.25], requires_grad=True)
        p = lib.tensor([0.5, 0.5], dtype=lib.float64, requires_grad=True)
        y = x * 1
        y.bernoulli_(p)
        name = type(y.grad_fn).__name__
        (y * 2 + x + p.sum()).sum().backward()
        return name, x.grad.tolist(), p.grad.tolist(), str(p.grad.dtype)

    ours, theirs = run(aa), run(torch)
    assert ours[:3] == theirs[:3] == ("BernoulliBackward1", [1.0, 1.0], [2.0, 2.0])
    assert ours[3].endswith("float64") and theirs[3].endswith("float64")


@pytest.mark.parametrize("name", sorted(FILLS))
def test_nodes_are_named_as_in_torch(torch, name):
    call, node = FILLS[name]
    t = torch.rand(3, requires_grad=True) * 1
    if "tensor" in name:
        t.bernoulli_(torch.full((3,), 0.3))
    else:
        call(t, None) if "bernoulli" not in name else t.bernoulli_(0.3)
    assert type(t.grad_fn).__name__ == node


def test_create_graph_backward_through_a_fill():
    x = aa.rand(3, dtype=aa.float64, requires_grad=True)
    y = x * x
    y.exponential_()
    z = (y + x * x).sum()
    (gx,) = aa.autograd.grad(z, x, create_graph=True)
    (gxx,) = aa.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(host(gx), 2 * host(x.detach()))
    np.testing.assert_allclose(host(gxx), np.full(3, 2.0))


# ---------------------------------------------------------- bad arguments
BAD_ARGUMENTS = [
    lambda lib: lib.zeros(3).normal_(0, -1.5),
    lambda lib: lib.zeros(3).uniform_(1, 0),
    lambda lib: lib.zeros(3).uniform_(-3e38, 3e38),
    lambda lib: lib.zeros(3).exponential_(0),
    lambda lib: lib.zeros(3).exponential_(-2),
    lambda lib: lib.zeros(3).geometric_(0),
    lambda lib: lib.zeros(3).geometric_(1),
    lambda lib: lib.zeros(3).geometric_(1.5),
    lambda lib: lib.zeros(3).log_normal_(0, 0),
    lambda lib: lib.zeros(3).log_normal_(0, -1),
    lambda lib: lib.zeros(3).cauchy_(0, 0),
    lambda lib: lib.zeros(3).bernoulli_(1.5),
    lambda lib: lib.zeros(3).bernoulli_(-0.1),
    lambda lib: lib.zeros(2).bernoulli_(lib.tensor([0.5, 1.5])),
    lambda lib: lib.zeros(2).bernoulli_(lib.tensor([0.5, 0.5, 0.5])),
    lambda lib: lib.zeros(3).random_(3, 3),
    lambda lib: lib.zeros(3).random_(3, 2),
    lambda lib: lib.zeros(3).random_(-1),
    lambda lib: lib.zeros(3, dtype=lib.uint8).random_(0, 300),
    lambda lib: lib.zeros(3, dtype=lib.uint8).random_(-1, None),
    lambda lib: lib.zeros(3, dtype=lib.int8).random_(-300, 3),
    lambda lib: lib.zeros(3, dtype=lib.int32).random_(0, 2**31 + 1),
    lambda lib: lib.zeros(3, dtype=lib.bool).random_(0, 3),
    lambda lib: lib.zeros(3).random_(2**24 + 5, None),
]


@pytest.mark.parametrize("call", BAD_ARGUMENTS)
def test_bad_arguments_raise_torchs_errors(torch, call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(aa)
    assert str(ours.value) == torch_text(theirs.value)


def torch_text(error: Exception) -> str:
    """PyTorch's message without the boilerplate its generic checks append."""
    return str(error).split("  (Could this error message be improved?")[0]


def test_bad_arguments_leave_the_tensor_alone():
    t = aa.ones(3)
    for call in BAD_ARGUMENTS[:3]:
        with pytest.raises(RuntimeError):
            call(aa)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1.5"):
        t.normal_(0, -1.5)
    assert t._version == 0 and np.all(host(t) == 1)


def test_float_random_range_past_exact_integers_warns_like_torch():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        aa.zeros(3).random_(0, 2**24 + 2)


def test_fills_on_a_device_that_is_not_current():
    # Under CUDA's rules (the second CI pass) a fill enters its tensor's device itself.
    aa.manual_seed(4)
    t = aa.zeros(5, device="sim:1").normal_()
    aa.manual_seed(4)
    np.testing.assert_array_equal(host(t), host(aa.randn(5)))
    assert t.device == aa.device("sim:1")
