"""nn.init: PyTorch's gains and fans, the distributions' bounds and spreads, in-place semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.nn import Parameter, init


@pytest.mark.parametrize(
    ("nonlinearity", "param"),
    [
        ("linear", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("leaky_relu", math.sqrt(5)),
        ("selu", None),
        ("conv2d", None),
    ],
)
def test_gain_matches_torch(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-12
    )


def test_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [(5, 3), (8, 4, 3, 3), (2, 6, 5)])
def test_fans_match_torch(torch, shape):
    ours = init._calculate_fan_in_and_fan_out(aa.zeros(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(*shape))


def test_fans_need_two_dims():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.kaiming_uniform_(aa.zeros(4))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(aa.zeros(4, 4), mode="fan_avg")


N_OUT, N_IN = 400, 250  # 100k samples: spreads within a few percent


def _sample_std(t):
    return float(np.asarray(t.detach()).std())


@pytest.mark.parametrize(
    ("fill", "expected_std", "bound"),
    [
        (lambda t: init.kaiming_uniform_(t), math.sqrt(2 / N_IN), math.sqrt(6 / N_IN)),
        (
            lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
            math.sqrt(2 / N_OUT),
            math.sqrt(6 / N_OUT),
        ),
        (lambda t: init.kaiming_normal_(t, a=0.1), math.sqrt(2 / 1.01 / N_IN), None),
        (
            lambda t: init.xavier_uniform_(t, gain=2.0),
            2 * math.sqrt(2 / (N_IN + N_OUT)),
            2 * math.sqrt(6 / (N_IN + N_OUT)),
        ),
        (lambda t: init.xavier_normal_(t), math.sqrt(2 / (N_IN + N_OUT)), None),
        (lambda t: init.uniform_(t, -0.5, 1.5), 2 / math.sqrt(12), 1.5),
        (lambda t: init.normal_(t, 3.0, 0.25), 0.25, None),
    ],
)
def test_distributions(fill, expected_std, bound, device):
    t = aa.zeros(N_OUT, N_IN, device=device)
    storage = t._data
    version = t._version
    assert fill(t) is t
    assert t._data is storage and t._version == version + 1  # in place, version bumped
    values = np.asarray(t)
    assert _sample_std(t) == pytest.approx(expected_std, rel=0.03)
    if bound is not None:
        assert values.max() <= bound and values.min() >= -bound
        assert values.max() > 0.99 * bound


def test_constants_and_dtype():
    t = aa.zeros(3, 2, dtype="float64")
    init.constant_(t, 0.25)
    assert t.dtype == np.float64 and np.all(np.asarray(t) == 0.25)
    init.ones_(t)
    assert np.all(np.asarray(t) == 1.0)
    init.zeros_(t)
    assert np.all(np.asarray(t) == 0.0)


def test_parameter_stays_a_leaf_that_requires_grad():
    p = Parameter(aa.zeros(4, 4))
    init.xavier_uniform_(p)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


def test_seeded_and_generator_reproducible():
    aa.manual_seed(123)
    a = init.normal_(aa.zeros(5))
    aa.manual_seed(123)
    b = init.normal_(aa.zeros(5))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    g1, g2 = aa.Generator(7), aa.Generator(7)
    c = init.uniform_(aa.zeros(5), generator=g1)
    d = init.uniform_(aa.zeros(5), generator=g2)
    np.testing.assert_array_equal(np.asarray(c), np.asarray(d))


def test_zero_element_is_a_warned_no_op():
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(aa.zeros(0, 3))


@pytest.mark.parametrize("device", ["cpu", "sim:1"])
def test_linear_init_like_torch(device):
    aa.manual_seed(0)
    layer = nn.Linear(N_IN, N_OUT, device=device)
    assert str(layer.weight.device) == device and layer.weight.dtype == np.float32
    bound = 1 / math.sqrt(N_IN)
    w, b = np.asarray(layer.weight.detach()), np.asarray(layer.bias.detach())
    assert w.shape == (N_OUT, N_IN) and b.shape == (N_OUT,)
    # kaiming_uniform(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as is the bias
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    assert abs(w.mean()) < 0.01 * bound
    assert np.abs(b).max() <= bound
    hist, _ = np.histogram(w, bins=10, range=(-bound, bound))
    assert hist.min() > 0.9 * w.size / 10  # flat, not bell-shaped


def _ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov distance between the empirical CDFs of a and b."""
    a, b = np.sort(a.ravel()), np.sort(b.ravel())
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / a.size
    cdf_b = np.searchsorted(b, grid, side="right") / b.size
    return float(np.abs(cdf_a - cdf_b).max())


def test_linear_init_distribution_matches_torch(torch):
    aa.manual_seed(1)
    torch.manual_seed(1)
    ours, theirs = nn.Linear(N_IN, N_OUT), torch.nn.Linear(N_IN, N_OUT)
    # Same distribution: the KS distance stays under the 0.1% critical value (1.95 sqrt(2/n)).
    w_ours, w_theirs = np.asarray(ours.weight.detach()), theirs.weight.detach().numpy()
    assert _ks_statistic(w_ours, w_theirs) < 1.95 * math.sqrt(2 / w_ours.size)
    b_ours, b_theirs = np.asarray(ours.bias.detach()), theirs.bias.detach().numpy()
    assert _ks_statistic(b_ours, b_theirs) < 1.95 * math.sqrt(2 / b_ours.size)


def test_layer_norm_and_embedding_init():
    ln = nn.LayerNorm((2, 3))
    assert np.all(np.asarray(ln.weight.detach()) == 1) and np.all(np.asarray(ln.bias.detach()) == 0)
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None
    assert nn.LayerNorm(3, bias=False).bias is None
    emb = nn.Embedding(50, 40, padding_idx=-1)
    table = np.asarray(emb.weight.detach())
    assert emb.padding_idx == 49 and np.all(table[49] == 0)
    assert table[:49].std() == pytest.approx(1.0, rel=0.1)
    frozen = nn.Embedding.from_pretrained(aa.ones(3, 2))
    assert not frozen.weight.requires_grad and frozen.num_embeddings == 3
    with pytest.raises(ValueError, match="Padding_idx must be within"):
        nn.Embedding(3, 2, padding_idx=3)


def test_fills_draw_on_the_device_what_its_random_creation_draws(device):
    # nn.init is the tensor's own fill: the values randn/rand give on that device for the seed.
    aa.manual_seed(5)
    w = init.normal_(aa.empty(4, 3, device=device), 1.0, 2.0)
    aa.manual_seed(5)
    expected = np.asarray(aa.randn(4, 3, device=device).cpu()) * 2.0 + 1.0
    np.testing.assert_allclose(np.asarray(w.cpu()), expected, rtol=1e-6)
    b = init.uniform_(aa.empty(6, device=device), generator=aa.Generator(2))
    np.testing.assert_array_equal(
        np.asarray(b.cpu()), np.asarray(aa.rand(6, device=device, generator=aa.Generator(2)).cpu())
    )


def test_bad_ranges_raise_torchs_errors(torch):
    for call in (
        lambda lib: lib.nn.init.uniform_(lib.zeros(3), 1.0, 0.0),
        lambda lib: lib.nn.init.normal_(lib.zeros(3), 0.0, -1.0),
        lambda lib: lib.nn.init.uniform_(lib.zeros(3, dtype=lib.int64)),
    ):
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(type(theirs.value)) as ours:
            call(aa)
        assert str(ours.value) == str(theirs.value)
