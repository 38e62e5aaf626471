"""swa_utils against PyTorch's: AveragedModel with each averaging function (with and without
buffers), update_bn, the averaging-function factories, and state dicts."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import nn
from autograd_async.optim import swa_utils

STEPS = 6


def _weights():
    rng = np.random.default_rng(0)
    return {
        "0.weight": rng.standard_normal((4, 3)),
        "0.bias": rng.standard_normal(4),
        "1.weight": rng.standard_normal(4),
        "1.bias": rng.standard_normal(4),
    }


def _pair(torch):
    ours = nn.Sequential(nn.Linear(3, 4, dtype="float64"), nn.BatchNorm1d(4, dtype="float64"))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 4, dtype=torch.float64), torch.nn.BatchNorm1d(4, dtype=torch.float64)
    )
    weights = _weights()
    ours.load_state_dict({**ours.state_dict(), **{k: aa.tensor(v) for k, v in weights.items()}})
    theirs.load_state_dict(
        {**theirs.state_dict(), **{k: torch.tensor(v) for k, v in weights.items()}}
    )
    return ours, theirs


def _perturb(ours, theirs, torch, step):
    """Move both models the same way: a forward in training mode (running statistics) and a
    change of every parameter."""
    rng = np.random.default_rng(10 + step)
    x = rng.standard_normal((5, 3))
    ours(aa.tensor(x))
    theirs(torch.tensor(x))
    with aa.no_grad(), torch.no_grad():
        for p, tp in zip(ours.parameters(), theirs.parameters(), strict=True):
            delta = rng.standard_normal(tuple(p.shape)) * 0.1
            p.add_(aa.tensor(delta))
            tp.add_(torch.tensor(delta))


def _compare(avg, tavg):
    ours, theirs = avg.state_dict(), tavg.state_dict()
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        np.testing.assert_allclose(
            np.asarray(ours[key]), value.numpy(), rtol=1e-12, atol=1e-14, err_msg=key
        )
        assert np.asarray(ours[key]).dtype == value.numpy().dtype, key


AVERAGING = [
    ("swa", lambda lib: {}),
    ("ema-multi", lambda lib: {"multi_avg_fn": lib.get_ema_multi_avg_fn(0.9)}),
    ("swa-multi", lambda lib: {"multi_avg_fn": lib.get_swa_multi_avg_fn()}),
    ("ema-avg", lambda lib: {"avg_fn": lib.get_ema_avg_fn(0.8)}),
    ("swa-avg", lambda lib: {"avg_fn": lib.get_swa_avg_fn()}),
]


@pytest.mark.parametrize("averaging", AVERAGING, ids=[a[0] for a in AVERAGING])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(torch, averaging, use_buffers):
    _, options = averaging
    ours, theirs = _pair(torch)
    avg = swa_utils.AveragedModel(ours, use_buffers=use_buffers, **options(swa_utils))
    tavg = torch.optim.swa_utils.AveragedModel(
        theirs, use_buffers=use_buffers, **options(torch.optim.swa_utils)
    )
    for step in range(STEPS):
        _perturb(ours, theirs, torch, step)
        if step and use_buffers and averaging[0] == "swa-multi":
            # The batch counter is an integer buffer: PyTorch's SWA list update refuses it.
            with pytest.raises(RuntimeError) as expected:
                tavg.update_parameters(theirs)
            with pytest.raises(RuntimeError) as refused:
                avg.update_parameters(ours)
            assert str(refused.value) == str(expected.value)
            return
        avg.update_parameters(ours)
        tavg.update_parameters(theirs)
        _compare(avg, tavg)
    assert int(avg.n_averaged) == STEPS
    x = np.random.default_rng(5).standard_normal((2, 3))
    avg.eval()
    tavg.eval()
    np.testing.assert_allclose(
        np.asarray(avg(aa.tensor(x)).detach()), tavg(torch.tensor(x)).detach().numpy(), rtol=1e-12
    )


def test_averaged_model_on_another_device_and_state_dict(tmp_path):
    model = nn.Linear(2, 2)
    avg = swa_utils.AveragedModel(model, device="sim:0")
    assert {str(p.device) for p in avg.parameters()} == {"sim:0"}
    avg.update_parameters(model)
    with aa.no_grad():
        model.weight.add_(1.0)
    avg.update_parameters(model)
    np.testing.assert_allclose(
        np.asarray(avg.module.weight.detach().to("cpu")),
        np.asarray(model.weight.detach()) - 0.5,
        # Adding 1.0 then taking 0.5 away rounds at float32's step near 1.0,
        # so a weight drawn close to zero needs an absolute tolerance.
        rtol=1e-6,
        atol=1e-6,
    )
    aa.save(avg.state_dict(), tmp_path / "avg.pt")
    other = swa_utils.AveragedModel(nn.Linear(2, 2), device="sim:0")
    other.load_state_dict(aa.load(tmp_path / "avg.pt"))
    assert int(other.n_averaged) == 2


def test_update_bn_matches_torch(torch):
    ours, theirs = _pair(torch)
    ours.eval()
    theirs.eval()
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((4, 3)) for _ in range(5)]
    swa_utils.update_bn([[aa.tensor(b), 0] for b in batches], ours)
    torch.optim.swa_utils.update_bn([[torch.tensor(b), 0] for b in batches], theirs)
    assert not ours.training and ours[1].momentum == 0.1
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            np.asarray(ours.state_dict()[key]), value.numpy(), rtol=1e-12, err_msg=key
        )


def test_update_bn_without_batch_norm_changes_nothing():
    model = nn.Linear(2, 2)
    before = np.asarray(model.weight.detach()).copy()
    swa_utils.update_bn([aa.ones(1, 2)], model)
    np.testing.assert_array_equal(np.asarray(model.weight.detach()), before)


@pytest.mark.parametrize("factory", ["get_ema_multi_avg_fn", "get_ema_avg_fn"])
def test_decay_out_of_range_is_refused_like_torch(torch, factory):
    with pytest.raises(ValueError) as expected:
        getattr(torch.optim.swa_utils, factory)(1.5)
    with pytest.raises(ValueError) as ours:
        getattr(swa_utils, factory)(1.5)
    assert str(ours.value) == str(expected.value)


def test_only_one_averaging_function():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(
            nn.Linear(1, 1),
            avg_fn=swa_utils.get_swa_avg_fn(),
            multi_avg_fn=swa_utils.get_swa_multi_avg_fn(),
        )
