"""The schedulers beyond StepLR and cosine: each one's learning rates (and momenta) equal
PyTorch's over many steps, with two parameter groups, plus their errors and state dicts."""

from __future__ import annotations

import pytest

import autograd_async as aa
from autograd_async import optim
from autograd_async.nn import Parameter
from autograd_async.optim import lr_scheduler


class Halving:
    """A callable object with state, as PyTorch saves it in LambdaLR's state dict."""

    def __init__(self) -> None:
        self.every = 3

    def __call__(self, epoch: int) -> float:
        return 0.5 ** (epoch // self.every)


SCHEDULES = [
    ("LambdaLR", lambda: {"lr_lambda": lambda e: 1.0 / (e + 1)}),
    ("LambdaLR", lambda: {"lr_lambda": [lambda e: 0.9**e, Halving()]}),
    ("MultiplicativeLR", lambda: {"lr_lambda": lambda e: 0.95 if e % 2 else 1.0}),
    ("MultiStepLR", lambda: {"milestones": [2, 5, 5, 9], "gamma": 0.5}),
    ("ExponentialLR", lambda: {"gamma": 0.9}),
    ("ConstantLR", lambda: {"factor": 0.25, "total_iters": 4}),
    ("LinearLR", lambda: {"start_factor": 0.2, "end_factor": 0.9, "total_iters": 6}),
    ("LinearLR", dict),
    ("CosineAnnealingWarmRestarts", lambda: {"T_0": 3}),
    ("CosineAnnealingWarmRestarts", lambda: {"T_0": 2, "T_mult": 2, "eta_min": 0.001}),
    ("OneCycleLR", lambda: {"max_lr": 1.0, "total_steps": 24}),
    (
        "OneCycleLR",
        lambda: {
            "max_lr": [1.0, 2.0],
            "epochs": 4,
            "steps_per_epoch": 6,
            "anneal_strategy": "linear",
            "three_phase": True,
        },
    ),
]
STEPS = 23


def _groups(make_param):
    return [{"params": [make_param()]}, {"params": [make_param()], "lr": 0.3}]


def _run(opt, sched, steps=STEPS):
    lrs, momenta = [sched.get_last_lr()], []
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        for g in opt.param_groups:
            momenta.append(g["betas"][0] if "betas" in g else g["momentum"])
    return lrs, momenta


@pytest.mark.parametrize(("name", "config"), SCHEDULES, ids=[n for n, _ in SCHEDULES])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_matches_torch(torch, name, config, opt_name):
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}
    opt = getattr(optim, opt_name)(_groups(lambda: Parameter(aa.zeros(1))), lr=0.1, **extra)
    ours = _run(opt, getattr(lr_scheduler, name)(opt, **config()))
    topt = getattr(torch.optim, opt_name)(
        _groups(lambda: torch.nn.Parameter(torch.zeros(1))), lr=0.1, **extra
    )
    theirs = _run(topt, getattr(torch.optim.lr_scheduler, name)(topt, **config()))
    for a, b in zip(ours[0], theirs[0], strict=True):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)
    # OneCycleLR cycles SGD's momentum or Adam's beta1 against the rate; the others leave them.
    assert ours[1] == pytest.approx(theirs[1], rel=1e-12)


def test_one_cycle_cycles_momentum_like_torch(torch):
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=0.1, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1, momentum=0.9)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=1.0, total_steps=10)
    seen = [opt.param_groups[0]["momentum"]]
    for _ in range(10):
        opt.step(), sched.step(), topt.step(), tsched.step()
        seen.append(opt.param_groups[0]["momentum"])
        assert seen[-1] == pytest.approx(topt.param_groups[0]["momentum"], rel=1e-12)
    assert seen[0] == 0.95 and min(seen) == pytest.approx(0.85)  # down at the peak rate
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        sched.step()


