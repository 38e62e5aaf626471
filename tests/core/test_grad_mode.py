"""Grad mode: no_grad, enable_grad and set_grad_enabled as context managers and decorators (sync and
async), scoped per asyncio task and per thread, and the mode backward itself runs in."""

from __future__ import annotations

import asyncio
import threading

import pytest

import autograd_async as aa

from .helpers import in_fresh_thread


def _records(x: aa.Tensor) -> bool:
    return (x * 2).requires_grad


def test_context_managers_nest_and_restore():
    x = aa.tensor([1.0], requires_grad=True)
    assert aa.is_grad_enabled() and _records(x)
    with aa.no_grad():
        assert not aa.is_grad_enabled() and not _records(x)
        with aa.enable_grad():
            assert _records(x)
            with aa.set_grad_enabled(False):
                assert not _records(x)
            assert _records(x)
        assert not _records(x)
    assert _records(x)


def test_modes_are_restored_when_the_block_raises():
    with pytest.raises(KeyError):
        with aa.no_grad():
            raise KeyError("x")
    assert aa.is_grad_enabled()


def test_a_mode_object_can_be_reused_and_nested():
    off = aa.no_grad()
    with off:
        with off:
            assert not aa.is_grad_enabled()
        assert not aa.is_grad_enabled()
    assert aa.is_grad_enabled()


def test_decorators_on_functions():
    x = aa.tensor([1.0], requires_grad=True)

    @aa.no_grad()
    def off_with_parentheses():
        return _records(x)

    @aa.no_grad
    def off_bare():
        return _records(x)

    @aa.set_grad_enabled(False)
    def off_by_flag():
        return _records(x)

    @aa.enable_grad()
    def on_inside():
        return _records(x)

    assert aa.is_grad_enabled()  # decorating changed nothing here
    assert off_with_parentheses() is False
    assert off_bare() is False and off_bare.__name__ == "off_bare"
    assert off_by_flag() is False
    with aa.no_grad():
        assert on_inside() is True
        assert not aa.is_grad_enabled()
    assert aa.is_grad_enabled()


async def test_decorators_on_coroutine_functions():
    x = aa.tensor([1.0], requires_grad=True)

    @aa.no_grad()
    async def off():
        await asyncio.sleep(0)
        return _records(x)

    @aa.enable_grad
    async def on():
        await asyncio.sleep(0)
        return _records(x)

    assert asyncio.iscoroutinefunction(off)
    assert await off() is False
    assert aa.is_grad_enabled()
    with aa.no_grad():
        assert await on() is True
        assert not aa.is_grad_enabled()


def test_set_grad_enabled_takes_effect_when_called():
    def program(lib):
        before = lib.is_grad_enabled()
        lib.set_grad_enabled(False)
        off = lib.is_grad_enabled()
        lib.set_grad_enabled(True)
        return before, off, lib.is_grad_enabled()

    assert in_fresh_thread(lambda: program(aa)) == (True, False, True)


def test_set_grad_enabled_takes_effect_when_called_in_pytorch(torch):
    def program():
        before = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        off = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        return before, off, torch.is_grad_enabled()

    assert in_fresh_thread(program) == (True, False, True)


def test_set_grad_enabled_block_restores_the_mode_before_the_call():
    with aa.no_grad():
        with aa.set_grad_enabled(True):
            assert aa.is_grad_enabled()
        assert not aa.is_grad_enabled()
    assert aa.is_grad_enabled()


async def test_each_asyncio_task_has_its_own_mode():
    x = aa.tensor([1.0], requires_grad=True)
    inside_no_grad = asyncio.Event()
    other_checked = asyncio.Event()
    seen = {}

    async def quiet():
        with aa.no_grad():
            inside_no_grad.set()
            await other_checked.wait()  # the other task runs while this one is in no_grad
            seen["quiet"] = _records(x)

    async def loud():
        await inside_no_grad.wait()
        seen["loud"] = _records(x)
        other_checked.set()

    await asyncio.gather(quiet(), loud())
    assert seen == {"quiet": False, "loud": True}
    assert aa.is_grad_enabled()


async def test_a_decorated_coroutine_does_not_leak_its_mode_while_suspended():
    x = aa.tensor([1.0], requires_grad=True)
    release = asyncio.Event()

    @aa.no_grad()
    async def paused():
        await release.wait()
        return _records(x)

    task = asyncio.create_task(paused())
    await asyncio.sleep(0.01)
    assert _records(x)  # this task's mode is untouched while the other is inside no_grad
    release.set()
    assert await task is False


def test_each_thread_has_its_own_mode():
    x = aa.tensor([1.0], requires_grad=True)
    barrier = threading.Barrier(2)
    seen = {}

    def quiet():
        with aa.no_grad():
            barrier.wait()
            barrier.wait()
            seen["quiet"] = _records(x)

    def loud():
        barrier.wait()
        seen["loud"] = _records(x)
        barrier.wait()

    threads = [threading.Thread(target=quiet), threading.Thread(target=loud)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"quiet": False, "loud": True}


def test_a_new_thread_starts_with_grad_enabled():
    with aa.no_grad():
        assert in_fresh_thread(aa.is_grad_enabled) is True


def test_backward_runs_with_grad_mode_equal_to_create_graph():
    seen = []

    class Probe(aa.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            seen.append(aa.is_grad_enabled())
            return g

    x = aa.tensor([1.0], requires_grad=True)
    with aa.no_grad():  # the caller's mode does not reach the backward pass
        Probe.apply(x)  # nothing recorded here
    Probe.apply(x).sum().backward()
    Probe.apply(x).sum().backward(create_graph=True)
    with aa.no_grad():
        y = aa.enable_grad()(lambda: Probe.apply(x).sum())()
        y.backward(create_graph=True)
    assert seen == [False, True, True]


def test_backward_inside_no_grad_still_computes_gradients():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with aa.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_is_grad_enabled_is_exported_in_both_places():
    assert aa.is_grad_enabled is aa.autograd.is_grad_enabled
    assert aa.no_grad is aa.autograd.no_grad
