"""SGD, Adam and AdamW against PyTorch's updates, pinned numbers, groups, state dicts, versions."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async import optim
from autograd_async.nn import Parameter

SHAPES = [(3, 4), (5,), ()]
STEPS = 5

SGD_CONFIGS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.3},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
    {"lr": 0.1, "momentum": 0.5, "weight_decay": 0.1, "nesterov": True, "maximize": True},
]
ADAM_CONFIGS = [
    {"lr": 0.01},
    {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-6},
    {"lr": 0.01, "weight_decay": 0.1},
    {"lr": 0.01, "amsgrad": True},
    {"lr": 0.01, "maximize": True, "weight_decay": 0.05, "amsgrad": True},
]
ADAMW_CONFIGS = [
    {"lr": 0.01},
    {"lr": 0.02, "weight_decay": 0.1, "amsgrad": True},
    {"lr": 0.01, "maximize": True},
]
MORE_CONFIGS = {
    "RMSprop": [
        {"lr": 0.01},
        {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.1},
        {"lr": 0.01, "momentum": 0.9, "centered": True},
        {"lr": 0.02, "momentum": 0.5, "maximize": True},
    ],
    "Adagrad": [
        {"lr": 0.1},
        {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.5},
        {"lr": 0.05, "eps": 1e-6, "maximize": True},
    ],
    "Adadelta": [
        {},
        {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1},
        {"maximize": True},
    ],
    "NAdam": [
        {},
        {"lr": 0.01, "betas": (0.8, 0.99), "momentum_decay": 0.01},
        {"lr": 0.01, "weight_decay": 0.1},
        {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True},
    ],
    "RAdam": [
        {},
        {"lr": 0.01, "betas": (0.5, 0.6)},
        {"lr": 0.01, "weight_decay": 0.1},
        {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True},
    ],
    "Adamax": [{}, {"lr": 0.01, "weight_decay": 0.1, "maximize": True}],
    "ASGD": [{}, {"lr": 0.05, "t0": 2, "lambd": 0.01, "weight_decay": 0.1}],
    "Rprop": [{}, {"lr": 0.02, "etas": (0.3, 1.5), "maximize": True}],
    "Adafactor": [{}, {"lr": 0.05, "weight_decay": 0.1, "maximize": True}],
}
CASES = (
    [("SGD", c) for c in SGD_CONFIGS]
    + [("Adam", c) for c in ADAM_CONFIGS]
    + [("AdamW", c) for c in ADAMW_CONFIGS]
    + [(name, c) for name, configs in MORE_CONFIGS.items() for c in configs]
)


def _case_id(case: tuple) -> str:
    name, config = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in config.items())


def _data(dtype: str, seed: int = 0) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    # Step 2 leaves the second parameter without a gradient, as a frozen-for-a-step parameter.
    grads[2][1] = None
    return init, grads


def _run_ours(name: str, config: dict, dtype: str, device: str) -> list[np.ndarray]:
    init, grads = _data(dtype)
    params = [Parameter(aa.tensor(a, device=device)) for a in init]
    opt = getattr(optim, name)(params, **config)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = None if g is None else aa.tensor(g, device=device)
        opt.step()
    for p in params:
        assert str(p.device) == device
    return [np.asarray(p.detach()) for p in params]


def _run_torch(torch, name: str, config: dict, dtype: str) -> list[np.ndarray]:
    init, grads = _data(dtype)
    params = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt = getattr(torch.optim, name)(params, foreach=False, **config)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = None if g is None else torch.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in params]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(torch, case, dtype, device):
    name, config = case
    ours = _run_ours(name, config, dtype, device)
    theirs = _run_torch(torch, name, config, dtype)
    rtol, atol = (2e-6, 1e-7) if dtype == "float32" else (1e-13, 1e-15)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _pinned_params() -> list[Parameter]:
    return [Parameter(aa.tensor([1.0, 2.0], dtype="float64"))]


def _steps(opt: optim.Optimizer, param: Parameter, n: int) -> np.ndarray:
    for _ in range(n):
        param.grad = aa.tensor([0.5, -1.0], dtype="float64")
        opt.step()
    return np.asarray(param.detach())


def test_sgd_momentum_pinned():
    (p,) = params = _pinned_params()
    # velocities g, 1.9g, 2.71g: p - 0.1 * 5.61 g
    out = _steps(optim.SGD(params, lr=0.1, momentum=0.9), p, 3)
    np.testing.assert_allclose(out, [0.7195, 2.561], rtol=1e-12)


def test_adam_pinned():
    (p,) = params = _pinned_params()
    # With a constant gradient the bias-corrected step is lr * g / (|g| + eps) each time.
    out = _steps(optim.Adam(params, lr=0.1), p, 2)
    np.testing.assert_allclose(out, [0.8, 2.2], rtol=1e-7)


def test_adamw_pinned():
    (p,) = params = _pinned_params()
    out = _steps(optim.AdamW(params, lr=0.1, weight_decay=0.1), p, 1)
    np.testing.assert_allclose(out, [0.99 - 0.1, 1.98 + 0.1], rtol=1e-7)


def test_state_lives_on_parameter_device():
    p = Parameter(aa.zeros(3, device="sim:0"))
    opt = optim.Adam([p], lr=0.1, amsgrad=True)
    p.grad = aa.ones(3, device="sim:0")
    opt.step()
    state = opt.state[p]
    assert {str(state[k].device) for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")} == {"sim:0"}
    assert str(state["step"].device) == "cpu" and state["step"].item() == 1.0
    sgd = optim.SGD([p], lr=0.1, momentum=0.9)
    sgd.step()
    assert str(sgd.state[p]["momentum_buffer"].device) == "sim:0"


def test_step_bumps_version_and_invalidates_saved_graph():
    p = Parameter(aa.tensor([1.0, 2.0]))
    y = (p * p).sum() if hasattr(aa.Tensor, "sum") else p * p
    before = p._version
    p.grad = aa.tensor([1.0, 1.0])
    optim.SGD([p], lr=0.1).step()
    assert p._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(aa.ones_like(y) if y.ndim else None)


def test_gradient_array_is_not_modified():
    p = Parameter(aa.tensor([1.0, 2.0]))
    g = aa.tensor([0.5, 0.5])
    p.grad = g
    optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1, maximize=True).step()
    optim.Adam([p], lr=0.1, weight_decay=0.1).step()
    np.testing.assert_array_equal(np.asarray(g), [0.5, 0.5])


def test_gradient_on_other_device_is_refused():
    p = Parameter(aa.zeros(2))
    p.grad = aa.zeros(2)
    p.data = aa.zeros(2, device="sim:0")  # `.grad` is checked when assigned, not after
    with pytest.raises(RuntimeError, match="gradient of a parameter on sim:0 is on cpu"):
        optim.SGD([p], lr=0.1).step()


@pytest.mark.parametrize(
    "make", [lambda p: optim.SGD([p], lr=0.1), lambda p: optim.Adam([p], lr=0.1)]
)
def test_gradient_of_another_shape_is_refused(make):
    p = Parameter(aa.zeros(3, 2))
    p.grad = aa.zeros(3, 2)
    p.data = aa.zeros(2, 3)  # `.grad` is checked when assigned, not after
    with pytest.raises(
        RuntimeError,
        match=r"the gradient's shape \(3, 2\) does not match the "
        r"parameter's \(2, 3\)",
    ):
        make(p).step()
    np.testing.assert_array_equal(np.asarray(p.detach()), np.zeros((2, 3)))


def test_closure_runs_with_grad_enabled():
    p = Parameter(aa.tensor([1.0]))
    opt = optim.SGD([p], lr=0.1)

    def closure():
        assert aa.is_grad_enabled()
        p.grad = aa.tensor([2.0])
        return 7.0

    with aa.no_grad():
        assert opt.step(closure) == 7.0
    np.testing.assert_allclose(np.asarray(p.detach()), [0.8])


def test_param_groups_and_defaults():
    a, b = Parameter(aa.zeros(2)), Parameter(aa.zeros(3))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9
    c = Parameter(aa.zeros(1))
    opt.add_param_group({"params": [c], "momentum": 0.0})
    assert opt.param_groups[2]["lr"] == 0.1 and opt.param_groups[2]["momentum"] == 0.0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
        (lambda: optim.SGD(Parameter(aa.zeros(1)), lr=0.1), TypeError, "iterable of Tensors"),
        (lambda: optim.SGD([aa.zeros(1)], lr=-1.0), ValueError, "Invalid learning rate"),
        (lambda: optim.SGD([aa.zeros(1)], nesterov=True), ValueError, "Nesterov momentum"),
        (lambda: optim.Adam([aa.zeros(1)], betas=(1.0, 0.9)), ValueError, "beta parameter at"),
        (lambda: optim.Adam([aa.zeros(1)], eps=-1.0), ValueError, "Invalid epsilon"),
        (lambda: optim.SGD([1.0]), TypeError, "can only optimize Tensors"),
        (lambda: optim.RMSprop([aa.zeros(1)], alpha=-0.5), ValueError, "Invalid alpha value"),
        (lambda: optim.Adagrad([aa.zeros(1)], lr_decay=-1), ValueError, "Invalid lr_decay"),
        (lambda: optim.Adadelta([aa.zeros(1)], rho=1.5), ValueError, "Invalid rho value"),
        (lambda: optim.NAdam([aa.zeros(1)], momentum_decay=-1), ValueError, "momentum_decay"),
        (lambda: optim.RAdam([aa.zeros(1)], betas=(0.9, 1.0)), ValueError, "beta parameter at"),
        (lambda: optim.SGD({aa.zeros(1)}), TypeError, "ordered collections"),
    ],
)
def test_constructor_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_non_leaf_is_refused():
    p = Parameter(aa.zeros(2))
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    a, b = Parameter(aa.ones(2)), Parameter(aa.ones(2))
    shared = aa.tensor([3.0, 4.0])
    storage = shared._data
    a.grad = shared
    b.grad = shared  # gradients may share an array; zeroing one must not write into it
    opt = optim.SGD([a, b], lr=0.1)
    opt.zero_grad(set_to_none=set_to_none)
    if set_to_none:
        assert a.grad is None and b.grad is None
    else:
        assert a.grad is shared
        np.testing.assert_array_equal(np.asarray(a.grad), [0.0, 0.0])
    np.testing.assert_array_equal(storage, [3.0, 4.0])


def _fresh(opt_cls, config):
    rng = np.random.default_rng(5)
    params = [Parameter(aa.tensor(rng.standard_normal(s))) for s in [(2, 3), (3,)]]
    return params, opt_cls(params, **config)


def _do_steps(params, opt, grads):
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = aa.tensor(g)
        opt.step()


@pytest.mark.parametrize(
    ("opt_cls", "config"),
    [
        (optim.SGD, {"lr": 0.1, "momentum": 0.9}),
        (optim.Adam, {"lr": 0.01, "amsgrad": True}),
        (optim.AdamW, {"lr": 0.01}),
        (optim.RMSprop, {"lr": 0.01, "momentum": 0.9, "centered": True}),
        (optim.Adagrad, {"lr": 0.1, "lr_decay": 0.1}),
        (optim.Adadelta, {"lr": 0.5}),
        (optim.NAdam, {"lr": 0.01}),
        (optim.RAdam, {"lr": 0.01, "betas": (0.5, 0.6)}),
    ],
)
@pytest.mark.parametrize("through_file", [False, True], ids=["in-memory", "saved-and-loaded"])
def test_state_dict_resume_matches_uninterrupted(opt_cls, config, through_file, tmp_path):
    rng = np.random.default_rng(1)
    grads = [[rng.standard_normal(s) for s in [(2, 3), (3,)]] for _ in range(6)]
    params, opt = _fresh(opt_cls, config)
    _do_steps(params, opt, grads)
    reference = [np.asarray(p.detach()).copy() for p in params]

    params, opt = _fresh(opt_cls, config)
    _do_steps(params, opt, grads[:3])
    saved = opt.state_dict()
    if through_file:  # as a checkpoint resumed by another run
        aa.save(saved, tmp_path / "optimizer.npz")
        saved = aa.load(tmp_path / "optimizer.npz")
    assert sorted(saved["state"]) == [0, 1]
    assert saved["param_groups"][0]["params"] == [0, 1]
    copies = [Parameter(aa.tensor(np.asarray(p.detach()))) for p in params]
    resumed = opt_cls(copies, lr=123.0)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == config["lr"]
    for key, value in resumed.state[copies[0]].items():
        assert value._data is not saved["state"][0][key]._data  # state is copied, not shared
    _do_steps(copies, resumed, grads[3:])
    for a, b in zip(copies, reference, strict=True):
        np.testing.assert_allclose(np.asarray(a.detach()), b, rtol=1e-12)


def test_load_state_dict_moves_state_to_parameter_device():
    p = Parameter(aa.zeros(2))
    opt = optim.Adam([p], lr=0.1)
    p.grad = aa.ones(2)
    opt.step()
    q = Parameter(aa.zeros(2, device="sim:1"))
    other = optim.Adam([q], lr=0.1)
    other.load_state_dict(opt.state_dict())
    assert str(other.state[q]["exp_avg"].device) == "sim:1"
    assert str(other.state[q]["step"].device) == "cpu"


def test_load_state_dict_errors():
    a, b = Parameter(aa.zeros(2)), Parameter(aa.zeros(2))
    saved = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(saved)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(saved)


@pytest.mark.parametrize("name", ["RAdam", "NAdam", "Adadelta"])
def test_long_runs_match_torch(torch, name):
    # RAdam's rectified branch starts once rho_t passes 5, about the sixth step; NAdam's float32
    # mu_product drifts from a float64 one only over many steps.
    rng = np.random.default_rng(3)
    init = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(40)]
    ours = Parameter(aa.tensor(init))
    theirs = torch.nn.Parameter(torch.tensor(init))
    opt_ours = getattr(optim, name)([ours], lr=0.01)
    opt_theirs = getattr(torch.optim, name)([theirs], lr=0.01, foreach=False)
    for g in grads:
        ours.grad, theirs.grad = aa.tensor(g), torch.tensor(g)
        opt_ours.step()
        opt_theirs.step()
    np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), rtol=1e-12)


def test_nadam_mu_product_stays_a_float32_cpu_scalar_after_load():
    p = Parameter(aa.zeros(2, device="sim:0", dtype="float64"))
    opt = optim.NAdam([p], lr=0.1)
    p.grad = aa.ones(2, device="sim:0", dtype="float64")
    opt.step()
    q = Parameter(aa.zeros(2, device="sim:1", dtype="float64"))
    other = optim.NAdam([q], lr=0.1)
    other.load_state_dict(opt.state_dict())
    for key in ("step", "mu_product"):
        assert str(other.state[q][key].device) == "cpu"
        assert other.state[q][key].dtype == aa.float32
    assert str(other.state[q]["exp_avg"].device) == "sim:1"


def test_adagrad_state_exists_before_the_first_step(torch):
    p = Parameter(aa.zeros(3))
    saved = optim.Adagrad([p], initial_accumulator_value=0.25).state_dict()
    theirs = torch.optim.Adagrad(
        [torch.nn.Parameter(torch.zeros(3))], initial_accumulator_value=0.25
    ).state_dict()
    assert sorted(saved["state"][0]) == sorted(theirs["state"][0])
    np.testing.assert_array_equal(np.asarray(saved["state"][0]["sum"]), [0.25] * 3)


def test_adamw_keeps_decoupled_weight_decay_after_load():
    p = Parameter(aa.zeros(2))
    saved = optim.Adam([p]).state_dict()
    opt = optim.AdamW([p])
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True
