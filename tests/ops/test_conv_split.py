"""Convolutions by parts of the batch over the intra-op threads, against PyTorch; the pool that
runs the parts.

A large NumPy convolution runs by parts of a few batch items (`conv_items`, BLAS on one thread
per caller); others run the whole-batch way (`conv_arrays`). These tests lower the threshold so
that small cases run by parts (or raise it so that they run whole), and compare values and
gradients with PyTorch.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.nn import functional as F  # noqa: N812
from autograd_async.ops import conv_items
from autograd_async.ops.intra_op import IntraOpPool, get_num_threads, set_num_threads, usable_cores
from autograd_async.ops.windows import conv_windows

from .torch_reference import against_torch

RNG = np.random.default_rng(1)
WAIT_S = 30.0  # generous: only a broken pool waits this long

SPLIT_CASES = [
    # (name, input shape, weight shape, with bias, keyword arguments)
    ("conv2d", (5, 3, 7, 8), (4, 3, 3, 3), True, {"padding": 1}),
    (
        "conv2d",
        (4, 4, 8, 8),
        (6, 2, 3, 2),
        True,
        {"padding": (1, 2), "groups": 2, "dilation": (1, 2)},
    ),
    ("conv2d", (3, 4, 9, 8), (5, 4, 3, 3), False, {"stride": 2, "padding": 1}),
    ("conv1d", (4, 3, 12), (2, 3, 3), True, {"padding": 2}),
    ("conv3d", (2, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, {"padding": (1, 0, 1)}),
]
PART_CASES = SPLIT_CASES + [
    ("conv2d", (7, 3, 6, 5), (4, 3, 2, 2), False, {"padding": "same"}),
    ("conv2d", (6, 4, 5, 5), (4, 1, 3, 3), True, {"padding": 1, "groups": 4}),
    ("conv2d", (5, 2, 9, 7), (3, 2, 3, 2), True, {"stride": (2, 1), "dilation": (1, 2)}),
    ("conv2d", (4, 4, 8, 8), (4, 2, 3, 3), False, {"stride": 3, "padding": 2, "groups": 2}),
    ("conv1d", (5, 2, 17), (3, 2, 4), True, {"stride": 3}),
    ("conv3d", (3, 2, 5, 6, 5), (2, 2, 3, 2, 3), True, {"stride": 2, "padding": 1}),
]


@pytest.fixture
def whole_batch(monkeypatch):
    """Every convolution runs the whole-batch way, two intra-op threads or not."""
    monkeypatch.setattr(conv_items, "ITEMS_MIN_COLUMNS", float("inf"))


@pytest.fixture
def by_parts(monkeypatch):
    """Every NumPy convolution runs by parts of its batch, on two threads, in tiny parts."""
    if not conv_items.BLAS.available:
        pytest.skip("NumPy's BLAS is not OpenBLAS: convolutions keep the whole-batch way")
    monkeypatch.setattr(conv_items, "ITEMS_MIN_COLUMNS", 0)
    monkeypatch.setattr(conv_items, "PART_COLUMNS", 1)  # one item a part: many parts
    pool = IntraOpPool(2)
    monkeypatch.setattr(conv_items, "POOL", pool)
    yield
    pool.close()


def _arrays(xs, ws, bias):
    arrays = [RNG.standard_normal(xs), RNG.standard_normal(ws)]
    return arrays + ([RNG.standard_normal(ws[0])] if bias else [])


@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), SPLIT_CASES)
def test_whole_batch_matches_torch(torch, whole_batch, name, xs, ws, bias, kwargs) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    out = against_torch(
        torch,
        lambda *t: ours(*t, **kwargs),
        lambda *t: theirs(*t, **kwargs),
        *_arrays(xs, ws, bias),
    )
    assert not out.grad_fn._by_parts


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # PyTorch's, on its own copy
@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), PART_CASES)
def test_by_parts_matches_torch(torch, by_parts, device, name, xs, ws, bias, kwargs) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    out = against_torch(
        torch,
        lambda *t: ours(*t, **kwargs),
        lambda *t: theirs(*t, **kwargs),
        *_arrays(xs, ws, bias),
        device=device,
    )
    assert out.grad_fn._by_parts == (aa.device(device).type != "cuda")


TRANSPOSED_CASES = [
    # (name, input shape, weight shape, with bias, keyword arguments)
    ("conv_transpose2d", (5, 4, 6, 7), (4, 3, 3, 3), True, {"padding": 1}),
    (
        "conv_transpose2d",
        (4, 4, 5, 5),
        (4, 2, 4, 4),
        True,
        {"stride": 2, "padding": 1, "groups": 2},
    ),
    (
        "conv_transpose2d",
        (3, 2, 5, 6),
        (2, 3, 3, 2),
        False,
        {"stride": (2, 1), "dilation": (1, 2), "output_padding": (1, 0)},
    ),
    ("conv_transpose1d", (4, 3, 9), (3, 2, 5), True, {"stride": 3, "padding": 2}),
]


@pytest.mark.parametrize(("name", "xs", "ws", "bias", "kwargs"), TRANSPOSED_CASES)
def test_transposed_by_parts_matches_torch(
    torch, by_parts, device, name, xs, ws, bias, kwargs
) -> None:
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    arrays = [RNG.standard_normal(xs), RNG.standard_normal(ws)]
    arrays += [RNG.standard_normal(ws[1] * kwargs.get("groups", 1))] if bias else []
    out = against_torch(
        torch,
        lambda *t: ours(*t, **kwargs),
        lambda *t: theirs(*t, **kwargs),
        *arrays,
        device=device,
    )
    assert out.grad_fn._by_parts == (aa.device(device).type != "cuda")


@pytest.mark.parametrize("grad", [[False, True], [True, False]])
def test_transposed_by_parts_with_one_gradient_wanted(torch, by_parts, grad) -> None:
    x, w = RNG.standard_normal((4, 3, 5, 5)), RNG.standard_normal((3, 2, 3, 3))
    out = against_torch(
        torch,
        lambda *t: F.conv_transpose2d(*t, stride=2),
        lambda *t: torch.nn.functional.conv_transpose2d(*t, stride=2),
        x,
        w,
        grad=grad,
    )
    assert out.grad_fn._by_parts


@pytest.mark.parametrize("grad", [[False, True, False], [True, False, True], [True, True, False]])
def test_by_parts_with_some_gradients_wanted(torch, by_parts, grad) -> None:
    x, w, b = _arrays((5, 3, 6, 6), (2, 3, 3, 3), True)
    out = against_torch(
        torch,
        lambda *t: F.conv2d(*t, padding=1),
        lambda *t: torch.nn.functional.conv2d(*t, padding=1),
        x,
        w,
        b,
        grad=grad,
    )
    assert out.grad_fn._by_parts


def test_by_parts_float32_and_uneven_parts_match_the_whole_batch_way(monkeypatch, by_parts):
    monkeypatch.setattr(conv_items, "PART_COLUMNS", 3 * 4 * 9 * 8 * 10)  # 3 items, 7 = 3+3+1
    x, w, b = (a.astype(np.float32) for a in _arrays((7, 4, 8, 10), (5, 4, 3, 3), True))
    v = aa.tensor(RNG.standard_normal((7, 5, 8, 10)).astype(np.float32))
    results = []
    for threshold in (0, float("inf")):
        monkeypatch.setattr(conv_items, "ITEMS_MIN_COLUMNS", threshold)
        inputs = [aa.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = F.conv2d(*inputs, padding=1)
        assert out.grad_fn._by_parts == (threshold == 0)
        (out * v).sum().backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in inputs])
    for ours, whole in zip(*results, strict=True):
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, whole, rtol=1e-5, atol=1e-4)


def test_by_parts_has_second_derivatives(by_parts) -> None:
    x, w = (aa.tensor(a, requires_grad=True) for a in _arrays((3, 2, 5, 5), (2, 2, 3, 3), False))
    assert F.conv2d(x, w, padding=1).grad_fn._by_parts
    assert aa.autograd.gradgradcheck(lambda a, b: F.conv2d(a, b, padding=1), (x, w))


def test_by_parts_frees_what_it_saved_and_honours_saved_tensor_hooks(by_parts) -> None:
    x, w = (aa.tensor(a, requires_grad=True) for a in _arrays((3, 2, 5, 5), (2, 2, 3, 3), False))
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    with aa.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = F.conv2d(x, w, padding=1)
    assert (3, 2, 7 * 7 + 2) in packed  # the padded input, kept for the weight's gradient
    out.sum().backward()
    reference = w.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="second time"):
        out.sum().backward()
    w.grad = None
    F.conv2d(x, w, padding=1).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), reference)


def test_by_parts_leaves_the_blas_thread_count_as_it_found_it(by_parts) -> None:
    before = conv_items.BLAS.current()
    x, w = (aa.tensor(a, requires_grad=True) for a in _arrays((4, 2, 6, 6), (3, 2, 3, 3), False))
    F.conv2d(x, w, padding=1).sum().backward()
    assert conv_items.BLAS.current() == before


def test_convolutions_by_parts_on_two_devices_at_once_agree_and_restore_blas(by_parts) -> None:
    """Two device threads share the pool and the counted BLAS narrowing."""
    before = conv_items.BLAS.current()
    x, w = _arrays((6, 3, 9, 9), (4, 3, 3, 3), False)
    expected = {}
    for device in ("cpu", "sim:0"):
        xt, wt = (aa.tensor(a, device=device, requires_grad=True) for a in (x, w))
        F.conv2d(xt, wt, padding=1).square().sum().backward()
        expected[device] = (xt.grad.cpu().numpy(), wt.grad.cpu().numpy())

    async def both() -> dict:
        grads = {}
        for device in ("cpu", "sim:0"):
            xt, wt = (aa.tensor(a, device=device, requires_grad=True) for a in (x, w))
            grads[device] = (xt, wt, F.conv2d(xt, wt, padding=1).square().sum())
        await asyncio.gather(*(loss.backward_async() for _, _, loss in grads.values()))
        return {
            d: (xt.grad.cpu().numpy(), wt.grad.cpu().numpy()) for d, (xt, wt, _) in grads.items()
        }

    for _ in range(5):
        for device, (gx, gw) in asyncio.run(both()).items():
            np.testing.assert_allclose(gx, expected[device][0], rtol=1e-12)
            np.testing.assert_allclose(gw, expected[device][1], rtol=1e-12)
    assert conv_items.BLAS.current() == before


def test_no_parts_without_a_second_thread_or_a_blas_to_narrow(monkeypatch, by_parts) -> None:
    x = np.zeros((4, 2, 6, 6))
    win = conv_windows((6, 6), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1))
    strided = conv_windows((6, 6), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    assert conv_items.applies(x, win) and conv_items.applies(x, strided)
    assert not conv_items.applies(x[:1], win)  # one item: nothing to share
    monkeypatch.setattr(conv_items, "POOL", IntraOpPool(1))
    assert not conv_items.applies(x, win)
    monkeypatch.setattr(conv_items, "POOL", IntraOpPool(2))
    monkeypatch.setattr(conv_items, "BLAS", conv_items.BLAS.__class__(None))  # no OpenBLAS
    assert not conv_items.applies(x, win)


# ------------------------------------------------------------------------ the pool


@pytest.fixture
def pool():
    """A pool of two threads, its helper let go after the test."""
    pool = IntraOpPool(2)
    yield pool
    pool.close()


def test_parts_run_on_the_caller_and_a_helper_at_once(pool) -> None:
    began = [threading.Event(), threading.Event()]
    threads = {}

    def part(start: int, stop: int, _scratch) -> tuple[int, int]:
        threads[start] = threading.current_thread()
        began[start].set()
        assert began[1 - start].wait(WAIT_S)  # each part waits for the other to begin
        return start, stop

    results, _ = pool.run_parts(part, [(0, 1), (1, 2)])
    assert results == [(0, 1), (1, 2)]
    assert threads[0] is not threads[1]
    assert threading.current_thread() in threads.values()


def test_the_caller_takes_every_part_when_no_helper_starts(pool) -> None:
    release = threading.Event()
    pool._helpers().submit(release.wait, WAIT_S)  # the only helper is busy elsewhere
    threads = set()

    def part(start: int, stop: int, _scratch) -> tuple[int, int]:
        threads.add(threading.current_thread())
        return start, stop

    try:
        assert pool.run_parts(part, [(0, 1), (1, 2), (2, 3)])[0] == [(0, 1), (1, 2), (2, 3)]
        assert threads == {threading.current_thread()}
    finally:
        release.set()


def test_helpers_run_parts_in_the_callers_context(pool) -> None:
    marker = contextvars.ContextVar("marker", default="unset")
    marker.set("caller's")
    seen = {}
    began = [threading.Event(), threading.Event()]

    def part(start: int, stop: int, _scratch) -> None:
        seen[threading.current_thread()] = marker.get()
        began[start].set()
        assert began[1 - start].wait(WAIT_S)  # both parts at once: one is on the helper

    pool.run_parts(part, [(0, 1), (1, 2)])
    assert len(seen) == 2 and set(seen.values()) == {"caller's"}


def test_parts_finish_on_the_caller_when_the_helpers_were_shut_down_meanwhile(pool) -> None:
    pool._helpers().shutdown(wait=True)  # as a close() from another thread between two steps
    assert pool.run_parts(lambda s, e, _: (s, e), [(0, 1), (1, 2)])[0] == [(0, 1), (1, 2)]


def test_each_thread_makes_its_scratch_once(pool) -> None:
    made = []

    def scratch():
        made.append(threading.current_thread())
        return []

    def part(start: int, stop: int, mine: list) -> int:
        mine.append(start)
        return start

    bounds = [(i, i + 1) for i in range(40)]
    results, scratches = pool.run_parts(part, bounds, scratch)
    assert results == list(range(40))
    assert len(made) == len(set(made)) == len(scratches) <= 2
    assert sorted(i for s in scratches for i in s) == list(range(40))


def test_a_failed_part_on_the_caller_waits_for_the_helpers_part_and_stops_the_rest(pool) -> None:
    helper_began, helper_ended = threading.Event(), threading.Event()
    ran = []

    def part(start: int, stop: int, _scratch) -> None:
        ran.append(start)
        if start == 0:
            assert helper_began.wait(WAIT_S)
            raise ValueError("part 0 failed")
        if start == 1:
            helper_began.set()
            threading.Event().wait(0.05)
            helper_ended.set()

    with pytest.raises(ValueError, match="part 0 failed"):
        pool.run_parts(part, [(i, i + 1) for i in range(6)])
    assert helper_ended.is_set()  # run_parts returned only after the helper's part had ended
    assert len(ran) < 6


def test_a_failed_part_on_a_helper_is_raised_on_the_caller(pool) -> None:
    caller = threading.current_thread()
    helper_failed = threading.Event()

    def part(start: int, stop: int, _scratch) -> None:
        if threading.current_thread() is caller:
            assert helper_failed.wait(WAIT_S)  # part 0 holds the caller until a helper fails
            return
        helper_failed.set()
        raise KeyError(f"part {start} failed")

    with pytest.raises(KeyError, match=r"part \d failed"):
        pool.run_parts(part, [(i, i + 1) for i in range(4)])


def test_a_closed_pool_lets_its_helper_go_and_starts_another_when_needed(pool) -> None:
    pool.run_parts(lambda s, e, _: None, [(0, 1), (1, 2)])
    first = pool._executor
    pool.close()
    assert pool._executor is None
    assert pool.run_parts(lambda s, e, _: (s, e), [(0, 1), (1, 2)])[0] == [(0, 1), (1, 2)]
    assert pool._executor is not first


def test_set_num_threads_validates_round_trips_and_starts_at_the_usable_cores() -> None:
    assert IntraOpPool().threads == usable_cores() >= 1
    before = get_num_threads()
    try:
        set_num_threads(1)
        assert get_num_threads() == aa.get_num_threads() == 1
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ValueError, match="positive integer"):
                set_num_threads(bad)
    finally:
        set_num_threads(before)
