"""Narrowing NumPy's BLAS to one thread per caller: counted across threads, always restored."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from autograd_async.backends.blas_threads import BLAS, BlasControls, BlasThreads, find_controls


class CountRecorder:
    """A BLAS thread count held in Python, recording every change made to it."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.changes: list[int] = []

    def controls(self) -> BlasControls:
        return BlasControls("recorded", lambda: self.count, self._set)

    def _set(self, count: int) -> None:
        self.changes.append(count)
        self.count = count


def test_overlapping_sections_restore_the_count_once_the_last_one_closes() -> None:
    recorder = CountRecorder(4)
    blas = BlasThreads(recorder.controls())
    first, second = blas.one_per_caller(), blas.one_per_caller()
    first.__enter__()
    second.__enter__()  # would save 1 and restore 1 if each section saved its own
    first.__exit__(None, None, None)
    assert recorder.count == 1
    second.__exit__(None, None, None)
    assert recorder.count == 4 and recorder.changes == [1, 4]


def test_a_failing_section_restores_the_count() -> None:
    recorder = CountRecorder(2)
    blas = BlasThreads(recorder.controls())
    with pytest.raises(ZeroDivisionError), blas.one_per_caller():
        assert recorder.count == 1
        1 / 0  # noqa: B018
    assert recorder.count == 2


def test_a_single_thread_blas_is_left_untouched() -> None:
    recorder = CountRecorder(1)
    with BlasThreads(recorder.controls()).one_per_caller():
        pass
    assert recorder.changes == []


def test_sections_from_many_threads_end_with_the_count_restored() -> None:
    recorder = CountRecorder(3)
    blas = BlasThreads(recorder.controls())
    start = threading.Barrier(8)

    def run() -> None:
        start.wait(30)
        for _ in range(200):
            with blas.one_per_caller():
                assert recorder.count == 1

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert recorder.count == 3


def test_without_an_openblas_sections_change_nothing() -> None:
    blas = BlasThreads(None)
    assert not blas.available and blas.current() is None
    with blas.one_per_caller():
        pass


def test_numpys_openblas_is_found_and_narrowed_for_real() -> None:
    controls = find_controls()
    if controls is None:
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    assert "openblas" in controls.path.lower()
    before = BLAS.current()
    with BLAS.one_per_caller():
        assert BLAS.current() == 1
        a = np.ones((64, 64))
        np.testing.assert_array_equal(a @ a, np.full((64, 64), 64.0))
    assert BLAS.current() == before
