"""Small all-cpu graph tasks run on the calling thread (engine/inline.py), else on the worker."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.backends.sim_mode import sim_mode_state
from autograd_async.engine import Engine, get_engine, inline
from autograd_async.engine.inline import qualifies
from autograd_async.profiler import profile

from .helpers import Boom, Probe, Recorder, worker_path


class CustomError(Exception):
    """An error of a type no library code raises."""


WORKER = "autograd-async:cpu"
# The CUDA-rules sim mode runs every pass on the workers (its sanitizer checks their threads).
inline_only = pytest.mark.skipif(
    aa.sim_mode() == "cuda", reason="no inline runs under AUTOGRAD_ASYNC_SIM=cuda"
)


def _threads(recorder: Recorder) -> set[str]:
    return {v.thread.name for v in recorder.visits}


def _branched(recorder: Recorder) -> tuple[aa.Tensor, aa.Tensor, aa.Tensor]:
    """Two leaves, a shared node feeding two branches of different lengths, then a join."""
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([0.5, -1.0], requires_grad=True)
    shared = Probe.apply(x * w, recorder, "shared")
    left = Probe.apply(Probe.apply(shared * 2.0, recorder, "left-1") + 1.0, recorder, "left-2")
    right = Probe.apply(aa.tanh(shared), recorder, "right")
    side = Probe.apply(w * 3.0, recorder, "side")
    return x, w, Probe.apply(left * right + side, recorder, "join").sum()


@inline_only
def test_a_small_cpu_pass_runs_on_the_calling_thread():
    recorder = Recorder()
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    Probe.apply(x * 3.0, recorder, "n").sum().backward()
    assert _threads(recorder) == {threading.current_thread().name}
    assert recorder.visits[0].loop is None  # no loop of the worker's: this thread has none
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_the_forced_worker_path_runs_on_the_cpu_worker_thread():
    recorder = Recorder()
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    with worker_path():
        Probe.apply(x * 3.0, recorder, "n").sum().backward()
    (visit,) = recorder.visits
    assert visit.thread is get_engine().worker(aa.device("cpu")).thread
    assert visit.thread.name == WORKER and visit.loop is not None
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


@inline_only
def test_the_order_is_the_worker_paths_on_a_graph_with_branches():
    inline, hopped = Recorder(), Recorder()
    x1, w1, loss = _branched(inline)
    loss.backward()
    x2, w2, loss = _branched(hopped)
    with worker_path():
        loss.backward()
    assert _threads(inline) == {threading.current_thread().name}
    assert _threads(hopped) == {WORKER}
    assert inline.tags() == hopped.tags() and len(inline.tags()) == 6
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy())
    np.testing.assert_allclose(w1.grad.numpy(), w2.grad.numpy())


@inline_only
def test_over_the_node_limit_the_worker_runs_it():
    engine = get_engine()
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    loss = Probe.apply(x * 2.0, recorder, "n").sum()  # 4 nodes: accumulate, mul, probe, sum
    engine.inline_max_nodes = 3
    try:
        loss.backward()
    finally:
        del engine.inline_max_nodes
    assert _threads(recorder) == {WORKER}
    recorder.visits.clear()
    engine.inline_max_nodes = 4
    try:
        Probe.apply(x * 2.0, recorder, "n").sum().backward()
    finally:
        del engine.inline_max_nodes
    assert _threads(recorder) == {threading.current_thread().name}


@inline_only
def test_over_the_work_bound_the_worker_runs_it():
    engine = get_engine()
    recorder = Recorder()
    big = aa.ones(engine.inline_max_elements + 1, requires_grad=True)
    Probe.apply(big * 2.0, recorder, "big").sum().backward()
    assert _threads(recorder) == {WORKER}
    np.testing.assert_allclose(big.grad.numpy()[:3], [2.0, 2.0, 2.0])
    recorder.visits.clear()
    small = aa.ones(100, requires_grad=True)
    Probe.apply(small * 2.0, recorder, "small").sum().backward()
    assert _threads(recorder) == {threading.current_thread().name}


def test_a_node_on_another_device_sends_the_task_to_the_workers():
    recorder = Recorder()
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = Probe.apply(x * 2.0, recorder, "cpu")
    z = Probe.apply(y.to("sim:0") * 3.0, recorder, "sim:0")
    z.to("cpu").sum().backward()
    assert {(v.tag, v.thread.name) for v in recorder.visits} == {
        ("cpu", WORKER),
        ("sim:0", "autograd-async:sim:0"),
    }
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_a_busy_worker_sends_the_task_to_the_worker_path(monkeypatch):
    monkeypatch.setattr(inline, "CLAIM_TIMEOUT_S", 0.002)  # the engine's own (conftest waits)
    worker = get_engine().worker(aa.device("cpu"))
    claimed, release = threading.Event(), threading.Event()

    def hold() -> None:
        assert worker.claim_ownership(5.0)
        claimed.set()
        release.wait(5.0)
        worker.release_ownership()

    holder = threading.Thread(target=hold)
    holder.start()
    assert claimed.wait(5.0)
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    loss = Probe.apply(x * 2.0, recorder, "n").sum()
    runner = threading.Thread(target=loss.backward)
    runner.start()
    runner.join(0.2)
    assert runner.is_alive() and not recorder.visits  # waits for the worker, which waits too
    release.set()
    runner.join(5.0)
    holder.join(5.0)
    assert not runner.is_alive()
    assert _threads(recorder) == {WORKER}
    assert x.grad.item() == 2.0


def test_inline_max_nodes_zero_disables_inline_runs():
    with Engine() as engine:
        engine.inline_max_nodes = 0
        recorder = Recorder()
        x = aa.tensor([1.0], requires_grad=True)
        Probe.apply(x, recorder, "n").sum().backward()
    assert _threads(recorder) == {WORKER}


def test_no_inline_runs_under_the_cuda_sim_rules_or_a_profiler(monkeypatch):
    engine = get_engine()
    x = aa.tensor([1.0], requires_grad=True)
    task_of = lambda loss: aa.autograd.api.prepare(loss, None, None, False, None, "backward").task
    assert qualifies(engine, task_of((x * 2.0).sum())) == (aa.sim_mode() != "cuda")
    with monkeypatch.context() as patched:
        patched.setattr(sim_mode_state, "mode", "cuda")
        assert not qualifies(engine, task_of((x * 2.0).sum()))
    recorder = Recorder()
    with profile():
        Probe.apply(x * 2.0, recorder, "n").sum().backward()
    assert _threads(recorder) == {WORKER}


def _hooked(log: list[str]) -> tuple[aa.Tensor, aa.Tensor]:
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    h.register_hook(lambda g: log.append("tensor hook") or g * 10.0)
    h.grad_fn.register_prehook(lambda gs: log.append("pre-hook") or None)
    h.grad_fn.register_hook(lambda gi, go: log.append("post-hook") or None)
    x.register_hook(lambda g: log.append("leaf hook") or None)
    x.register_post_accumulate_grad_hook(lambda t: log.append("post-accumulate"))
    return x, h


def test_hooks_run_in_the_worker_paths_order():
    inline_log: list[str] = []
    x, h = _hooked(inline_log)
    (h * h).sum().backward()
    hopped_log: list[str] = []
    x2, h2 = _hooked(hopped_log)
    with worker_path():
        (h2 * h2).sum().backward()
    assert inline_log == hopped_log
    assert inline_log == ["tensor hook", "pre-hook", "post-hook", "leaf hook", "post-accumulate"]
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())
    np.testing.assert_allclose(h.grad.numpy(), h2.grad.numpy())


def test_retain_graph_and_create_graph_inline():
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 24.0])
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    x.grad = None
    (gx,) = aa.autograd.grad((x * x * x).sum(), x, create_graph=True)
    (ggx,) = aa.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(ggx.numpy(), [6.0, 12.0])


@inline_only
def test_grad_with_inputs_captures_inline():
    recorder = Recorder()
    x = aa.tensor([1.0, 2.0], requires_grad=True)
    w = aa.tensor([3.0, 4.0], requires_grad=True)
    loss = Probe.apply(x * w, recorder, "n").sum()
    (gw,) = aa.autograd.grad(loss, [w])
    np.testing.assert_allclose(gw.numpy(), [1.0, 2.0])
    assert x.grad is None and w.grad is None
    assert _threads(recorder) == {threading.current_thread().name}


@inline_only
def test_an_error_names_this_thread_and_leaves_the_engine_serving():
    x = aa.tensor([1.0], requires_grad=True)
    with pytest.raises(CustomError, match="inline failure") as info:
        Boom.apply(x * 2.0, CustomError("inline failure")).sum().backward()
    notes = "\n".join(info.value.__notes__)
    assert "BoomBackward" in notes and "on cpu" in notes
    assert f"calling thread {threading.current_thread().name}" in notes
    worker = get_engine().worker(aa.device("cpu"))
    assert not worker.ownership.locked() and not worker.ready
    recorder = Recorder()
    Probe.apply(x * 2.0, recorder, "after").sum().backward()
    assert x.grad.item() == 2.0 and _threads(recorder) == {threading.current_thread().name}
    with worker_path():
        (x * 3.0).sum().backward()
    assert x.grad.item() == 5.0


def test_anomaly_mode_adds_the_forward_traceback_inline():
    x = aa.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning), aa.autograd.detect_anomaly():
        loss = Boom.apply(x * 2.0, CustomError("anomalous")).sum()
        with pytest.raises(CustomError) as info:
            loss.backward()
    notes = "\n".join(info.value.__notes__)
    assert "Traceback of forward call that caused the error" in notes


def test_concurrent_passes_from_several_threads_get_their_own_gradients():
    failures: list[BaseException] = []

    def run(k: int) -> None:
        try:
            for i in range(30):
                x = aa.tensor([float(k), float(i)], requires_grad=True)
                loss = (aa.tanh(x * 0.1) * (k + 1.0)).sum()
                if i % 3 == 0:
                    loss = loss + (x.to("sim:0") * 2.0).to("cpu").sum()  # a worker-path pass
                loss.backward()
                expected = (1.0 - np.tanh(x.detach().numpy() * 0.1) ** 2) * 0.1 * (k + 1.0)
                if i % 3 == 0:
                    expected = expected + 2.0
                np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures
    assert not get_engine().worker(aa.device("cpu")).ownership.locked()


@inline_only
async def test_awaited_passes_run_inline_and_let_other_tasks_run():
    ticks = 0
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1
            await asyncio.sleep(0)

    running = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    started = ticks
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    for _ in range(10):
        await Probe.apply(x * 2.0, recorder, "n").sum().backward_async()
    (g,) = await aa.autograd.grad_async((x * 5.0).sum(), x)
    stop = True
    await running
    assert ticks - started >= 10  # each awaited pass yielded to the loop at least once
    assert _threads(recorder) == {threading.current_thread().name}
    assert x.grad.item() == 20.0 and g.item() == 5.0


class RunsNested(aa.autograd.Function):
    """Identity whose backward runs a nested backward of two tagged nodes (blocking)."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, recorder: Recorder):
        ctx.recorder = recorder
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        inner = aa.tensor([2.0], requires_grad=True)
        with aa.enable_grad():
            y = Probe.apply(
                Probe.apply(inner * 3.0, ctx.recorder, "nested-1"), ctx.recorder, "nested-2"
            ).sum()
        y.backward()
        ctx.recorder.visits.append(None)  # type: ignore[arg-type]
        assert inner.grad.item() == 3.0
        return g * 2.0, None


