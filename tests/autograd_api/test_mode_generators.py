"""Grad-mode decorators on generator functions hold the mode inside the body at every resume and
restore the caller's mode at every yield, as PyTorch's do (compared on the same program)."""

from __future__ import annotations

import asyncio

import pytest

import autograd_async as aa


def _trace(lib, decorator_name: str, *args):
    """Modes seen inside and outside a decorated generator, in the order they were seen."""
    decorator = getattr(lib, decorator_name)(*args)
    seen = []

    @decorator
    def gen(n):
        for _ in range(n):
            seen.append(("in", lib.is_grad_enabled()))
            got = yield lib.is_grad_enabled()
            seen.append(("sent", got))
        return "done"

    def drive():
        g = gen(2)
        seen.append(("first", next(g)))
        seen.append(("outside", lib.is_grad_enabled()))
        seen.append(("second", g.send("hello")))
        with pytest.raises(StopIteration) as stop:
            g.send("bye")
        seen.append(("return", stop.value.value))

    drive()
    with lib.no_grad():
        drive()
    return seen


@pytest.mark.parametrize(
    "name, args", [("no_grad", ()), ("enable_grad", ()), ("set_grad_enabled", (False,))]
)
def test_generator_mode_matches_pytorch(torch, name, args):
    assert _trace(aa, name, *args) == _trace(torch, name, *args)


def test_no_grad_generator_yields_false_and_records_nothing():
    x = aa.tensor([1.0], requires_grad=True)

    @aa.no_grad()
    def gen():
        yield aa.is_grad_enabled()
        yield (x * 2).requires_grad

    assert list(gen()) == [False, False]
    assert (x * 2).requires_grad


def _throw_and_close(lib):
    seen = []

    @lib.no_grad()
    def gen():
        try:
            yield 1
        except ValueError:
            seen.append(("caught", lib.is_grad_enabled()))
            yield 2
        finally:
            seen.append(("finally", lib.is_grad_enabled()))

    g = gen()
    next(g)
    seen.append(("thrown", g.throw(ValueError("x"))))
    g.close()
    seen.append(("after", lib.is_grad_enabled()))
    return seen


def test_throw_and_close_run_in_the_mode_like_pytorch(torch):
    assert _throw_and_close(aa) == _throw_and_close(torch)


async def test_async_generator_holds_the_mode_at_each_resume():
    # PyTorch leaves async generators alone (its decorator exits before the body runs); here the
    # mode is held in the body at each resume, as for coroutine functions (documented).
    seen = []

    @aa.no_grad()
    async def agen():
        for _ in range(2):
            await asyncio.sleep(0)
            got = yield aa.is_grad_enabled()
            seen.append(got)

    out = []
    g = agen()
    out.append(await g.asend(None))
    out.append(aa.is_grad_enabled())
    out.append(await g.asend("a"))
    with pytest.raises(StopAsyncIteration):
        await g.asend("b")
    assert out == [False, True, False]
    assert seen == ["a", "b"]
    assert [v async for v in agen()] == [False, False]
