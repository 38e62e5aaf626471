"""Every learning-rate scheduler (and SWALR) against PyTorch's over 20 steps, rates and momenta,
with two parameter groups; a mid-run checkpoint of optimizer and scheduler resumes identically;
the coverage of torch.optim.lr_scheduler's public classes."""

from __future__ import annotations

import pytest

import autograd_async as aa
from autograd_async import optim
from autograd_async.nn import Parameter
from autograd_async.optim import lr_scheduler, swa_utils

STEPS = 20


class Tripling:
    """A callable object with state, as CyclicLR saves a custom scale function's attributes."""

    def __init__(self) -> None:
        self.base = 0.5

    def __call__(self, x: float) -> float:
        return self.base ** (x - 1)


def _simple(name: str, **options):
    def build(sched, swa, opt):
        return getattr(sched, name)(opt, **options)

    build.name = name
    return build


def _chained(sched, swa, opt):
    return sched.ChainedScheduler(
        [sched.ConstantLR(opt, factor=0.5, total_iters=3), sched.ExponentialLR(opt, gamma=0.9)]
    )


def _sequential(sched, swa, opt):
    warm = sched.LinearLR(opt, start_factor=0.1, total_iters=4)
    poly = sched.PolynomialLR(opt, total_iters=6, power=2.0)
    cosine = sched.CosineAnnealingLR(opt, T_max=5)
    return sched.SequentialLR(opt, [warm, poly, cosine], milestones=[4, 12])


def _swalr(sched, swa, opt):
    return swa.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=6, anneal_strategy="linear")


def _swalr_cos(sched, swa, opt):
    return swa.SWALR(opt, swa_lr=0.02, anneal_epochs=4)


BUILDERS = [
    _simple("StepLR", step_size=3, gamma=0.5),
    _simple("MultiStepLR", milestones=[2, 5, 5, 9], gamma=0.5),
    _simple("ConstantLR", factor=0.25, total_iters=4),
    _simple("LinearLR", start_factor=0.2, end_factor=0.9, total_iters=6),
    _simple("ExponentialLR", gamma=0.9),
    _simple("PolynomialLR"),
    _simple("PolynomialLR", total_iters=12, power=0.5),
    _simple("CosineAnnealingLR", T_max=6, eta_min=0.001),
    _simple("CosineAnnealingWarmRestarts", T_0=3, T_mult=2, eta_min=0.001),
    _simple("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=4),
    _simple(
        "CyclicLR",
        base_lr=[0.01, 0.02],
        max_lr=[0.1, 0.3],
        step_size_up=3,
        step_size_down=5,
        mode="triangular2",
    ),
    _simple(
        "CyclicLR",
        base_lr=0.01,
        max_lr=0.1,
        step_size_up=3,
        mode="exp_range",
        gamma=0.9,
        base_momentum=0.7,
        max_momentum=0.95,
    ),
    _simple(
        "CyclicLR",
        base_lr=0.01,
        max_lr=0.1,
        step_size_up=2,
        scale_fn=Tripling(),
        scale_mode="iterations",
        cycle_momentum=False,
    ),
    _simple("OneCycleLR", max_lr=1.0, total_steps=STEPS + 1, three_phase=True),
    _simple("LambdaLR", lr_lambda=lambda e: 1.0 / (e + 1)),
    _simple("MultiplicativeLR", lr_lambda=lambda e: 0.95),
    _chained,
    _sequential,
    _swalr,
    _swalr_cos,
]


def _name(build) -> str:
    return getattr(build, "name", build.__name__.strip("_"))


def _make(lib, opt_name: str):
    torch_like = lib is not aa
    make_param = (
        (lambda: lib.nn.Parameter(lib.zeros(1))) if torch_like else (lambda: Parameter(aa.zeros(1)))
    )
    groups = [{"params": [make_param()]}, {"params": [make_param()], "lr": 0.3}]
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}
    opt = getattr(lib.optim if torch_like else optim, opt_name)(groups, lr=0.1, **extra)
    return opt


def _modules(lib):
    if lib is aa:
        return lr_scheduler, swa_utils
    return lib.optim.lr_scheduler, lib.optim.swa_utils


def _record(opt, sched, steps):
    seen = []
    for _ in range(steps):
        opt.step()
        sched.step()
        momenta = [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]
        seen.append((list(sched.get_last_lr()), momenta))
    return seen


