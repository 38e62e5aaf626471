"""The registry that keeps a leaf's `.grad` from sharing memory with arrays held elsewhere."""

from __future__ import annotations

import gc
import threading

import numpy as np
from autograd_async.graph import HeldArrays


def test_an_owner_is_claimed_once_through_any_view():
    held = HeldArrays()
    owner = np.zeros(6)
    assert held.claim(owner)
    assert not held.claim(owner)
    assert not held.claim(owner.reshape(2, 3))  # a view names the same memory
    assert held.claim(np.zeros(6))


def test_a_dead_owners_reused_id_is_a_new_owner():
    held = HeldArrays()
    first = np.zeros(4)
    assert held.claim(first)
    key = id(first)
    del first
    gc.collect()
    for _ in range(1000):  # CPython hands a freed block out again soon
        again = np.zeros(4)
        if id(again) == key:
            assert held.claim(again)
            return
    assert held.claim(np.zeros(4))


def test_sweeping_keeps_live_claims_and_drops_dead_ones():
    held = HeldArrays()
    live = [np.zeros(1) for _ in range(600)]
    for a in live:
        assert held.claim(a)
    for _ in range(5000):  # dead claims trigger sweeps
        held.claim(np.zeros(1))
    assert len(held._refs) < 5000
    assert all(not held.claim(a) for a in live)


def test_what_cannot_be_weakly_referenced_is_never_claimed():
    class Plain:
        __slots__ = ("base",)

        def __init__(self):
            self.base = None

    assert not HeldArrays().claim(Plain())


def test_claims_from_many_threads_are_all_kept():
    held = HeldArrays()
    arrays = [[np.zeros(1) for _ in range(2000)] for _ in range(4)]
    results: list[list[bool]] = [[] for _ in arrays]

    def claim_all(i: int) -> None:
        results[i] = [held.claim(a) for a in arrays[i]]

    threads = [threading.Thread(target=claim_all, args=(i,)) for i in range(len(arrays))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert all(all(r) for r in results)
    assert not any(held.claim(a) for group in arrays for a in group)
