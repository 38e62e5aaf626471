"""dropout1d/2d/3d, alpha_dropout and feature_alpha_dropout: PyTorch's masks, scales, shapes,
warnings and errors; the gradient is the mask the forward drew, on every device."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autograd_async as aa

F = aa.nn.functional
ALPHA = 1.7580993408473766


@pytest.mark.parametrize(
    ("name", "shape", "channel_dims"),
    [
        ("dropout1d", (4, 6, 50), 2),
        ("dropout1d", (6, 50), 1),
        ("dropout2d", (4, 6, 5, 10), 2),
        ("dropout3d", (4, 6, 2, 5, 5), 2),
        ("dropout3d", (6, 2, 5, 5), 1),
    ],
)
def test_feature_dropout_zeroes_whole_channels_and_scales_the_rest(
    device, name, shape, channel_dims
) -> None:
    aa.manual_seed(0)
    x = aa.ones(shape, device=device, dtype=aa.float64, requires_grad=True)
    out = getattr(F, name)(x, p=0.25)
    values = np.asarray(out.detach())
    channels = values.reshape(shape[:channel_dims] + (-1,))
    per_channel = channels[..., :1]
    assert np.all(channels == per_channel)  # one draw per (sample, channel)
    assert set(np.unique(per_channel)) <= {0.0, 1 / 0.75}
    out.backward(aa.ones(shape, device=device, dtype=aa.float64))
    np.testing.assert_array_equal(np.asarray(x.grad), values)


def test_feature_dropout_keeps_about_one_minus_p_of_the_channels() -> None:
    aa.manual_seed(1)
    out = F.dropout2d(aa.ones(200, 50, 1, 1), 0.3)
    kept = float((np.asarray(out) != 0).mean())
    assert abs(kept - 0.7) < 0.03


def test_eval_mode_and_p_zero_are_the_identity() -> None:
    x = aa.randn(2, 3, 4)
    for fn in (F.dropout1d, F.alpha_dropout, F.feature_alpha_dropout):
        assert fn(x, 0.5, training=False) is x
        assert fn(x, 0.0, training=True) is x
    assert float(F.dropout1d(x, 1.0).abs().sum()) == 0


def test_alpha_dropout_keeps_zero_mean_and_unit_variance(device) -> None:
    aa.manual_seed(2)
    x = aa.randn(200_000, device=device, dtype=aa.float64)
    out = np.asarray(F.alpha_dropout(x, 0.2, training=True))
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    a = 1 / math.sqrt((ALPHA**2 * 0.2 + 1) * 0.8)
    dropped = -ALPHA * a + ALPHA * a * 0.2
    assert np.isclose(out, dropped).mean() == pytest.approx(0.2, abs=0.01)


def test_feature_alpha_dropout_drops_channels_to_one_value(device) -> None:
    aa.manual_seed(3)
    x = aa.randn(8, 16, 10, device=device, dtype=aa.float64, requires_grad=True)
    out = F.feature_alpha_dropout(x, 0.5, training=True)
    a = 1 / math.sqrt((ALPHA**2 * 0.5 + 1) * 0.5)
    values = np.asarray(out.detach())
    dropped = np.all(np.isclose(values, -ALPHA * a + ALPHA * a * 0.5), axis=-1)
    kept = np.all(np.isclose(values, np.asarray(x.detach()) * a + ALPHA * a * 0.5), axis=-1)
    assert np.all(dropped | kept) and dropped.any() and kept.any()
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad)[..., 0], np.where(kept, a, 0.0))


def test_in_place_forms_write_into_the_input() -> None:
    x = aa.ones(3, 4, 5)
    out = F.dropout1d(x, 0.5, inplace=True)
    assert out is x or out.data_ptr() == x.data_ptr()
    y = aa.ones(3, 4, 5)
    F.alpha_dropout(y, 0.5, training=True, inplace=True)
    assert not np.all(np.asarray(y) == 1)


def test_messages_match_torch(torch) -> None:
    for lib in (aa, torch):
        f = lib.nn.functional
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            f.dropout2d(lib.ones(2, 2, 2), 1.5)
        with pytest.raises(
            RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"
        ):
            f.dropout1d(lib.ones(2, 2, 2, 2))
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            f.feature_alpha_dropout(lib.ones(3), 0.5, True)
        with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
            f.dropout2d(lib.ones(2, 2, 2))
        with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
            f.dropout3d(lib.ones(2, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f.dropout3d(lib.ones(2, 2, 2, 2))
