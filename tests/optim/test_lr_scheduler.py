"""StepLR and CosineAnnealingLR: PyTorch's learning-rate sequences, closed form, state dicts."""

from __future__ import annotations

import math
import warnings

import pytest

import autograd_async as aa
from autograd_async import optim
from autograd_async.nn import Parameter
from autograd_async.optim.lr_scheduler import CosineAnnealingLR, StepLR

SCHEDULES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("StepLR", {"step_size": 1, "gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 5}),
    ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.01}),
]


def _ours(name: str, config: dict, steps: int) -> list[list[float]]:
    groups = [{"params": [Parameter(aa.zeros(1))]}, {"params": [Parameter(aa.zeros(1))], "lr": 0.3}]
    opt = optim.SGD(groups, lr=0.1)
    sched = getattr(optim.lr_scheduler, name)(opt, **config)
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        assert lrs[-1] == [g["lr"] for g in opt.param_groups]
    return lrs


def _torch(torch, name: str, config: dict, steps: int) -> list[list[float]]:
    params = [torch.nn.Parameter(torch.zeros(1)) for _ in range(2)]
    opt = torch.optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.3}], lr=0.1)
    sched = getattr(torch.optim.lr_scheduler, name)(opt, **config)
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs


@pytest.mark.parametrize(("name", "config"), SCHEDULES)
def test_matches_torch(torch, name, config):
    ours, theirs = _ours(name, config, 23), _torch(torch, name, config, 23)
    for a, b in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)


def test_step_lr_pinned():
    lrs = [lr[0] for lr in _ours("StepLR", {"step_size": 2, "gamma": 0.1}, 5)]
    assert lrs == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.001, 0.001])


def test_cosine_pinned_against_closed_form():
    t_max, eta_min, base = 6, 0.02, 0.1
    lrs = [lr[0] for lr in _ours("CosineAnnealingLR", {"T_max": t_max, "eta_min": eta_min}, 14)]
    for t, lr in enumerate(lrs):
        expected = eta_min + (base - eta_min) * (1 + math.cos(math.pi * t / t_max)) / 2
        assert lr == pytest.approx(expected, rel=1e-9)


def test_step_with_epoch_uses_closed_form():
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=1.0)
    sched = StepLR(opt, step_size=2, gamma=0.5)
    with pytest.warns(UserWarning, match="deprecated"):
        sched.step(5)
    assert sched.get_last_lr() == [0.25]


def test_state_dict_resume():
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=0.5)
    sched = CosineAnnealingLR(opt, T_max=7, eta_min=0.05)
    for _ in range(3):
        sched.step()
    saved = sched.state_dict()
    assert "optimizer" not in saved and saved["last_epoch"] == 3
    expected = []
    for _ in range(4):
        sched.step()
        expected.append(sched.get_last_lr()[0])

    opt2 = optim.SGD([Parameter(aa.zeros(1))], lr=0.5)
    sched2 = CosineAnnealingLR(opt2, T_max=1)
    sched2.load_state_dict(saved)
    opt2.param_groups[0]["lr"] = saved["_last_lr"][0]
    got = []
    for _ in range(4):
        sched2.step()
        got.append(sched2.get_last_lr()[0])
    assert got == pytest.approx(expected)


def test_resume_requires_initial_lr():
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=0.5)
    with pytest.raises(KeyError, match="initial_lr"):
        StepLR(opt, step_size=2, last_epoch=4)


def test_not_an_optimizer():
    with pytest.raises(TypeError, match="is not an Optimizer"), warnings.catch_warnings():
        StepLR(object(), step_size=1)  # type: ignore[arg-type]
