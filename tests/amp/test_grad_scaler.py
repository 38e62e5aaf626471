"""GradScaler step by step against torch.amp.GradScaler: the same model, gradients (some of
them inf or nan), optimizers and clipping; PyTorch's errors for steps out of order."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import autograd_async as aa
from tests.gradients import to_numpy

# Steps with inf or nan gradients are the point here: NumPy warns of them, PyTorch does not.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

OPTIMIZERS = {
    "SGD": {"lr": 0.1, "momentum": 0.9},
    "Adam": {"lr": 0.01},
    "AdamW": {"lr": 0.01, "weight_decay": 0.1},
    "Adagrad": {"lr": 0.1},
    "Adadelta": {"lr": 1.0},
    "RMSprop": {"lr": 0.01},
    "NAdam": {"lr": 0.01},
    "RAdam": {"lr": 0.01},
}
BAD_STEPS = {1: np.inf, 4: np.nan}  # steps whose loss is multiplied by inf or nan


def _run(lib, name: str, clip: bool, steps: int = 7) -> list:
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    params = [lib.tensor(weight, requires_grad=True), lib.tensor(bias, requires_grad=True)]
    optimizer = getattr(lib.optim, name)(params, **OPTIMIZERS[name])
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    history = []
    for step in range(steps):
        x = lib.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        optimizer.zero_grad()
        loss = ((x @ params[0].t() + params[1]) ** 2).mean() * float(BAD_STEPS.get(step, 1.0))
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(optimizer)
            clip_grad_norm_ = lib.nn.utils.clip_grad_norm_
            clip_grad_norm_(params, 0.5)
        scaler.step(optimizer)
        scaler.update()
        history.append(
            (
                scaler.get_scale(),
                scaler.state_dict()["_growth_tracker"],
                [np.array(p.detach().numpy()) for p in params],
            )
        )
    return history


@pytest.mark.parametrize("clip", [False, True])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_steps_like_torch(torch, name, clip):
    ours, theirs = _run(aa, name, clip), _run(torch, name, clip)
    for step, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine[0] == reference[0], f"scale after step {step}"
        assert mine[1] == reference[1], f"growth tracker after step {step}"
        for p, q in zip(mine[2], reference[2], strict=True):
            np.testing.assert_allclose(p, q, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")


def test_state_dict_round_trip_and_settings(torch):
    scaler = aa.amp.GradScaler(
        "cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=5
    )
    theirs = torch.amp.GradScaler(
        "cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=5
    )
    assert scaler.state_dict() == theirs.state_dict()
    assert scaler.get_scale() == 8.0 and scaler.is_enabled()
    other = aa.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.state_dict() == scaler.state_dict()
    assert copy.deepcopy(other).state_dict() == scaler.state_dict()
    off = aa.amp.GradScaler("cpu", enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    loss = aa.tensor(2.0, requires_grad=True)
    assert off.scale(loss) is loss
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})


def test_scale_of_nested_outputs_and_explicit_new_scale():
    scaler = aa.amp.GradScaler("cpu", init_scale=4.0)
    a, b = aa.tensor([1.0, 2.0]), aa.tensor(3.0)
    out = scaler.scale({"a": a, "rest": [b, (b,)]})
    np.testing.assert_array_equal(to_numpy(out["a"]), [4.0, 8.0])
    assert isinstance(out["rest"][1], tuple) and out["rest"][1][0].item() == 12.0
    scaler.update(16.0)
    assert scaler.get_scale() == 16.0
    scaler.update(aa.tensor(2.0))
    assert scaler.get_scale() == 2.0


def _errors(lib):
    weight = lib.tensor([1.0, 2.0], requires_grad=True)
    optimizer = lib.optim.SGD([weight], lr=0.1)
    scaler = lib.amp.GradScaler("cpu")
    messages = []

    def attempt(fn):
        try:
            fn()
        except (RuntimeError, AssertionError, ValueError) as exc:
            messages.append((type(exc).__name__, str(exc)))
        else:
            messages.append(None)

    attempt(lambda: scaler.step(optimizer))  # before any scale()
    scaler.scale((weight * 2).sum()).backward()
    attempt(lambda: scaler.unscale_(optimizer))
    attempt(lambda: scaler.unscale_(optimizer))  # twice
    attempt(lambda: scaler.step(optimizer))
    attempt(lambda: scaler.step(optimizer))  # twice
    attempt(lambda: scaler.unscale_(optimizer))  # after step
    attempt(lambda: scaler.update())
    attempt(lambda: scaler.update())  # no inf checks since
    attempt(lambda: scaler.step(optimizer, closure=lambda: None))
    attempt(lambda: lib.amp.GradScaler("cpu", growth_factor=0.5))
    return messages


def test_errors_match_torch(torch):
    assert _errors(aa) == _errors(torch)


def test_half_gradients_are_refused(torch):
    weight = aa.tensor([1.0, 2.0], dtype=aa.float16, requires_grad=True)
    optimizer = aa.optim.SGD([weight], lr=0.1)
    scaler = aa.amp.GradScaler("cpu")
    scaler.scale(weight.sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(optimizer)


def test_training_under_autocast_on_a_sim_device():
    model = aa.nn.Sequential(aa.nn.Linear(4, 8), aa.nn.ReLU(), aa.nn.Linear(8, 2)).to("sim:0")
    optimizer = aa.optim.Adam(model.parameters(), lr=0.05)
    scaler = aa.amp.GradScaler("sim", init_scale=2.0**8)
    rng = np.random.default_rng(1)
    x = aa.tensor(rng.standard_normal((16, 4)).astype(np.float32), device="sim:0")
    y = aa.tensor((rng.standard_normal(16) > 0).astype(np.int64), device="sim:0")
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        with aa.autocast("sim"):
            logits = model(x)
            assert logits.dtype == aa.float16
            loss = aa.nn.functional.cross_entropy(logits, y)
        assert loss.dtype == aa.float32
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    assert all(p.dtype == aa.float32 for p in model.parameters())
    assert losses[-1] < 0.6 * losses[0]


def test_a_cuda_scaler_without_cuda_disables_itself_as_torchs_does(torch):
    if aa.cuda_is_available():
        pytest.skip("CUDA is available")
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        scaler = aa.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
