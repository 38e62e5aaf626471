"""Hand-made engine records and trace dicts with known answers; a Trace Event format checker."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from autograd_async.engine.trace_events import (
    CallerAwait,
    ForwardOp,
    GpuKernelSpan,
    Handoff,
    NodeRun,
)

CALLER, CPU, SIM0, SIM1 = 1, 10, 20, 30
TASK = 7


def node(
    device: str, tid: int, name: str, node_id: int, start: int, end: int, task: int = TASK
) -> NodeRun:
    """A NodeRun with (4,)-shaped gradients in and out."""
    return NodeRun(
        device,
        tid,
        f"worker-{device}",
        name,
        node_id,
        task,
        node_id,
        start,
        end,
        ((4,),),
        ((4,), None),
    )


def handoff(src: NodeRun, dst: NodeRun, sent: int, received: int) -> Handoff:
    """A gradient sent from `src`'s node to `dst`'s node."""
    return Handoff(
        src.task_id,
        src.device,
        dst.device,
        src.node_id,
        dst.node_id,
        sent,
        received,
        src.thread_id,
        dst.thread_id,
    )


def backward_events(with_forward: bool = True) -> list[Any]:
    """`(x * 2).to("sim:0").tanh().to("cpu").sum()` backward, plus a parallel node on sim:1.

    Times in ns. Critical path: Sum, ToCopy (cpu) -> Tanh, ToCopy (sim:0) -> Mul, Accumulate (cpu)
    = 200 + 100 + 1000 + 100 + 400 + 100 = 1900 ns.
    """
    n1 = node("cpu", CPU, "SumBackward0", 101, 1000, 1200)
    n2 = node("cpu", CPU, "ToCopyBackward0", 102, 1200, 1300)
    n3 = node("sim:0", SIM0, "TanhBackward0", 103, 1500, 2500)
    n4 = node("sim:0", SIM0, "ToCopyBackward0", 104, 2500, 2600)
    n5 = node("cpu", CPU, "MulBackward0", 105, 3000, 3400)
    n6 = node("cpu", CPU, "AccumulateGrad", 106, 3400, 3500)
    n7 = node("sim:1", SIM1, "ExpBackward0", 107, 1100, 1900)
    events: list[Any] = []
    if with_forward:
        events += [
            ForwardOp(CALLER, "MainThread", "mul", 1, 0, 100, ((4,), ()), ((4,),)),
            ForwardOp(CALLER, "MainThread", "to", 2, 100, 150, ((4,),), ((4,),)),
            ForwardOp(CALLER, "MainThread", "tanh", 3, 150, 200, ((4,),), ((4,),)),
        ]
    events += [
        n1,
        n2,
        n7,
        # sent after ToCopy's end: the exporter must still put the arrow's tail inside the slice
        handoff(n2, n3, 1310, 1400),
        n3,
        n4,
        handoff(n4, n5, 2590, 2700),
        n5,
        n6,
        CallerAwait(TASK, CALLER, "MainThread", "backward", 900, 3600),
    ]
    return events


def gpu_events() -> list[Any]:
    """Two cuda:0 node runs with their kernel spans."""
    a = node("cuda:0", 40, "MulBackward0", 201, 100, 300)
    b = node("cuda:0", 40, "TanhBackward0", 202, 300, 500)
    return [
        a,
        GpuKernelSpan("cuda:0", a.name, a.sequence_nr, a.task_id, a.node_id, 150, 280),
        b,
        GpuKernelSpan("cuda:0", b.name, b.sequence_nr, b.task_id, b.node_id, 320, 420),
    ]


def _meta(tid: int, name: str) -> list[dict[str, Any]]:
    return [
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": 1, "tid": tid, "args": {"name": name}}
    ]


def _x(tid: int, name: str, ts: float, dur: float, cat: str = "backward") -> dict[str, Any]:
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": ts,
        "dur": dur,
        "pid": 1,
        "tid": tid,
        "args": {"device": {1: "A", 2: "B", 3: "C"}.get(tid, "?")},
    }


def _flow(
    fid: int, src_tid: int, src_ts: float, dst_tid: int, dst_ts: float, bind_enclosing: bool = True
) -> list[dict[str, Any]]:
    s = {
        "name": "h",
        "cat": "handoff",
        "ph": "s",
        "id": fid,
        "ts": src_ts,
        "pid": 1,
        "tid": src_tid,
    }
    f = {
        "name": "h",
        "cat": "handoff",
        "ph": "f",
        "id": fid,
        "ts": dst_ts,
        "pid": 1,
        "tid": dst_tid,
    }
    if bind_enclosing:
        f["bp"] = "e"
    return [s, f]


def handmade_trace(next_slice_flow: bool = False) -> dict[str, Any]:
    """Three tracks A, B, C (times in us) whose critical path is a1 -> b1 -> a3 = 35 us.

    A: a1 [0, 10], a2 [12, 15], a3 [40, 45]; B: b1 [11, 31], b2 [32, 33]; C: c1 [5, 30].
    Flows a1 -> b1 and b1 -> a3. With `next_slice_flow`, one more flow from b2 to the next slice on
    A after ts 34 (a3, bound without bp "e"): the path becomes a1 -> b1 -> b2 -> a3 = 36 us.
    """
    events = _meta(1, "A") + _meta(2, "B") + _meta(3, "C")
    events += [
        _x(1, "a1", 0, 10),
        _x(1, "a2", 12, 3),
        _x(1, "a3", 40, 5),
        _x(2, "b1", 11, 20),
        _x(2, "b2", 32, 1),
        _x(3, "c1", 5, 25),
        # a host slice: not a node run, so never on the critical path
        _x(4, "backward (blocking)", 0, 45, cat="caller"),
    ]
    events += _flow(1, 1, 9.5, 2, 11.0) + _flow(2, 2, 30.0, 1, 40.5)
    if next_slice_flow:
        events += _flow(3, 2, 32.5, 1, 34.0, bind_enclosing=False)
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def check_trace_format(trace: dict[str, Any]) -> None:
    """Assert that `trace` is valid Trace Event JSON as Perfetto and chrome://tracing read it."""
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    json.loads(json.dumps(trace, allow_nan=False))  # plain JSON, no NaN/inf
    events = trace["traceEvents"]
    pids = {ev["pid"] for ev in events}
    assert len(pids) == 1, f"one process expected, got pids {pids}"
    named = {}
    flows: Counter[tuple[Any, Any, Any, str]] = Counter()
    for ev in events:
        for key in ("name", "ph", "ts", "pid", "tid"):
            assert key in ev, f"{key} missing in {ev}"
        assert isinstance(ev["ts"], int | float) and ev["ts"] >= 0
        ph = ev["ph"]
        assert ph in ("M", "X", "s", "f"), ev
        if ph == "M":
            if ev["name"] in ("thread_name", "process_name"):
                assert isinstance(ev["args"]["name"], str) and ev["args"]["name"]
            if ev["name"] == "thread_name":
                assert ev["tid"] not in named, f"tid {ev['tid']} named twice"
                named[ev["tid"]] = ev["args"]["name"]
            if ev["name"] == "thread_sort_index":
                assert isinstance(ev["args"]["sort_index"], int)
        elif ph == "X":
            assert isinstance(ev["dur"], int | float) and ev["dur"] >= 0
        else:
            assert "id" in ev and "cat" in ev, ev
            if ph == "f":
                assert ev.get("bp") == "e", ev
            flows[(ev["cat"], ev["name"], ev["id"], ph)] += 1
    assert any(ev["ph"] == "M" and ev["name"] == "process_name" for ev in events)
    for ev in events:
        if ev["ph"] != "M":
            assert ev["tid"] in named, f"tid {ev['tid']} has no thread_name"
    for (cat, name, fid, ph), n in flows.items():
        assert n == 1, f"flow {fid} has {n} {ph} events"
        other = "f" if ph == "s" else "s"
        assert flows[(cat, name, fid, other)] == 1, f"flow {fid} has no {other}"


def track_of(trace: dict[str, Any], name: str) -> int:
    """The tid of the track called `name`."""
    tids = [
        ev["tid"]
        for ev in trace["traceEvents"]
        if ev["ph"] == "M" and ev["name"] == "thread_name" and ev["args"]["name"] == name
    ]
    assert len(tids) == 1, f"{len(tids)} tracks named {name!r}"
    return tids[0]


def enclosing(trace: dict[str, Any], ev: dict[str, Any]) -> list[dict[str, Any]]:
    """The X slices on `ev`'s track whose [ts, ts + dur] contains `ev`'s ts."""
    eps = 5e-4
    return [
        x
        for x in trace["traceEvents"]
        if x["ph"] == "X"
        and x["tid"] == ev["tid"]
        and x["ts"] - eps <= ev["ts"] <= x["ts"] + x["dur"] + eps
    ]
