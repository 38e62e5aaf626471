"""nn.init's structured and truncated fills: trunc_normal_, orthogonal_, sparse_, dirac_, eye_,
drawn on the tensor's own device, against PyTorch where the result is deterministic."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.nn import init


def test_dirac_and_eye_match_torch(torch, device):
    for shape, groups in (((4, 2, 3, 3), 2), ((3, 5, 4), 1), ((2, 2, 3, 3, 3), 1)):
        ours = init.dirac_(aa.empty(*shape, device=device), groups=groups)
        ref = torch.nn.init.dirac_(torch.empty(*shape), groups=groups)
        assert ours.device.type == aa.device(device).type
        np.testing.assert_array_equal(ours.cpu().numpy(), ref.numpy())
    for shape in ((3, 5), (5, 3)):
        ours = init.eye_(aa.empty(*shape, device=device))
        np.testing.assert_array_equal(ours.cpu().numpy(), torch.nn.init.eye_(torch.empty(*shape)))


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (6, 2, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns(device, shape):
    aa.manual_seed(0)
    t = aa.empty(*shape, dtype=aa.float64, device=device)
    assert init.orthogonal_(t, gain=2.0) is t
    assert t.device.type == aa.device(device).type
    a = t.cpu().numpy().reshape(shape[0], -1)
    small = min(a.shape)
    gram = a @ a.T if a.shape[0] == small else a.T @ a
    np.testing.assert_allclose(gram, 4 * np.eye(small), atol=1e-12)


def test_trunc_normal_stays_in_bounds_with_the_right_moments(device):
    aa.manual_seed(0)
    t = init.trunc_normal_(
        aa.empty(20000, dtype=aa.float64, device=device), mean=0.5, std=2.0, a=-1.0, b=3.0
    )
    values = t.cpu().numpy()
    assert values.min() >= -1.0 and values.max() <= 3.0
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = scipy_stats.truncnorm((-1 - 0.5) / 2, (3 - 0.5) / 2, loc=0.5, scale=2.0)
    assert abs(values.mean() - expected.mean()) < 0.03
    assert abs(values.std() - expected.std()) < 0.03


def test_sparse_zeroes_a_share_of_each_column(device):
    aa.manual_seed(0)
    t = init.sparse_(aa.empty(10, 6, device=device), sparsity=0.25, std=0.5)
    values = t.cpu().numpy()
    np.testing.assert_array_equal((values == 0).sum(axis=0), [3] * 6)
    assert 0.2 < values[values != 0].std() < 1.0


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type and text are what is compared
        return type(exc).__name__, str(exc)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, i: i.orthogonal_(lib.empty(3)),
        lambda lib, i: i.sparse_(lib.empty(3, 2, 2), 0.5),
        lambda lib, i: i.dirac_(lib.empty(3, 3)),
        lambda lib, i: i.dirac_(lib.empty(3, 3, 3), groups=2),
        lambda lib, i: i.eye_(lib.empty(3, 3, 3)),
    ],
)
def test_errors_match_torch(torch, call):
    ref = error_of(lambda: call(torch, torch.nn.init))
    assert ref is not None
    assert error_of(lambda: call(aa, init)) == ref


def test_old_names_warn_and_fill(torch):
    with pytest.warns(
        FutureWarning, match="`nn.init.eye` is now deprecated in favor of `nn.init.eye_`"
    ):
        t = init.eye(aa.empty(2, 2))
    np.testing.assert_array_equal(t.numpy(), np.eye(2))
    for name in (
        "uniform",
        "normal",
        "constant",
        "dirac",
        "xavier_uniform",
        "xavier_normal",
        "kaiming_uniform",
        "kaiming_normal",
        "orthogonal",
        "sparse",
    ):
        assert callable(getattr(init, name)) and hasattr(torch.nn.init, name)
