"""Streams and events, and the stream sanitizer of the CUDA-faithful sim mode."""

from __future__ import annotations

import threading

import pytest

import autograd_async as aa


def test_the_issue_example_races_without_the_wait_and_not_with_it():
    s = aa.Stream("sim:0")
    x = aa.ones(1000, device="sim:0")
    s.wait_stream(aa.current_stream("sim:0"))  # x was made on the default stream (see below)
    with aa.stream(s):
        y = x * 2
    with pytest.raises(aa.StreamRaceError) as caught:
        y + 1
    text = str(caught.value)
    assert "sim:0 default stream" in text and "sim:0 stream" in text and "add" in text
    aa.current_stream("sim:0").wait_stream(s)
    assert float((y + 1).sum().item()) == 3000.0


def test_a_tensor_made_on_the_default_stream_and_read_on_a_side_stream_races_as_in_csan():
    s = aa.Stream("sim:0")
    x = aa.ones(10, device="sim:0")
    with pytest.raises(aa.StreamRaceError, match="mul"):
        with aa.stream(s):
            x * 2


def test_an_event_orders_two_streams():
    s = aa.Stream("sim:0")
    x = aa.ones(10, device="sim:0")
    made = aa.current_stream("sim:0").record_event()
    s.wait_event(made)
    with aa.stream(s):
        y = x + 1
        done = aa.Event()
        done.record()
    done.wait(aa.current_stream("sim:0"))
    assert float((y * 1).sum().item()) == 20.0


def test_a_write_after_an_unsynchronised_read_races():
    s = aa.Stream("sim:0")
    x = aa.ones(10, device="sim:0")
    s.wait_stream(aa.current_stream("sim:0"))
    with aa.stream(s):
        x * 2  # reads x on s
    with pytest.raises(aa.StreamRaceError, match="read"):
        x.add_(1)  # writes x on the default stream, which has not waited for that read


def test_current_stream_follows_the_block_and_is_per_thread():
    s = aa.Stream("sim:0")
    default = aa.default_stream("sim:0")
    assert aa.current_stream("sim:0") == default
    seen = []
    with aa.stream(s):
        assert aa.current_stream("sim:0") == s
        assert aa.current_stream("sim:1") == aa.default_stream("sim:1")
        thread = threading.Thread(target=lambda: seen.append(aa.current_stream("sim:0")))
        thread.start()
        thread.join()
    assert seen == [default]
    assert aa.current_stream("sim:0") == default


def test_event_query_synchronize_and_elapsed_time():
    start, end = aa.Event(enable_timing=True), aa.Event(enable_timing=True)
    assert start.query()  # never recorded: nothing to wait for
    start.record(aa.current_stream("sim:0"))
    aa.ones(100, device="sim:0") * 2
    end.record(aa.current_stream("sim:0"))
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    untimed = aa.Event()
    untimed.record(aa.current_stream("sim:0"))
    with pytest.raises(RuntimeError, match="enable_timing"):
        start.elapsed_time(untimed)


def test_stream_query_synchronize_and_device_synchronize():
    s = aa.Stream("sim:1", priority=-1)
    assert s.priority == -1
    assert s.query()
    s.synchronize()
    aa.synchronize("sim:1")


def test_cpu_streams_are_trivial():
    s = aa.Stream("cpu")
    with aa.stream(s):
        assert aa.current_stream("cpu") == aa.default_stream("cpu")
    e = s.record_event()
    assert e.query()
    x = aa.ones(3)
    s.wait_stream(aa.current_stream("cpu"))
    assert float((x * 2).sum().item()) == 6.0


def test_cross_device_copies_are_ordered_both_ways():
    x = aa.ones(10, device="sim:0")
    y = x.to("sim:1")
    x.add_(1)  # the copy read x on sim:1's stream order; sim:0 waited for it
    assert float((y * 1).sum().item()) == 10.0
    assert float(x.to("cpu").sum().item()) == 20.0


def test_a_side_stream_on_another_thread_races_with_the_default_stream():
    s = aa.Stream("sim:0")
    x = aa.ones(10, device="sim:0")
    s.wait_stream(aa.current_stream("sim:0"))
    out = []

    def work() -> None:
        with aa.stream(s):
            out.append(x * 3)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    with pytest.raises(aa.StreamRaceError):
        out[0] - 1


def test_the_sanitizer_forgets_freed_buffers():
    from autograd_async.backends.sanitizer import sanitizer

    before = len(sanitizer._buffers)
    for _ in range(200):
        aa.ones(16, device="sim:0") * 2
    assert len(sanitizer._buffers) < before + 20


def test_views_share_their_base_buffer():
    s = aa.Stream("sim:0")
    x = aa.ones((4, 4), device="sim:0")
    s.wait_stream(aa.current_stream("sim:0"))
    with aa.stream(s):
        x[1].add_(1)  # a write through a view, on s
    with pytest.raises(aa.StreamRaceError):
        x[2] * 1  # another view of the same buffer, read on the default stream