@inline_only
def test_a_reentrant_backward_inside_an_inline_node():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    low = Probe.apply(x * 1.0, recorder, "parent-after")
    nested = RunsNested.apply(x * 1.0, recorder)
    (low + nested).sum().backward()
    tags = [v.tag if v is not None else "reentrant-done" for v in recorder.visits]
    assert tags == ["nested-2", "nested-1", "reentrant-done", "parent-after"]
    assert {v.thread.name for v in recorder.visits if v is not None} == {
        threading.current_thread().name
    }
    assert x.grad.item() == 3.0


@inline_only
async def test_a_cancelled_awaited_pass_leaves_the_engine_serving():
    x = aa.tensor([1.0], requires_grad=True)
    never = asyncio.create_task((x * 2.0).sum().backward_async())
    never.cancel()  # before it starts: it never runs
    with pytest.raises(asyncio.CancelledError):
        await never
    assert x.grad is None
    at_yield = asyncio.create_task((x * 2.0).sum().backward_async())
    await asyncio.sleep(0)  # it ran inline and waits at its yield to the loop
    at_yield.cancel()
    with pytest.raises(asyncio.CancelledError):
        await at_yield
    assert x.grad.item() == 2.0  # as on the worker path, a pass that had finished keeps its work
    assert not get_engine().worker(aa.device("cpu")).ownership.locked()
    await (x * 3.0).sum().backward_async()
    assert x.grad.item() == 5.0


