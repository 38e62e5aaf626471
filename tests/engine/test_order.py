"""On one device, nodes run in PyTorch's order: AccumulateGrad first, then higher sequence number.

Each program is built in a fresh thread (so sequence numbers start at 0, as in PyTorch) and its
backward order is recorded with node pre-hooks. The order is compared with PyTorch's for the same
program when torch is installed, and pinned here otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import autograd_async as aa


def _in_fresh_thread(fn: Callable):
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join(10)
    return box[0]


def _all_nodes(roots) -> list:
    seen, stack, out = set(), [r.grad_fn for r in roots], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        out.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return out


def _record_order(roots, run: Callable) -> list[tuple[str, int]]:
    order: list[tuple[str, int]] = []
    for node in _all_nodes(roots):
        name = node.name().replace("torch::autograd::", "")
        seq = node._sequence_nr()
        if seq >= 2**63:  # AccumulateGrad: UINT64_MAX in both libraries
            seq = -1

        def hook(grads, name=name, seq=seq):
            order.append((name, seq))

        node.register_prehook(hook)
    run()
    return order


def chain(lib, x):
    return ((x * 2.0).tanh() + 1.0).exp().sum()


def diamond(lib, x):
    a = x * 2.0
    return (a.tanh() * a.exp()).sum()


def fan_in_out(lib, x):
    y = x * 3.0
    a = x * y
    b = a + x
    c = b * a.tanh()
    return (c + y).sum()


def leaf_used_twice(lib, x):
    return (x * x + x).sum()


PROGRAMS = [chain, diamond, fan_in_out, leaf_used_twice]

PINNED = {
    "chain": [
        ("SumBackward0", 4),
        ("ExpBackward0", 3),
        ("AddBackward0", 2),
        ("TanhBackward0", 1),
        ("MulBackward0", 0),
        ("AccumulateGrad", -1),
    ],
    "diamond": [
        ("SumBackward0", 4),
        ("MulBackward0", 3),
        ("ExpBackward0", 2),
        ("TanhBackward0", 1),
        ("MulBackward0", 0),
        ("AccumulateGrad", -1),
    ],
    "fan_in_out": [
        ("SumBackward0", 6),
        ("AddBackward0", 5),
        ("MulBackward0", 4),
        ("TanhBackward0", 3),
        ("AddBackward0", 2),
        ("MulBackward0", 1),
        ("MulBackward0", 0),
        ("AccumulateGrad", -1),
    ],
    "leaf_used_twice": [
        ("SumBackward0", 2),
        ("AddBackward0", 1),
        ("MulBackward0", 0),
        ("AccumulateGrad", -1),
    ],
}


def _ours(program, data):
    def build():
        x = aa.tensor(data, requires_grad=True)
        return x, program(aa, x)

    x, loss = _in_fresh_thread(build)
    order = _record_order([loss], loss.backward)
    return order, x.grad.numpy()


def _torchs(torch, program, data):
    def build():
        x = torch.tensor(data, requires_grad=True)
        return x, program(torch, x)

    x, loss = _in_fresh_thread(build)
    order = _record_order([loss], loss.backward)
    return order, x.grad.numpy()


DATA = np.array([0.3, -0.2, 0.5])


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_order_is_pinned(program):
    order, _ = _ours(program, DATA)
    assert order == PINNED[program.__name__]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_order_and_gradients_equal_pytorchs(program, torch):
    ours, our_grad = _ours(program, DATA)
    theirs, their_grad = _torchs(torch, program, DATA)
    assert ours == theirs
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12)


def _two_losses(lib, x):
    h = (x * 2.0).tanh()
    return (h * 3.0).sum(), (h.exp()).sum()


def test_two_losses_sharing_a_graph_pinned_and_against_torch():
    def build():
        x = aa.tensor(DATA, requires_grad=True)
        return x, _two_losses(aa, x)

    x, (l1, l2) = _in_fresh_thread(build)
    order = _record_order([l1, l2], lambda: aa.autograd.backward([l1, l2]))
    assert order == [
        ("SumBackward0", 5),
        ("ExpBackward0", 4),
        ("SumBackward0", 3),
        ("MulBackward0", 2),
        ("TanhBackward0", 1),
        ("MulBackward0", 0),
        ("AccumulateGrad", -1),
    ]
    try:
        import torch
    except ImportError:
        return

    def build_torch():
        tx = torch.tensor(DATA, requires_grad=True)
        return tx, _two_losses(torch, tx)

    tx, (t1, t2) = _in_fresh_thread(build_torch)
    theirs = _record_order([t1, t2], lambda: torch.autograd.backward([t1, t2]))
    assert order == theirs
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_order_through_the_workers_on_a_sim_device():
    def build():
        x = aa.tensor(DATA, requires_grad=True, device="sim:0")
        return x, fan_in_out(aa, x)

    x, loss = _in_fresh_thread(build)
    threads: list[str] = []
    for node in _all_nodes([loss]):
        node.register_prehook(lambda g: threads.append(threading.current_thread().name))
    order = _record_order([loss], loss.backward)
    assert order == PINNED["fan_in_out"]
    assert set(threads) == {"autograd-async:sim:0"} and len(threads) == len(order)
