"""inference_mode and is_inference_mode_enabled against PyTorch on the same program: the modes
inside, which tensors are inference tensors, and the errors when one would join a graph later."""

from __future__ import annotations

import asyncio

import autograd_async as aa


def _outcome(fn):
    try:
        return fn()
    except RuntimeError as exc:
        return "RuntimeError", str(exc).split(".")[0]


def _program(lib):
    seen = []
    x = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        a = lib.ones(2)
        b = x * 2
        seen.append(
            (
                "inside",
                lib.is_grad_enabled(),
                lib.is_inference_mode_enabled(),
                a.is_inference(),
                b.is_inference(),
                b.requires_grad,
            )
        )
        with lib.inference_mode(False):
            c = x * 2
            seen.append(
                (
                    "off inside",
                    lib.is_grad_enabled(),
                    lib.is_inference_mode_enabled(),
                    c.requires_grad,
                    c.is_inference(),
                )
            )
        with lib.no_grad():
            seen.append(("no_grad inside", lib.ones(2).is_inference()))
        f = lib.tensor([1.0, 2.0])
        g = a.to(lib.float64)
        seen.append(("factories", f.is_inference(), g.is_inference()))
    seen.append(("after", lib.is_inference_mode_enabled(), lib.is_grad_enabled(), x.is_inference()))
    seen.append(("add, not saved", _outcome(lambda: (x + a).requires_grad)))
    seen.append(("mul, saved", _outcome(lambda: (x * a).requires_grad)))
    seen.append(("sin", _outcome(lambda: a.sin().requires_grad)))
    seen.append(("requires_grad_", _outcome(lambda: a.requires_grad_())))
    seen.append(("in place", _outcome(lambda: a.add_(1.0))))
    with lib.no_grad():
        seen.append(("in place, no_grad", _outcome(lambda: a.mul_(2.0))))
        seen.append(("mul under no_grad", _outcome(lambda: (x * a).is_inference())))
    seen.append(("clone", a.clone().is_inference()))
    seen.append(("view", a.view(2).is_inference()))
    seen.append(("detach", a.detach().is_inference()))
    seen.append(("values", a.tolist(), b.tolist()))

    class Keep(lib.autograd.Function):
        @staticmethod
        def forward(ctx, u, v):
            ctx.save_for_backward(v)
            return u * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    seen.append(("Function saves it", _outcome(lambda: Keep.apply(x, a).requires_grad)))
    with lib.inference_mode():
        seen.append(("in place inside", _outcome(lambda: a.add_(1.0).tolist())))
    return seen


def test_inference_mode_matches_pytorch(torch):
    assert _program(aa) == _program(torch)


def _decorators(lib):
    @lib.inference_mode()
    def called():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    @lib.inference_mode
    def bare():
        return lib.is_inference_mode_enabled()

    @lib.inference_mode()
    def gen():
        yield lib.is_inference_mode_enabled()
        yield lib.ones(1).is_inference()

    return called(), bare(), list(gen()), lib.is_inference_mode_enabled()


def test_decorators_match_pytorch(torch):
    assert _decorators(aa) == _decorators(torch)


async def test_inference_mode_is_scoped_to_its_task():
    started = asyncio.Event()

    @aa.inference_mode()
    async def inside():
        started.set()
        await asyncio.sleep(0.01)
        return aa.is_inference_mode_enabled(), aa.ones(1).is_inference()

    async def outside():
        await started.wait()
        return aa.is_inference_mode_enabled(), aa.ones(1).is_inference()

    assert await asyncio.gather(inside(), outside()) == [(True, True), (False, False)]
