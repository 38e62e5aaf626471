"""Every optimizer against PyTorch's, step by step over 20 steps of a small model's real backward
(float64, several option combinations), state-dict layouts and mid-run resumes, LBFGS on the
Rosenbrock function, and PyTorch's constructor errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import optim
from autograd_async.nn import Parameter

STEPS = 20
# (name, options) pairs; each runs with a second parameter group at half the rate.
CASES = [
    ("SGD", {"lr": 0.05}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "amsgrad": True}),
    ("Adamax", {"lr": 0.02}),
    ("Adamax", {"lr": 0.02, "betas": (0.8, 0.9), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.02, "weight_decay": 0.05, "maximize": True}),
    ("ASGD", {"lr": 0.05}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 3, "maximize": True}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.02, "etas": (0.3, 1.5), "step_sizes": (1e-4, 0.05)}),
    ("Rprop", {"lr": 0.01, "maximize": True}),
    ("NAdam", {"lr": 0.01, "momentum_decay": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("Adafactor", {"lr": 0.01}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-20, 1e-2), "d": 1.5}),
    ("Adafactor", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("SparseAdam", {"lr": 0.01}),
    ("SparseAdam", {"lr": 0.02, "betas": (0.8, 0.95), "eps": 1e-6, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("Adadelta", {"lr": 0.5, "weight_decay": 0.1, "maximize": True}),
]
# Optimizers whose PyTorch constructor has no `foreach` (the others run PyTorch's single-tensor
# loop, the form ours follows).
NO_FOREACH = {"SparseAdam", "LBFGS"}


def _case_id(case: tuple) -> str:
    name, options = case
    return name + "".join(f"-{k}={v}" for k, v in options.items())


def _init() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "w1": rng.standard_normal((5, 4)) * 0.5,
        "b1": rng.standard_normal(5) * 0.1,
        "w2": rng.standard_normal((3, 5)) * 0.5,
        "b2": rng.standard_normal(3) * 0.1,
    }


def _batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100 + step)
    return rng.standard_normal((6, 4)), rng.standard_normal((6, 3))


def _loss(p: dict, x, y):
    hidden = (x @ p["w1"].T + p["b1"]).tanh()
    out = hidden @ p["w2"].T + p["b2"]
    return ((out - y) ** 2).mean()


def _gradients(params: dict[str, Parameter], step: int) -> dict[str, np.ndarray | None]:
    """Real gradients of the small model at its current parameters (ours)."""
    for p in params.values():
        p.grad = None
    x, y = _batch(step)
    _loss(params, aa.tensor(x), aa.tensor(y)).backward()
    grads = {k: np.asarray(p.grad).copy() for k, p in params.items()}
    if step % 5 == 2:  # a parameter without a gradient for a step
        grads["b2"] = None
    return grads


def _sparsify(name: str, grads: dict, step: int) -> None:
    """For SparseAdam: zero some rows, as an embedding's gradient leaves untouched rows."""
    if name == "SparseAdam":
        for g in grads.values():
            if g is not None and g.ndim == 2:
                g[step % g.shape[0]] = 0.0


def _groups(params: dict, options: dict) -> list[dict]:
    return [
        {"params": [params["w1"], params["b1"]]},
        {"params": [params["w2"], params["b2"]], "lr": options["lr"] / 2},
    ]


def _torch_grad(torch, name: str, g: np.ndarray | None):
    if g is None:
        return None
    t = torch.tensor(g)
    return t.to_sparse(1) if name == "SparseAdam" else t


def _make_pair(torch, name: str, options: dict):
    ours = {k: Parameter(aa.tensor(v)) for k, v in _init().items()}
    theirs = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in _init().items()}
    extra = {} if name in NO_FOREACH else {"foreach": False}
    opt = getattr(optim, name)(_groups(ours, options), **options)
    topt = getattr(torch.optim, name)(_groups(theirs, options), **options, **extra)
    return ours, theirs, opt, topt


def _step_both(torch, name, ours, theirs, opt, topt, step):
    grads = _gradients(ours, step)
    _sparsify(name, grads, step)
    for key, g in grads.items():
        ours[key].grad = None if g is None else aa.tensor(g)
        theirs[key].grad = _torch_grad(torch, name, g)
    opt.step()
    topt.step()


