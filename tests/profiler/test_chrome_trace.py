"""Chrome trace export: format validity, tracks, slices, flows, round trips."""

from __future__ import annotations

import gzip
import json
from collections import Counter

from autograd_async.engine.trace_events import CallerAwait, Handoff, NodeRun
from autograd_async.profiler import export_chrome_trace, load_trace, to_chrome_trace

from .synthetic import (
    CALLER,
    backward_events,
    check_trace_format,
    enclosing,
    gpu_events,
    handoff,
    node,
    track_of,
)


def _by_ph(trace, ph):
    return [ev for ev in trace["traceEvents"] if ev["ph"] == ph]


def test_trace_is_valid_trace_event_json():
    trace = to_chrome_trace(backward_events() + gpu_events())
    check_trace_format(trace)
    assert trace["displayTimeUnit"] == "ns"


def test_one_track_per_device_worker_named_by_device_in_order():
    trace = to_chrome_trace(backward_events() + gpu_events())
    names = {
        ev["tid"]: ev["args"]["name"] for ev in _by_ph(trace, "M") if ev["name"] == "thread_name"
    }
    assert sorted(names.values()) == sorted(
        ["MainThread", "cpu", "sim:0", "sim:1", "cuda:0", "cuda:0 stream"]
    )
    order = {
        ev["tid"]: ev["args"]["sort_index"]
        for ev in _by_ph(trace, "M")
        if ev["name"] == "thread_sort_index"
    }
    by_order = [names[tid] for tid in sorted(order, key=order.get)]
    assert by_order == ["MainThread", "cpu", "sim:0", "sim:1", "cuda:0", "cuda:0 stream"]
    process = [ev for ev in _by_ph(trace, "M") if ev["name"] == "process_name"]
    assert len(process) == 1 and process[0]["args"]["name"]


def test_one_slice_per_node_run_with_args_on_its_device_track():
    events = backward_events()
    trace = to_chrome_trace(events)
    runs = [ev for ev in events if isinstance(ev, NodeRun)]
    slices = [ev for ev in _by_ph(trace, "X") if ev["cat"] == "backward"]
    assert len(slices) == len(runs)
    per_device = Counter(r.device for r in runs)
    for device, n in per_device.items():
        tid = track_of(trace, device)
        assert sum(1 for s in slices if s["tid"] == tid) == n
    tanh = next(s for s in slices if s["name"] == "TanhBackward0")
    assert tanh["args"]["sequence_nr"] == 103 and tanh["args"]["task_id"] == 7
    assert tanh["args"]["input_shapes"] == [[4]]
    assert tanh["args"]["output_shapes"] == [[4], None]
    # microseconds since the earliest record (the first forward op at 0 ns)
    assert tanh["ts"] == 1.5 and tanh["dur"] == 1.0


def test_one_flow_pair_per_handoff_bound_inside_producer_and_consumer():
    events = backward_events()
    trace = to_chrome_trace(events)
    handoffs = [ev for ev in events if isinstance(ev, Handoff)]
    starts, finishes = _by_ph(trace, "s"), _by_ph(trace, "f")
    assert len(starts) == len(finishes) == len(handoffs)
    for s in starts:
        f = next(f for f in finishes if f["id"] == s["id"])
        assert (s["cat"], s["name"]) == (f["cat"], f["name"])
        assert f["bp"] == "e"
        src, dst = enclosing(trace, s), enclosing(trace, f)
        assert len(src) == 1 and len(dst) == 1, "each end must fall inside exactly one slice"
        src_dev, dst_dev = s["name"].split(" -> ")
        assert src[0]["args"]["device"] == src_dev and dst[0]["args"]["device"] == dst_dev
        # strictly inside, so no viewer binds it to the neighbouring slice
        assert src[0]["ts"] < s["ts"] < src[0]["ts"] + src[0]["dur"]
        assert dst[0]["ts"] < f["ts"] < dst[0]["ts"] + dst[0]["dur"]
    first = next(s for s in starts if s["name"] == "cpu -> sim:0")
    assert enclosing(trace, first)[0]["name"] == "ToCopyBackward0"
    assert trace["otherData"]["unmatched_handoffs"] == 0


