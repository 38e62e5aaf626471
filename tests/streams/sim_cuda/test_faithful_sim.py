"""What makes the CUDA-faithful sim catch GPU-only bugs: deferred host copies holding poison until
the host waits, host reads checked and counted, CuPy's per-thread launch stream, the allocator's
reuse of freed blocks per stream; and the targets of issue 28 checked by it."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.backends.sim_streams import sim_world
from autograd_async.streams import streams_for


def test_an_async_copy_to_the_host_holds_poison_until_the_host_waits():
    x = aa.arange(6.0, device="sim:0")
    streams = streams_for(x.device)
    stream = streams.default_stream(x.device)
    out = streams.copy_to_host_async(x._data, stream)
    assert np.isnan(out).all()  # not run yet: what a host read without the wait would see
    with pytest.raises(aa.StreamRaceError):
        aa.Tensor._wrap(out, aa.device("cpu")).numpy()
    event = streams.new_event()
    streams.record(event, stream)
    streams.synchronize_event(event)
    np.testing.assert_array_equal(out, np.arange(6.0))


def test_integer_poison_is_all_bits_set():
    x = aa.arange(4, device="sim:0")
    streams = streams_for(x.device)
    out = streams.copy_to_host_async(x._data, streams.default_stream(x.device))
    assert (out == -1).all()
    streams.synchronize_device(x.device)
    np.testing.assert_array_equal(out, np.arange(4))


def test_host_reads_synchronise_and_are_counted():
    x = aa.ones(4, device="sim:0") * 2
    before = sim_world.host_syncs
    assert x.sum().item() == 8.0
    x.tolist()
    assert sim_world.host_syncs == before + 2


def test_a_host_read_of_side_stream_work_races_without_the_wait():
    x = aa.ones(4, device="sim:0")
    s = aa.Stream("sim:0")
    s.wait_stream(aa.current_stream("sim:0"))
    with aa.stream(s):
        y = x * 2
    with pytest.raises(aa.StreamRaceError):
        y.tolist()  # read on the default stream, which never waited for s
    aa.current_stream("sim:0").wait_stream(s)
    assert y.tolist() == [2.0] * 4


def test_launches_follow_the_threads_current_stream_as_on_cupy():
    s = aa.Stream("sim:0")
    streams = streams_for(s.device)
    seen = []

    def other_thread() -> None:
        seen.append(sim_world.launch_stream(s.device))

    with aa.stream(s):
        assert sim_world.launch_stream(s.device) is s._handle
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert seen == [streams.default_stream(s.device)]
    assert sim_world.launch_stream(s.device) is streams.default_stream(s.device)


def test_backward_makes_no_host_synchronisation():
    model = aa.nn.Sequential(aa.nn.Linear(8, 16), aa.nn.ReLU(), aa.nn.Linear(16, 4))
    model = model.to("sim:0")
    x = aa.randn(5, 8, device="sim:0")
    loss = aa.nn.functional.cross_entropy(model(x), aa.tensor([0, 1, 2, 3, 0], device="sim:0"))
    s = aa.Stream("sim:0")
    s.wait_stream(aa.current_stream("sim:0"))
    with aa.stream(s):
        side = (model[0].weight * 2).sum()
    aa.current_stream("sim:0").wait_stream(s)
    before = sim_world.host_syncs
    (loss + side).backward()
    assert sim_world.host_syncs == before
    assert model[0].weight.grad is not None


def test_the_repros_of_issue_28_are_correct_every_run():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    try:
        import gpu_repros  # noqa: PLC0415 - a script beside the tests, not a package module
    finally:
        sys.path.pop(0)
    assert gpu_repros.main(["--device", "sim", "--log2-size", "10", "--runs", "3"]) == 0