def _assert_same(ours: dict, theirs: dict, step: int, rtol: float = 1e-10) -> None:
    for key, p in ours.items():
        np.testing.assert_allclose(
            np.asarray(p.detach()),
            theirs[key].detach().numpy(),
            rtol=rtol,
            atol=1e-12,
            err_msg=f"{key} after step {step}",
        )


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_each_step_matches_torch(torch, case):
    name, options = case
    ours, theirs, opt, topt = _make_pair(torch, name, options)
    for step in range(STEPS):
        _step_both(torch, name, ours, theirs, opt, topt, step)
        _assert_same(ours, theirs, step)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_state_dict_layout_matches_torch(torch, case):
    name, options = case
    ours, theirs, opt, topt = _make_pair(torch, name, options)
    for step in range(3):
        _step_both(torch, name, ours, theirs, opt, topt, step)
    mine, reference = opt.state_dict(), topt.state_dict()
    assert sorted(mine["state"]) == sorted(reference["state"])
    for index, entry in reference["state"].items():
        assert sorted(mine["state"][index]) == sorted(entry), index
        for key, value in entry.items():
            assert isinstance(mine["state"][index][key], aa.Tensor) == torch.is_tensor(value)
    assert [sorted(g) for g in mine["param_groups"]] == [
        sorted(g) for g in reference["param_groups"]
    ]
    assert [g["params"] for g in mine["param_groups"]] == [
        g["params"] for g in reference["param_groups"]
    ]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_resume_through_a_checkpoint_continues_identically(torch, case, tmp_path):
    name, options = case
    ours, theirs, opt, topt = _make_pair(torch, name, options)
    for step in range(STEPS // 2):
        _step_both(torch, name, ours, theirs, opt, topt, step)
    aa.save({"optimizer": opt.state_dict(), "params": dict(ours)}, tmp_path / "ckpt.npz")
    saved = aa.load(tmp_path / "ckpt.npz")
    resumed = {k: Parameter(v.detach()) for k, v in saved["params"].items()}
    fresh = getattr(optim, name)(_groups(resumed, options), lr=123.0)
    fresh.load_state_dict(saved["optimizer"])
    for step in range(STEPS // 2, STEPS):
        _step_both(torch, name, resumed, theirs, fresh, topt, step)
        _assert_same(resumed, theirs, step)


MUON_CASES = [
    {},
    {"lr": 0.02, "nesterov": False, "adjust_lr_fn": "match_rms_adamw"},
    {"lr": 0.01, "momentum": 0.8, "weight_decay": 0.0, "ns_steps": 3, "adjust_lr_fn": "original"},
]


@pytest.mark.parametrize("options", MUON_CASES, ids=lambda o: str(o) or "defaults")
def test_muon_each_step_matches_torch(torch, options):
    # Muon takes the 2-d weights only; its update is computed in (emulated) bfloat16.
    ours, theirs, _, _ = _make_pair(torch, "SGD", {"lr": 0.1})
    opt = optim.Muon([ours["w1"], ours["w2"]], **options)
    topt = torch.optim.Muon([theirs["w1"], theirs["w2"]], **options)
    for step in range(STEPS):
        grads = _gradients(ours, step)
        for key in ("w1", "w2"):
            ours[key].grad = aa.tensor(grads[key])
            theirs[key].grad = torch.tensor(grads[key])
        opt.step()
        topt.step()
        # Bit for bit mostly; a float32 sum order different from PyTorch's can move an entry
        # by one bfloat16 rounding step (2**-8 relative) of an update scaled by the rate.
        lr = options.get("lr", 1e-3)
        for key in ("w1", "w2"):
            np.testing.assert_allclose(
                np.asarray(ours[key].detach()),
                theirs[key].detach().numpy(),
                rtol=1e-10,
                atol=lr * 2**-7 * (step + 1),
                err_msg=f"{key} after step {step}",
            )


def test_muon_refuses_other_than_matrices_like_torch(torch):
    with pytest.raises(ValueError) as expected:
        torch.optim.Muon([torch.nn.Parameter(torch.zeros(3))])
    with pytest.raises(ValueError) as ours:
        optim.Muon([Parameter(aa.zeros(3))])
    assert str(ours.value) == str(expected.value)


# ---------------------------------------------------------------------------- LBFGS


def _rosenbrock(x):
    return ((1 - x[:-1]) ** 2 + 100 * (x[1:] - x[:-1] ** 2) ** 2).sum()


LBFGS_CASES = [
    {},
    {"line_search_fn": "strong_wolfe"},
    {"lr": 0.5, "history_size": 3, "max_iter": 7},
    {"line_search_fn": "strong_wolfe", "history_size": 4, "max_eval": 9, "tolerance_change": 1e-6},
    {"tolerance_grad": 1e-3, "line_search_fn": "strong_wolfe"},
]


@pytest.mark.parametrize("options", LBFGS_CASES, ids=lambda o: str(o) or "defaults")
def test_lbfgs_on_rosenbrock_matches_torch(torch, options):
    start = np.array([-1.2, 1.0, -0.5, 0.8, 1.5])
    x = Parameter(aa.tensor(start))
    tx = torch.nn.Parameter(torch.tensor(start))
    opt = optim.LBFGS([x], **options)
    topt = torch.optim.LBFGS([tx], **options)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    def tclosure():
        topt.zero_grad()
        loss = _rosenbrock(tx)
        loss.backward()
        return loss

    for step in range(6):
        loss = opt.step(closure)
        tloss = topt.step(tclosure)
        np.testing.assert_allclose(float(loss), float(tloss.detach()), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(
            np.asarray(x.detach()),
            tx.detach().numpy(),
            rtol=1e-7,
            atol=1e-10,
            err_msg=f"after step {step}",
        )
        state, tstate = opt.state[x], topt.state[tx]
        assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])
    if options == {"line_search_fn": "strong_wolfe"}:  # converged to the minimum at ones
        np.testing.assert_allclose(np.asarray(x.detach()), np.ones(5), atol=1e-4)


def test_lbfgs_resumes_from_a_checkpoint(tmp_path):
    start = np.array([-1.2, 1.0, 0.3])

    def run(x, opt, steps):
        def closure():
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss

        for _ in range(steps):
            opt.step(closure)

    x = Parameter(aa.tensor(start))
    run(x, optim.LBFGS([x], max_iter=3, history_size=5), 6)
    reference = np.asarray(x.detach()).copy()

    x = Parameter(aa.tensor(start))
    opt = optim.LBFGS([x], max_iter=3, history_size=5)
    run(x, opt, 3)
    aa.save({"opt": opt.state_dict(), "x": x}, tmp_path / "lbfgs.npz")
    saved = aa.load(tmp_path / "lbfgs.npz")
    y = Parameter(saved["x"].detach())
    resumed = optim.LBFGS([y], max_iter=3, history_size=5)
    resumed.load_state_dict(saved["opt"])
    run(y, resumed, 3)
    np.testing.assert_allclose(np.asarray(y.detach()), reference, rtol=1e-12)


def test_lbfgs_on_a_sim_device_matches_cpu():
    start = np.array([-1.2, 1.0, 0.3])
    results = []
    for device in ("cpu", "sim:0"):
        x = Parameter(aa.tensor(start, device=device))
        opt = optim.LBFGS([x], line_search_fn="strong_wolfe")

        def closure(x=x, opt=opt):
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        assert str(opt.state[x]["d"].device) == device
        results.append(np.asarray(x.detach().to("cpu")))
    np.testing.assert_array_equal(results[0], results[1])


def test_lbfgs_refuses_groups_and_unknown_line_search():
    a, b = Parameter(aa.zeros(2)), Parameter(aa.zeros(2))
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = optim.LBFGS([a], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((a - 1.0) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


# ---------------------------------------------------------------------------- errors


def _p():
    return [Parameter(aa.zeros(2, 2))]


ERRORS = [
    ("Adamax", {"lr": -1.0}),
    ("Adamax", {"eps": -1.0}),
    ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}),
    ("Adamax", {"weight_decay": -1.0}),
    ("ASGD", {"lr": -0.1}),
    ("ASGD", {"weight_decay": -0.1}),
    ("Rprop", {"lr": -0.1}),
    ("Rprop", {"etas": (1.5, 1.2)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
    ("Adafactor", {"lr": -1.0}),
    ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1.0, 1e-3)}),
    ("Adafactor", {"eps": (None, -1e-3)}),
    ("Adafactor", {"d": 0.5}),
    ("Adafactor", {"weight_decay": -0.5}),
    ("SparseAdam", {"lr": 0.0}),
    ("SparseAdam", {"eps": 0.0}),
    ("SparseAdam", {"betas": (0.9, 1.0)}),
    ("LBFGS", {"lr": -1.0}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("RAdam", {"betas": (0.9, 1.5)}),
    ("Adadelta", {"rho": 1.5}),
    ("Adagrad", {"initial_accumulator_value": -1.0}),
    ("SGD", {"momentum": -0.5}),
    ("SGD", {"fused": True, "foreach": True}),
    ("Adam", {"fused": True, "differentiable": True}),
    ("AdamW", {"fused": True, "foreach": True}),
    ("Muon", {"lr": -1.0}),
    ("Muon", {"momentum": -0.1}),
    ("Muon", {"weight_decay": -0.1}),
    ("Muon", {"adjust_lr_fn": "sqrt"}),
]


@pytest.mark.parametrize("case", ERRORS, ids=_case_id)
def test_constructor_errors_match_torch(torch, case):
    name, options = case
    with pytest.raises(Exception) as expected:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2, 2))], **options)
    with pytest.raises(type(expected.value)) as ours:
        getattr(optim, name)(_p(), **options)
    assert str(ours.value) == str(expected.value)


def test_sparse_adam_refuses_complex_parameters_as_torch(torch):
    with pytest.raises(ValueError) as expected:
        torch.optim.SparseAdam([torch.zeros(2), torch.zeros(2, dtype=torch.complex128)])
    with pytest.raises(ValueError) as ours:
        optim.SparseAdam([aa.zeros(2), aa.zeros(2, dtype="complex128")])
    assert str(ours.value) == str(expected.value)


def test_every_constructor_accepts_torch_keywords(torch):
    import inspect

    for name in optim.__all__:
        ours = getattr(optim, name)
        if not isinstance(ours, type) or name == "Optimizer":
            continue
        theirs = inspect.signature(getattr(torch.optim, name).__init__).parameters
        mine = inspect.signature(ours.__init__).parameters
        assert list(mine) == list(theirs), name
        for key, param in theirs.items():
            if param.default is not inspect.Parameter.empty:
                assert mine[key].default == param.default, f"{name}.{key}"
            assert mine[key].kind == param.kind, f"{name}.{key}"
