"""Work handles: finishers run exactly once, whichever of the backend and the caller comes first."""

from __future__ import annotations

import threading

import pytest

from autograd_async.distributed import DistBackendError
from autograd_async.distributed.collectives.work import Work, completed_work


def test_a_finisher_attached_before_the_backend_settles_runs_before_waiters_wake():
    work = Work("all_reduce #1")
    seen = []
    work.then(lambda: seen.append(work.is_completed()))
    work.set_result(None)
    assert seen == [False] and work.wait(timeout=1)


def test_a_finisher_attached_after_the_backend_settled_runs_at_once():
    # The round of a rank that arrives last can be settled by the combiner thread before the
    # rank's own thread attaches the copy back into its tensor: that copy must still happen.
    work = completed_work("all_gather #1")
    seen = []
    work.then(lambda: seen.append("copied back"))
    assert seen == ["copied back"]
    assert work.wait(timeout=1)


def test_a_finisher_attached_while_others_run_runs_before_waiters_wake():
    work = Work("gather #1")
    seen = []

    def first() -> None:
        work.then(lambda: seen.append(("second", work.is_completed())))
        seen.append(("first", work.is_completed()))

    work.then(first)
    work.set_result(None)
    assert seen == [("first", False), ("second", False)]


def test_a_failed_collective_runs_no_finisher_however_late_it_is_attached():
    work = Work("broadcast #1")
    seen = []
    work.then(lambda: seen.append("early"))
    work.set_exception(DistBackendError("broadcast #1 timed out"))
    work.then(lambda: seen.append("late"))
    assert seen == []
    with pytest.raises(DistBackendError, match="timed out"):
        work.wait(timeout=1)


def test_a_late_failure_does_not_undo_a_success():
    work = completed_work("all_reduce #4")
    work.set_exception(DistBackendError("all_reduce #4: the group was destroyed"))
    seen = []
    work.then(lambda: seen.append("copied back"))
    assert seen == ["copied back"] and work.is_success()


def test_a_finisher_that_fails_on_the_backend_thread_fails_the_handle():
    work = Work("all_reduce #2")
    work.then(lambda: 1 / 0)
    work.set_result(None)
    with pytest.raises(ZeroDivisionError):
        work.wait(timeout=1)


def settle_while_another_thread_attaches(n: int) -> list[int]:
    """How many times each of `n` finishers ran, attached while the handle is being settled."""
    work = Work("all_reduce #3")
    runs = [0] * n
    start = threading.Barrier(2)

    def attach() -> None:
        start.wait()
        for i in range(n):
            work.then(lambda i=i: runs.__setitem__(i, runs[i] + 1))

    attacher = threading.Thread(target=attach)
    attacher.start()
    start.wait()
    work.set_result(None)
    attacher.join()
    return runs


def test_finishers_race_with_the_settling_thread_and_each_runs_once():
    for _ in range(200):
        assert settle_while_another_thread_attaches(8) == [1] * 8
