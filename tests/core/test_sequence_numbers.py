"""Sequence numbers: a per-thread counter from 0, taken by each recorded node, as in PyTorch.

Every program runs in a fresh thread in both libraries, so the exact numbers are comparable; they
are pinned here as well, so the tests mean something without torch.
"""

from __future__ import annotations

import threading

import pytest

import autograd_async as aa

from .helpers import in_fresh_thread


def chain(lib):
    """Ops that record nodes, interleaved with ones that do not."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
    c = lib.tensor([1.0, 1.0, 1.0])
    a = x * w  # 0
    _ = c * 2  # no grad: no node, no number
    b = a.tanh()  # 1
    with lib.no_grad():
        _ = b * 3  # grad mode off: no number
    d = b.reshape(3, 1)[0]  # 2 (view), 3 (select)
    e = (d + x[1:2]).exp()  # 4 (slice), 5 (add), 6 (exp)
    f = e.mean()  # 7
    return [t.grad_fn._sequence_nr() for t in (a, b, d, e, f)] + [
        d.grad_fn.next_functions[0][0]._sequence_nr()
    ]


def backward_roots(lib):
    """One root takes no number; several roots make a GraphRoot, which takes one."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y1 = (x * 2).sum()  # 0, 1
    y2 = (x * 3).sum()  # 2, 3
    y1.backward(retain_graph=True)
    after_one = (x * 4).grad_fn._sequence_nr()  # 4
    lib.autograd.backward([y1, y2])  # GraphRoot takes 5
    after_two = (x * 5).grad_fn._sequence_nr()  # 6
    return [after_one, after_two]


def function_program(lib):
    """A custom Function's node takes its number before forward runs, needed or not."""

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = lib.tensor([1.0], requires_grad=True)
    Twice.apply(lib.tensor([1.0]))  # 0, though nothing requires grad
    y = x * 2  # 1
    z = Twice.apply(y)  # 2
    w = (z + 1).sum()  # 3, 4
    return [y.grad_fn._sequence_nr(), z.grad_fn._sequence_nr(), w.grad_fn._sequence_nr()]


PROGRAMS = {
    "chain": (chain, [0, 1, 3, 6, 7, 2]),
    "backward_roots": (backward_roots, [4, 6]),
    "function": (function_program, [1, 2, 4]),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_sequence_numbers_in_a_fresh_thread(name):
    program, expected = PROGRAMS[name]
    assert in_fresh_thread(lambda: program(aa)) == expected


@pytest.mark.parametrize("name", PROGRAMS)
def test_sequence_numbers_are_pytorchs(torch, name):
    program, expected = PROGRAMS[name]
    assert in_fresh_thread(lambda: program(torch)) == expected


def test_each_thread_counts_on_its_own():
    barrier = threading.Barrier(4)
    results: dict[int, list[int]] = {}

    def build(index: int) -> None:
        x = aa.tensor([1.0], requires_grad=True)
        barrier.wait()  # all threads build at once
        y = x
        numbers = []
        for _ in range(200):
            y = y * 1.0
            numbers.append(y.grad_fn._sequence_nr())
        results[index] = numbers

    threads = [threading.Thread(target=build, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {i: list(range(200)) for i in range(4)}


def test_numbers_keep_counting_in_the_same_thread():
    def program():
        x = aa.tensor([1.0], requires_grad=True)
        first = [(x * 1).grad_fn._sequence_nr() for _ in range(3)]
        (x * 2).sum().backward()  # nodes 3, 4; a single root takes no number
        return first + [(x * 3).grad_fn._sequence_nr()]

    assert in_fresh_thread(program) == [0, 1, 2, 5]


def test_accumulate_grad_takes_no_number():
    def program():
        x = aa.tensor([1.0], requires_grad=True)
        w = aa.tensor([1.0], requires_grad=True)
        return [(x * w).grad_fn._sequence_nr(), (w * x).grad_fn._sequence_nr()]

    assert in_fresh_thread(program) == [0, 1]