def _assert_close(ours, theirs):
    for (lrs, moms), (tlrs, tmoms) in zip(ours, theirs, strict=True):
        assert lrs == pytest.approx(tlrs, rel=1e-12, abs=1e-15)
        assert moms == pytest.approx(tmoms, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("build", BUILDERS, ids=_name)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_matches_torch_over_20_steps(torch, build, opt_name):
    opt, topt = _make(aa, opt_name), _make(torch, opt_name)
    sched, tsched = build(*_modules(aa), opt), build(*_modules(torch), topt)
    assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    _assert_close(_record(opt, sched, STEPS), _record(topt, tsched, STEPS))


@pytest.mark.parametrize("build", BUILDERS, ids=_name)
def test_checkpoint_mid_run_resumes_identically(torch, build, tmp_path):
    topt = _make(torch, "SGD")
    tsched = build(*_modules(torch), topt)
    reference = _record(topt, tsched, STEPS)

    opt = _make(aa, "SGD")
    sched = build(*_modules(aa), opt)
    first = _record(opt, sched, STEPS // 2)
    aa.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "c.npz")
    saved = aa.load(tmp_path / "c.npz", weights_only=True)
    opt = _make(aa, "SGD")
    sched = build(*_modules(aa), opt)
    opt.load_state_dict(saved["optimizer"])
    sched.load_state_dict(saved["scheduler"])
    second = _record(opt, sched, STEPS - STEPS // 2)
    _assert_close(first + second, reference)


def test_every_torch_scheduler_class_exists_here(torch):
    names = [n for n in torch.optim.lr_scheduler.__all__ if n[0].isupper()]
    missing = [n for n in names if not hasattr(lr_scheduler, n)]
    assert not missing
    assert {_name(b) for b in BUILDERS} | {"LRScheduler", "ReduceLROnPlateau"} >= {
        n if n not in ("ChainedScheduler", "SequentialLR") else n for n in names
    } - {"ChainedScheduler", "SequentialLR"}


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda s, o: s.CyclicLR(o, 0.1, 1.0, mode="sawtooth"), ValueError),
        (lambda s, o: s.CyclicLR(o, [0.1, 0.2, 0.3], 1.0), ValueError),
        (lambda s, o: s.ChainedScheduler([]), ValueError),
        (lambda s, o: s.ChainedScheduler([s.ReduceLROnPlateau(o)]), ValueError),
    ],
)
def test_scheduler_errors_match_torch(torch, make, error):
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1, momentum=0.9)
    with pytest.raises(error) as expected:
        make(torch.optim.lr_scheduler, topt)
    opt = optim.SGD([Parameter(aa.zeros(1))], lr=0.1, momentum=0.9)
    with pytest.raises(error) as ours:
        make(lr_scheduler, opt)
    assert str(ours.value) == str(expected.value)


def test_cyclic_needs_momentum_like_torch(torch):
    topt = torch.optim.Adagrad([torch.nn.Parameter(torch.zeros(1))])
    with pytest.raises(ValueError) as expected:
        torch.optim.lr_scheduler.CyclicLR(topt, 0.1, 1.0)
    with pytest.raises(ValueError) as ours:
        lr_scheduler.CyclicLR(optim.Adagrad([Parameter(aa.zeros(1))]), 0.1, 1.0)
    assert str(ours.value) == str(expected.value)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"swa_lr": 0.1, "anneal_strategy": "step"}, ValueError),
        ({"swa_lr": 0.1, "anneal_epochs": -1}, ValueError),
        ({"swa_lr": [0.1, 0.2]}, ValueError),
    ],
)
def test_swalr_errors_match_torch(torch, options, error):
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    with pytest.raises(error) as expected:
        torch.optim.swa_utils.SWALR(topt, **options)
    with pytest.raises(error) as ours:
        swa_utils.SWALR(optim.SGD([Parameter(aa.zeros(1))], lr=0.1), **options)
    assert str(ours.value) == str(expected.value)


def test_reduce_on_plateau_checkpoint_resumes_identically(torch, tmp_path):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.8, 0.8, 0.8, 0.81, 0.9, 0.7, 0.7, 0.7, 0.7] * 2
    options = {"mode": "min", "factor": 0.5, "patience": 1, "cooldown": 1, "min_lr": [0.01, 0.02]}
    topt = _make(torch, "SGD")
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **options)
    reference = []
    for m in metrics:
        tsched.step(m)
        reference.append(tsched.get_last_lr())

    opt = _make(aa, "SGD")
    sched = lr_scheduler.ReduceLROnPlateau(opt, **options)
    seen = []
    for m in metrics[:9]:
        sched.step(m)
        seen.append(sched.get_last_lr())
    aa.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "p.pt")
    saved = aa.load(tmp_path / "p.pt")
    opt = _make(aa, "SGD")
    sched = lr_scheduler.ReduceLROnPlateau(opt, **options)
    opt.load_state_dict(saved["opt"])
    sched.load_state_dict(saved["sched"])
    for m in metrics[9:]:
        sched.step(m)
        seen.append(sched.get_last_lr())
    for ours, theirs in zip(seen, reference, strict=True):
        assert ours == pytest.approx(theirs, rel=1e-12)
    assert seen[-1] == pytest.approx([0.01, 0.02])  # down to the floors


def test_multistep_closed_form_after_a_checkpoint(tmp_path):
    opt = _make(aa, "SGD")
    sched = lr_scheduler.MultiStepLR(opt, milestones=[2, 4], gamma=0.5)
    aa.save(sched.state_dict(), tmp_path / "m.pt")
    sched.load_state_dict(aa.load(tmp_path / "m.pt"))
    opt.step()
    with pytest.warns(UserWarning, match="deprecated"):
        sched.step(5)
    assert sched.get_last_lr() == pytest.approx([0.025, 0.075])


def test_stepping_before_the_optimizer_warns_like_torch(torch):
    import warnings

    for lib in (torch, aa):
        opt = _make(lib, "SGD")
        sched = _modules(lib)[0].StepLR(opt, step_size=2)
        with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before"):
            sched.step()
        opt = _make(lib, "SGD")
        sched = _modules(lib)[0].StepLR(opt, step_size=2)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()