def test_sequential_matches_torch(torch):
    def build(lib, opt):
        sched = lib.optim.lr_scheduler if lib is torch else lr_scheduler
        warm = sched.LinearLR(opt, start_factor=0.1, total_iters=4)
        decay = sched.ExponentialLR(opt, gamma=0.8)
        cosine = sched.CosineAnnealingLR(opt, T_max=5)
        return sched.SequentialLR(opt, [warm, decay, cosine], milestones=[4, 9])

    opt = optim.SGD(_groups(lambda: Parameter(aa.zeros(1))), lr=0.1)
    topt = torch.optim.SGD(_groups(lambda: torch.nn.Parameter(torch.zeros(1))), lr=0.1)
    ours, theirs = _run(opt, build(aa, opt))[0], _run(topt, build(torch, topt))[0]
    for a, b in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"mode": "max", "factor": 0.5, "patience": 1, "cooldown": 2},
        {"threshold_mode": "abs", "threshold": 0.1, "patience": 0, "min_lr": [0.05, 0.2]},
    ],
)
def test_reduce_on_plateau_matches_torch(torch, config):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.8, 0.8, 0.8, 0.81, 0.9, 0.7] * 3
    opt = optim.SGD(_groups(lambda: Parameter(aa.zeros(1))), lr=0.1)
    topt = torch.optim.SGD(_groups(lambda: torch.nn.Parameter(torch.zeros(1))), lr=0.1)
    ours = lr_scheduler.ReduceLROnPlateau(opt, **config)
    theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **config)
    for m in metrics:
        ours.step(m)
        theirs.step(m)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        assert ours.num_bad_epochs == theirs.num_bad_epochs
    assert ours.get_last_lr() != [0.1, 0.3]


def test_lambda_state_dict_keeps_callable_objects_state():
    opt = optim.SGD(_groups(lambda: Parameter(aa.zeros(1))), lr=0.1)
    halving = Halving()
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 1.0, halving])
    halving.every = 7
    saved = sched.state_dict()
    assert saved["lr_lambdas"] == [None, {"every": 7}]
    other = Halving()
    restored = lr_scheduler.LambdaLR(opt, [lambda e: 1.0, other])
    restored.load_state_dict(saved)
    assert other.every == 7


def test_sequential_state_dict_round_trip():
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=0.1)
    seq = lr_scheduler.SequentialLR(
        opt,
        [
            lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2),
            lr_scheduler.ExponentialLR(opt, gamma=0.5),
        ],
        milestones=[3],
    )
    for _ in range(4):
        seq.step()
    saved = seq.state_dict()
    assert [s["last_epoch"] for s in saved["_schedulers"]] == [2, 1]
    opt2 = optim.SGD([Parameter(aa.zeros(1))], lr=0.1)
    seq2 = lr_scheduler.SequentialLR(
        opt2,
        [
            lr_scheduler.ConstantLR(opt2, factor=0.5, total_iters=2),
            lr_scheduler.ExponentialLR(opt2, gamma=0.5),
        ],
        milestones=[3],
    )
    seq2.load_state_dict(saved)
    assert seq2.last_epoch == 4 and seq2._schedulers[1].last_epoch == 1


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda o: lr_scheduler.LambdaLR(o, [lambda e: 1.0] * 3),
            ValueError,
            "Expected 1 lr_lambdas, but got 3",
        ),
        (lambda o: lr_scheduler.MultiplicativeLR(o, 0.5), TypeError, "should be a function"),
        (lambda o: lr_scheduler.ConstantLR(o, factor=2.0), ValueError, "between 0 and 1"),
        (lambda o: lr_scheduler.LinearLR(o, start_factor=0.0), ValueError, "greater than 0"),
        (
            lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0),
            ValueError,
            "positive integer T_0",
        ),
        (
            lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
            ValueError,
            "T_mult >= 1",
        ),
        (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0), ValueError, "either total_steps"),
        (
            lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=1),
            ValueError,
            "pct_start",
        ),
        (
            lambda o: lr_scheduler.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=5),
            ValueError,
            "max_lr must have the same length",
        ),
        (lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should"),
        (lambda o: lr_scheduler.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown"),
        (
            lambda o: lr_scheduler.SequentialLR(o, [], milestones=[]),
            ValueError,
            "at least one scheduler",
        ),
        (
            lambda o: lr_scheduler.SequentialLR(
                o, [lr_scheduler.ExponentialLR(o, 0.5)], milestones=[2]
            ),
            ValueError,
            "one more than the number of milestone",
        ),
        (
            lambda o: lr_scheduler.SequentialLR(
                o, [lr_scheduler.ReduceLROnPlateau(o)], milestones=[]
            ),
            ValueError,
            "does not support `ReduceLROnPlateau`",
        ),
    ],
)
def test_errors(make, error, message):
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=0.1, momentum=0.9)
    with pytest.raises(error, match=message):
        make(opt)


def test_one_cycle_needs_momentum():
    opt = optim.Adagrad([Parameter(aa.zeros(1))])
    with pytest.raises(ValueError, match="must support momentum"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5)
    lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5, cycle_momentum=False)