marker: contextvars.ContextVar[str] = contextvars.ContextVar("inline_test_marker", default="unset")


class SeesState(aa.autograd.Function):
    """Identity whose backward records grad mode and a caller's ContextVar."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor, seen: list):
        ctx.seen = seen
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        ctx.seen.append((aa.is_grad_enabled(), marker.get()))
        marker.set("changed by the node")
        return g, None


@pytest.mark.parametrize("create_graph", [False, True])
def test_context_state_is_the_worker_paths_and_stays_put(create_graph):
    seen: list = []
    x = aa.tensor([1.0], requires_grad=True)
    token = marker.set("caller")
    try:
        for force_worker in (False, True):
            loss = SeesState.apply(x * 2.0, seen).sum()
            with aa.no_grad():
                if force_worker:
                    with worker_path():
                        loss.backward(create_graph=create_graph)
                else:
                    loss.backward(create_graph=create_graph)
                assert not aa.is_grad_enabled()
            assert marker.get() == "caller"
    finally:
        marker.reset(token)
    assert seen == [(create_graph, "caller")] * 2


@inline_only
def test_a_hook_that_waits_on_other_threads_keeps_the_pass_off_the_caller():
    engine = get_engine()
    x = aa.tensor([1.0], requires_grad=True)
    task_of = lambda loss: aa.autograd.api.prepare(loss, None, None, False, None, "backward").task
    x.register_post_accumulate_grad_hook(lambda t: None)
    assert qualifies(engine, task_of((x * 2.0).sum()))

    def waits(_t: aa.Tensor) -> None:  # as DistributedDataParallel's reducer marks its hooks
        return None

    waits.waits_on_other_threads = True  # type: ignore[attr-defined]
    x.register_post_accumulate_grad_hook(waits)
    assert not qualifies(engine, task_of((x * 2.0).sum()))


class WaitsForRanks(aa.autograd.Function):
    """Identity marked as SyncBatchNorm's all-reduce marks itself."""

    @staticmethod
    def forward(ctx: Any, x: aa.Tensor):
        ctx.waits_on_other_threads = True
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, g: aa.Tensor):
        return g


def test_a_node_that_waits_on_other_threads_runs_on_the_worker():
    recorder = Recorder()
    x = aa.tensor([1.0], requires_grad=True)
    Probe.apply(WaitsForRanks.apply(x * 2.0), recorder, "n").sum().backward()
    assert _threads(recorder) == {WORKER}
    assert x.grad.item() == 2.0
