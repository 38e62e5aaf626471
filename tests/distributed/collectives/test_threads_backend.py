"""The threads backend: ranks that are threads of this process, on cpu and sim devices."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

import autograd_async as aa
import autograd_async.distributed as dist
from autograd_async.distributed.collectives.backend_threads import ThreadWorld

from .checks import check_everything, check_mismatch, host, tensor_on


def run_ranks(
    size: int,
    body: Callable[[int], Any],
    devices: list[str] | None = None,
    pg_timeout: float = 30.0,
) -> list[Any]:
    """Run `body(rank)` as `size` thread ranks (on sim devices unless given); results by rank."""
    devices = devices or [f"sim:{r}" for r in range(size)]
    return dist.spawn_threads(body, devices[:size], timeout=timedelta(seconds=pg_timeout))


def test_every_collective_and_op_matches_numpy_on_three_thread_ranks():
    counts = run_ranks(
        3,
        lambda rank: check_everything(rank, 3, ["cpu", "sim:0", "sim:1"][rank]),
        devices=["cpu", "sim:0", "sim:1"],
    )
    assert min(counts) > 200


@pytest.mark.parametrize("size", [1, 2])
def test_every_collective_on_sim_devices(size):
    devices = [f"sim:{r}" for r in range(size)]
    counts = run_ranks(
        size, lambda rank: check_everything(rank, size, devices[rank]), devices=devices
    )
    assert min(counts) > 100


@pytest.fixture
def rounds_settle_before_callers_go_on(monkeypatch):
    """A rank whose collective's round is complete when it arrives waits, inside the collective
    call, until the combiner thread has settled the round: the interleaving a loaded machine
    makes when it preempts that rank between handing in its arrays and attaching the copy of the
    result back into its tensor."""
    arrive = ThreadWorld.arrive

    def arrive_then_wait_for_the_combiner(self: ThreadWorld, seq: int, *args: Any) -> None:
        arrive(self, seq, *args)
        with self.lock:
            complete = seq not in self.rounds
        if complete:
            work = args[3]
            concurrent.futures.wait([work.future])

    monkeypatch.setattr(ThreadWorld, "arrive", arrive_then_wait_for_the_combiner)


@pytest.mark.parametrize("size", [1, 2])
def test_results_reach_the_tensors_when_the_round_settles_before_the_caller_goes_on(
    size, rounds_settle_before_callers_go_on
):
    def body(rank: int) -> None:
        device = f"sim:{rank}"
        mine = np.arange(6.0).reshape(2, 3) + rank
        everyone = [np.arange(6.0).reshape(2, 3) + r for r in range(size)]

        t = tensor_on(mine, device, transposed=True)  # not contiguous: the result is copied back
        dist.all_reduce(t)
        np.testing.assert_array_equal(host(t), np.sum(everyone, axis=0))

        t = tensor_on(mine, device, transposed=True)
        dist.broadcast(t, src=size - 1)
        np.testing.assert_array_equal(host(t), everyone[-1])

        t = tensor_on(mine, device, transposed=True)
        dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
        np.testing.assert_array_equal(host(t), everyone[-1] if rank == 0 else mine)

        outs = [aa.zeros((2, 3), dtype=aa.float64, device=device) for _ in range(size)]
        dist.all_gather(outs, tensor_on(mine, device))
        for r in range(size):
            np.testing.assert_array_equal(host(outs[r]), everyone[r])

        outs = [aa.zeros((2, 3), dtype=aa.float64, device=device) for _ in range(size)]
        dist.all_gather(outs, tensor_on(mine, device), async_op=True).wait()
        for r in range(size):
            np.testing.assert_array_equal(host(outs[r]), everyone[r])

        gathered = [aa.zeros((2, 3), dtype=aa.float64, device=device) for _ in range(size)]
        dist.gather(tensor_on(mine, device), gathered if rank == 0 else None, dst=0)
        if rank == 0:
            for r in range(size):
                np.testing.assert_array_equal(host(gathered[r]), everyone[r])

    run_ranks(size, body)


def test_mismatched_shapes_fail_every_rank_clearly_and_the_group_goes_on():
    def body(rank: int) -> float:
        check_mismatch(rank, 2, "cpu")
        t = aa.ones(2)
        dist.all_reduce(t)
        return float(t.numpy()[0])

    assert run_ranks(2, body) == [2.0, 2.0]


def test_a_rank_that_never_comes_fails_the_others_naming_it():
    def body(rank: int) -> str:
        if rank == 2:
            return "stayed away"
        started = time.monotonic()
        with pytest.raises(dist.DistBackendError) as info:
            dist.all_reduce(aa.ones(3))
        assert time.monotonic() - started < 5
        return str(info.value)

    messages = run_ranks(3, body, pg_timeout=0.3)
    for text in messages[:2]:
        assert "all_reduce #1 on group WORLD (threads, ranks 0-2) timed out" in text, text
        assert "missing ranks: 2" in text, text


def test_work_wait_timeout_and_is_completed():
    def body(rank: int) -> None:
        t = aa.ones(2)
        if rank == 0:
            work = dist.all_reduce(t, async_op=True)
            assert not work.is_completed()
            with pytest.raises(dist.DistBackendError, match="timed out"):
                work.wait(timeout=0.05)
            assert work.wait(timeout=10) and work.is_completed() and work.is_success()
        else:
            time.sleep(0.3)
            dist.all_reduce(t)
        np.testing.assert_array_equal(t.numpy(), [2.0, 2.0])

    run_ranks(2, body)


def test_ranks_calling_different_collectives_fail_clearly():
    def body(rank: int) -> str:
        with pytest.raises(dist.DistBackendError) as info:
            if rank == 0:
                dist.all_reduce(aa.ones(2))
            else:
                dist.broadcast(aa.ones(2), src=0)
        return str(info.value)

    for text in run_ranks(2, body):
        assert "rank 0 called all_reduce, rank 1 called broadcast" in text, text


def test_subgroups_and_ranks():
    def body(rank: int) -> tuple:
        evens = dist.new_group([0, 2])
        if rank in (0, 2):
            t = aa.full((2,), float(rank + 1))
            dist.all_reduce(t, group=evens)
            return dist.get_rank(evens), dist.get_world_size(evens), float(t.numpy()[0])
        assert evens is dist.GroupMember.NON_GROUP_MEMBER
        return dist.get_rank(evens), dist.get_world_size(evens), None

    assert run_ranks(3, body) == [(0, 2, 4.0), (-1, -1, None), (1, 2, 4.0)]


def test_uninitialised_and_double_initialisation_errors():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(aa.ones(1))
    assert not dist.is_initialized()

    def body(rank: int) -> None:
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("threads", rank=rank, world_size=1, store=dist.HashStore())

    run_ranks(1, body)


def test_reduce_op_and_argument_errors_follow_pytorch():
    def body(rank: int) -> None:
        with pytest.raises(TypeError, match="must be a Tensor"):
            dist.all_reduce(np.ones(2))
        with pytest.raises(ValueError, match="tensor_list must have 2 entries"):
            dist.all_gather([aa.ones(1)], aa.ones(1))
        with pytest.raises(ValueError, match="needs an integer or bool"):
            dist.all_reduce(aa.ones(1), op=dist.ReduceOp.BAND)

    run_ranks(2, body)
