"""Summary numbers on hand-made traces with known answers."""

from __future__ import annotations

import pytest

from autograd_async.profiler import KeyAverages, summarize, to_chrome_trace

from .synthetic import backward_events, gpu_events, handmade_trace


def test_busy_time_is_the_sum_of_slice_durations_per_track():
    trace = to_chrome_trace(backward_events() + gpu_events())
    summary = summarize(trace)
    names = {
        ev["tid"]: ev["args"]["name"]
        for ev in trace["traceEvents"]
        if ev["ph"] == "M" and ev["name"] == "thread_name"
    }
    sums: dict[str, float] = {}
    for ev in trace["traceEvents"]:
        if ev["ph"] == "X":
            sums[names[ev["tid"]]] = sums.get(names[ev["tid"]], 0.0) + ev["dur"]
    for name, track in summary.devices.items():
        assert track.busy_us == pytest.approx(sums[name])
        assert 0.0 <= track.busy_share <= 1.0
    assert summary.devices["cpu"].busy_us == pytest.approx(0.8)
    assert summary.devices["cpu"].slices == 4


def test_wall_and_busy_share_on_handmade_trace():
    summary = summarize(handmade_trace())
    assert (summary.start_us, summary.end_us, summary.wall_us) == (0.0, 45.0, 45.0)
    a = summary.tracks["A"]
    assert a.kind == "device"
    assert a.busy_us == pytest.approx(18.0)  # 10 + 3 + 5
    assert a.busy_share == pytest.approx(18.0 / 45.0)
    assert summary.tracks["C"].busy_share == pytest.approx(25.0 / 45.0)
    host = summary.tracks["1/4"]  # a tid without thread_name metadata gets "pid/tid"
    assert host.kind == "host" and "1/4" not in summary.devices


def test_idle_gaps_longest_first_with_times():
    summary = summarize(handmade_trace())
    gaps = summary.tracks["A"].idle_gaps
    assert [(g.start_us, g.end_us) for g in gaps] == [(15.0, 40.0), (10.0, 12.0)]
    assert [g.duration_us for g in gaps] == [25.0, 2.0]
    assert summary.tracks["A"].idle_us == pytest.approx(27.0)
    assert [(g.start_us, g.end_us) for g in summary.tracks["B"].idle_gaps] == [(31.0, 32.0)]
    assert summary.tracks["C"].idle_gaps == []


def test_idle_gaps_ignore_back_to_back_and_nested_slices():
    summary = summarize(to_chrome_trace(backward_events()))
    # cpu: Sum 1.0-1.2, ToCopy 1.2-1.3 (back to back), Mul 3.0-3.4, Accumulate 3.4-3.5
    gaps = summary.devices["cpu"].idle_gaps
    assert [(round(g.start_us, 3), round(g.end_us, 3)) for g in gaps] == [(1.3, 3.0)]
    # caller track: forward ops then an await; the gap is between them only
    host = summary.tracks["MainThread"]
    assert [(round(g.start_us, 3), round(g.end_us, 3)) for g in host.idle_gaps] == [(0.2, 0.9)]


def test_critical_path_follows_flows_and_track_order():
    summary = summarize(handmade_trace())
    assert [s.name for s in summary.critical_path] == ["a1", "b1", "a3"]
    assert summary.critical_path_us == pytest.approx(35.0)
    assert summary.critical_path_share == pytest.approx(35.0 / 45.0)


def test_critical_path_binds_f_without_bp_to_the_next_slice():
    summary = summarize(handmade_trace(next_slice_flow=True))
    assert [s.name for s in summary.critical_path] == ["a1", "b1", "b2", "a3"]
    assert summary.critical_path_us == pytest.approx(36.0)


def test_critical_path_without_flows_is_the_busiest_track():
    trace = handmade_trace()
    trace["traceEvents"] = [ev for ev in trace["traceEvents"] if ev["ph"] not in ("s", "f")]
    summary = summarize(trace)
    assert [s.name for s in summary.critical_path] == ["c1"]
    assert summary.critical_path_us == pytest.approx(25.0)


def test_critical_path_of_exported_backward():
    summary = summarize(to_chrome_trace(backward_events()))
    names = [(s.track, s.name) for s in summary.critical_path]
    assert names == [
        ("cpu", "SumBackward0"),
        ("cpu", "ToCopyBackward0"),
        ("sim:0", "TanhBackward0"),
        ("sim:0", "ToCopyBackward0"),
        ("cpu", "MulBackward0"),
        ("cpu", "AccumulateGrad"),
    ]
    assert summary.critical_path_us == pytest.approx(1.9)
    assert summary.critical_path_us <= summary.wall_us
    assert summary.handoffs == 2


def test_summary_key_averages_match_the_slices():
    summary = summarize(handmade_trace())
    assert isinstance(summary.key_averages, KeyAverages)
    row = summary.key_averages.find("b1")
    assert (row.device, row.kind, row.count, row.total_ns) == ("B", "backward", 1, 20_000)


def test_summary_report_mentions_every_part():
    text = str(summarize(to_chrome_trace(backward_events())))
    for needle in (
        "TanhBackward0",
        "Busy share",
        "sim:0",
        "idle gaps",
        "Critical path: 1.900us",
        "cpu -> sim:0 -> cpu",
    ):
        assert needle in text


def test_empty_trace_summary():
    summary = summarize({"traceEvents": []})
    assert summary.wall_us == 0 and summary.critical_path == [] and summary.tracks == {}
    assert "Critical path" in str(summary)


def test_busy_time_counts_nested_and_overlapping_slices_once():
    events = [
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": 1, "tid": 1, "args": {"name": "T"}}
    ]
    for ts, dur in [(0, 10), (2, 3), (8, 4), (20, 5)]:  # nested, overlapping, then apart
        events.append(
            {"name": "x", "cat": "backward", "ph": "X", "ts": ts, "dur": dur, "pid": 1, "tid": 1}
        )
    track = summarize({"traceEvents": events}).tracks["T"]
    assert track.busy_us == pytest.approx(17.0)  # [0, 12] and [20, 25]
    assert [(g.start_us, g.end_us) for g in track.idle_gaps] == [(12.0, 20.0)]