def test_caller_await_and_forward_ops_on_the_caller_track():
    trace = to_chrome_trace(backward_events(with_forward=True))
    tid = track_of(trace, "MainThread")
    mine = [ev for ev in _by_ph(trace, "X") if ev["tid"] == tid]
    assert Counter(ev["cat"] for ev in mine) == {"forward": 3, "caller": 1}
    await_ = next(ev for ev in mine if ev["cat"] == "caller")
    # a blocking backward() waits without awaiting: its slice says so
    assert await_["name"] == "backward (blocking)" and await_["args"]["task_id"] == 7


def test_gpu_spans_on_stream_track():
    trace = to_chrome_trace(gpu_events())
    tid = track_of(trace, "cuda:0 stream")
    spans = [ev for ev in _by_ph(trace, "X") if ev["cat"] == "gpu"]
    assert len(spans) == 2 and all(ev["tid"] == tid for ev in spans)
    assert tid != track_of(trace, "cuda:0")


def test_partially_overlapping_awaits_go_to_a_second_lane():
    # two backward_async calls gathered on one loop: their awaits overlap without nesting
    events = [
        CallerAwait(1, CALLER, "MainThread", "backward_async", 0, 1000),
        CallerAwait(2, CALLER, "MainThread", "backward_async", 500, 1500),
        CallerAwait(3, CALLER, "MainThread", "backward_async", 100, 200),  # nested: same lane
    ]
    trace = to_chrome_trace(events)
    check_trace_format(trace)
    lane1, lane2 = track_of(trace, "MainThread"), track_of(trace, "MainThread #2")
    tids = {ev["args"]["task_id"]: ev["tid"] for ev in _by_ph(trace, "X")}
    assert tids == {1: lane1, 3: lane1, 2: lane2}


def test_handoff_to_a_missing_node_is_counted_not_drawn():
    a = node("cpu", 10, "MulBackward0", 1, 0, 100)
    ghost = node("sim:0", 20, "Ghost", 2, 0, 0)
    trace = to_chrome_trace([a, handoff(a, ghost, 50, 60)])
    check_trace_format(trace)
    assert not _by_ph(trace, "s") and not _by_ph(trace, "f")
    assert trace["otherData"]["unmatched_handoffs"] == 1


def test_handoff_to_the_caller_lands_in_its_await():
    a = node("sim:0", 20, "MulBackward0", 1, 100, 200)
    events = [
        a,
        CallerAwait(a.task_id, CALLER, "MainThread", "grad", 0, 400),
        Handoff(a.task_id, "sim:0", "cpu", a.node_id, 999, 150, 250, 20, CALLER),
    ]
    trace = to_chrome_trace(events)
    f = _by_ph(trace, "f")[0]
    assert f["tid"] == track_of(trace, "MainThread")
    assert enclosing(trace, f)[0]["cat"] == "caller"


def test_unknown_records_are_skipped_and_counted():
    trace = to_chrome_trace([("not", "a", "record"), *backward_events()])
    check_trace_format(trace)
    assert trace["otherData"]["ignored_events"] == 1


def test_empty_trace_is_still_valid():
    trace = to_chrome_trace([])
    check_trace_format(trace)
    assert not _by_ph(trace, "X")


def test_export_and_load_round_trip(tmp_path):
    events = backward_events()
    path = tmp_path / "t.json"
    export_chrome_trace(events, path)
    assert json.loads(path.read_text())["traceEvents"]
    loaded = load_trace(path)
    assert loaded["traceEvents"] == to_chrome_trace(events)["traceEvents"]
    gz = tmp_path / "t.json.gz"
    export_chrome_trace(events, gz)
    with gzip.open(gz, "rt") as f:
        json.load(f)
    assert load_trace(gz)["traceEvents"] == loaded["traceEvents"]


def test_load_trace_accepts_the_array_form_and_rejects_other_json(tmp_path):
    path = tmp_path / "array.json"
    events = to_chrome_trace(backward_events())["traceEvents"]
    path.write_text(json.dumps(events))
    assert load_trace(path) == {"traceEvents": events}
    bad = tmp_path / "bad.json"
    bad.write_text('{"foo": 1}')
    try:
        load_trace(bad)
    except ValueError as e:
        assert "traceEvents" in str(e)
    else:
        raise AssertionError("load_trace accepted a file without traceEvents")
