"""Defect 1: every entry point that launches work enters its tensors' device (CUDA's rule).

Under the CUDA-faithful sim mode a thread's current sim device is 0 until entered, and work on
`sim:1` arrays while `sim:0` is current raises CuPy's error. Each scenario runs from the main
thread on `sim:1` tensors: it works because the library enters `sim:1`; with the entering
removed (the sim backend's `device_context`, or the worker threads' `use_device`, replaced by
no-ops) the same scenario raises the error, so these tests fail without the entries.
"""

from __future__ import annotations

import pytest

from .helpers import run_json

CUPY_ERROR = "The device where the array resides (1) is different from the current device (0)."

SCENARIOS = r"""
import json
import sys
import threading
from contextlib import contextmanager

import autograd_async as aa
import autograd_async.engine.engine as engine_module
from autograd_async.backends import SimBackend
from autograd_async.utils.checkpoint import checkpoint

engine_module.MAX_NESTING_PER_THREAD = 0  # every reentrant backward runs on a helper thread

mode = sys.argv[1]
if mode == "no_context":
    @contextmanager
    def _nothing(self, device):
        yield
    SimBackend.device_context = _nothing
elif mode == "no_use_device":
    SimBackend.use_device = lambda self, device: None
elif mode == "helper_without_entry":
    _entering = SimBackend.use_device

    def _workers_only(self, device):
        if "reentrant" not in threading.current_thread().name:
            _entering(self, device)
    SimBackend.use_device = _workers_only

D = "sim:1"


def op():
    return (aa.ones(3, device=D) * 2).sum().item()


def matmul():
    return (aa.ones(2, 2, device=D) @ aa.ones(2, 2, device=D)).sum().item()


def in_place():
    t = aa.ones(3, device=D)
    t.add_(1)
    t.mul_(2)
    t[0] = 5.0
    t.zero_()


def reductions_and_comparisons():
    t = aa.arange(4.0, device=D)
    return int(t.argmax()), bool((t > 1).any())


def sgd_and_adam_steps():
    p = aa.nn.Parameter(aa.ones(3, device=D))
    p.grad = aa.ones(3, device=D)
    sgd = aa.optim.SGD([p], lr=0.1, momentum=0.9)
    sgd.step()
    adam = aa.optim.Adam([p], lr=0.1)
    adam.step()
    adam.zero_grad(set_to_none=False)


def rmsprop_step():
    p = aa.nn.Parameter(aa.ones(3, device=D))
    p.grad = aa.ones(3, device=D)
    aa.optim.RMSprop([p], lr=0.1).step()


def clip_grad():
    p = aa.nn.Parameter(aa.ones(3, device=D))
    p.grad = aa.ones(3, device=D)
    aa.nn.utils.clip_grad_norm_([p], 0.5)


def init():
    w = aa.empty(3, 4, device=D)
    aa.nn.init.normal_(w)
    aa.nn.init.kaiming_uniform_(w)


def transfer():
    x = aa.ones(3, device=D)
    return x.to("sim:0").sum().item() + aa.ones(2, device="sim:0").to(D).sum().item()


def backward():
    x = aa.ones(3, device=D, requires_grad=True)
    (x * x).sum().backward()
    return x.grad.sum().item()


def backward_across_devices():
    x = aa.ones(3, device=D, requires_grad=True)
    ((x * 3).to("sim:0") * 2).sum().backward()
    return x.grad.sum().item()


def reentrant_backward_on_a_helper_thread():
    x = aa.ones(3, device=D, requires_grad=True)
    checkpoint(lambda t: (t * t).tanh(), x, use_reentrant=True).sum().backward()
    return x.grad.sum().item()


def dropout_and_random():
    aa.manual_seed(0)
    aa.nn.functional.dropout(aa.ones(8, device=D), 0.5)
    aa.rand(3, device=D)


results = {}
for name, fn in list(globals().items()):
    if callable(fn) and getattr(fn, "__module__", None) == "__main__" and name[0] != "_":
        try:
            fn()
            results[name] = "ok"
        except Exception as exc:  # reported to the test
            results[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(results))
"""

FORWARD = [
    "op",
    "matmul",
    "in_place",
    "reductions_and_comparisons",
    "sgd_and_adam_steps",
    "rmsprop_step",
    "clip_grad",
    "init",
    "transfer",
    "dropout_and_random",
]
BACKWARD = ["backward", "backward_across_devices", "reentrant_backward_on_a_helper_thread"]


@pytest.fixture(scope="module")
def entered() -> dict:
    return run_json(SCENARIOS, "entered")


def test_every_entry_point_works_on_sim1_from_the_main_thread(entered):
    assert set(FORWARD + BACKWARD) <= set(entered)
    assert {name: result for name, result in entered.items() if result != "ok"} == {}


def test_without_entering_the_same_work_raises_cupys_error():
    failed = run_json(SCENARIOS, "no_context")
    for name in FORWARD + BACKWARD:
        assert CUPY_ERROR in failed[name], (name, failed[name])


def test_a_worker_thread_that_does_not_enter_its_device_fails_its_nodes():
    failed = run_json(SCENARIOS, "no_use_device")
    for name in FORWARD:  # the caller's thread enters by itself
        assert failed[name] == "ok", (name, failed[name])
    for name in BACKWARD:  # the sim:1 worker runs the nodes with sim:0 current
        assert CUPY_ERROR in failed[name], (name, failed[name])


def test_the_reentrant_helper_thread_enters_the_workers_device(entered):
    assert entered["reentrant_backward_on_a_helper_thread"] == "ok"
    failed = run_json(SCENARIOS, "helper_without_entry")
    assert CUPY_ERROR in failed["reentrant_backward_on_a_helper_thread"]
    assert failed["backward"] == "ok" and failed["op"] == "ok"
