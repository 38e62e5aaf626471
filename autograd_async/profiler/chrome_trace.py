"""Engine trace records to Chrome Trace Event JSON (opens in Perfetto and chrome://tracing).

Layout of the trace (one process):

- one track (tid) per thread: each device worker's track is named by its device ("cpu", "sim:0"),
  a caller or forward-recording thread's track by the thread's name; `thread_sort_index` puts
  callers first, then devices in order (cpu, sim:N, cuda:N, each `cuda:N stream` right after its
  worker);
- a complete slice (`ph: "X"`) per node run (cat "backward"), caller wait (cat "caller", named
  "backward (blocking)" for `backward()` and "backward_async (await)" for `backward_async()`),
  forward op (cat "forward"), `record_function` range (cat "user_annotation") and GPU kernel span
  (cat "gpu", on the `cuda:N stream` track);
- a flow arrow per cross-device gradient handoff (cat "handoff"): `ph: "s"` inside the producing
  slice and `ph: "f"`, `bp: "e"` inside the consuming slice, both with the handoff's `id`.

Times are microseconds (floats, nanosecond precision) since the earliest record; the original
`perf_counter_ns` origin is kept in `otherData.t0_ns`.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograd_async.engine.trace_events import (
    CallerAwait,
    CollectiveSpan,
    ForwardOp,
    GpuKernelSpan,
    Handoff,
    NodeRun,
)
from autograd_async.profiler.record_function import UserRange

CAT_BACKWARD = "backward"
CAT_FORWARD = "forward"
CAT_CALLER = "caller"
CAT_USER = "user_annotation"  # PyTorch's category for record_function ranges
CAT_GPU = "gpu"
CAT_HANDOFF = "handoff"
CAT_COMM = "communication"
CAT_BUCKET_FLOW = "bucket_ready"
PROCESS_NAME = "autograd_async"

# Device types in display order; anything unknown sorts after them.
_DEVICE_ORDER = {"cpu": 0, "sim": 1, "cuda": 2}


@dataclass
class _Slice:
    """A slice before it is written out; `tid` is filled in once tracks are laid out."""

    track: tuple[Any, ...]
    start_ns: int
    end_ns: int
    name: str
    cat: str
    args: dict[str, Any]
    tid: int = 0


@dataclass
class _Track:
    """A thread (or GPU stream) whose slices may need several lanes when they overlap."""

    name: str
    sort_key: tuple[Any, ...]
    slices: list[_Slice] = field(default_factory=list)


def caller_slice_name(kind: str) -> str:
    """The name of a caller's wait: `backward_async (await)`, but `backward (blocking)`.

    The sync forms block their thread for the whole pass; only the async forms await.
    """
    return f"{kind} (await)" if kind.endswith("_async") else f"{kind} (blocking)"


def device_sort_key(device: str) -> tuple[int, int, str]:
    """Order devices as cpu, sim:0, sim:1, ..., cuda:0, ...; unknown types last."""
    kind, _, index = device.partition(":")
    order = _DEVICE_ORDER.get(kind, len(_DEVICE_ORDER))
    return (order, int(index) if index.isdigit() else -1, device)


def to_chrome_trace(events: Iterable[Any], *, pid: int | None = None) -> dict[str, Any]:
    """Convert engine trace records (NodeRun, Handoff, ...) into a Chrome Trace Event dict."""
    pid = os.getpid() if pid is None else pid
    tracks: dict[tuple[Any, ...], _Track] = {}
    nodes: dict[tuple[int, int], list[_Slice]] = defaultdict(list)
    awaits: dict[tuple[int, int], list[_Slice]] = defaultdict(list)
    thread_devices: dict[int, set[str]] = defaultdict(set)
    handoffs: list[Handoff] = []
    collectives: list[tuple[CollectiveSpan, _Slice]] = []
    ignored = 0

    def add(key: tuple[Any, ...], name: str, slice_: _Slice) -> None:
        track = tracks.get(key)
        if track is None:
            # Callers keep the order in which they first appear; devices are re-keyed below.
            track = tracks[key] = _Track(name, (0, len(tracks)))
        track.slices.append(slice_)

    for ev in events:
        kind = type(ev)
        if kind is NodeRun:
            key = ("thread", ev.thread_id)
            s = _Slice(
                key,
                ev.start_ns,
                ev.end_ns,
                ev.name,
                CAT_BACKWARD,
                {
                    "name": ev.name,
                    "device": ev.device,
                    "sequence_nr": _signed(ev.sequence_nr),
                    "task_id": ev.task_id,
                    "node_id": ev.node_id,
                    "input_shapes": _shapes(ev.input_shapes),
                    "output_shapes": _shapes(ev.output_shapes),
                },
            )
            add(key, ev.thread_name, s)
            nodes[(ev.task_id, ev.node_id)].append(s)
            thread_devices[ev.thread_id].add(ev.device)
        elif kind is Handoff:
            handoffs.append(ev)
        elif kind is CallerAwait:
            key = ("thread", ev.thread_id)
            s = _Slice(
                key,
                ev.start_ns,
                ev.end_ns,
                caller_slice_name(ev.kind),
                CAT_CALLER,
                {"kind": ev.kind, "task_id": ev.task_id, "thread": ev.thread_name},
            )
            add(key, ev.thread_name, s)
            awaits[(ev.task_id, ev.thread_id)].append(s)
        elif kind is ForwardOp:
            key = ("thread", ev.thread_id)
            add(
                key,
                ev.thread_name,
                _Slice(
                    key,
                    ev.start_ns,
                    ev.end_ns,
                    ev.name,
                    CAT_FORWARD,
                    {
                        "name": ev.name,
                        "thread": ev.thread_name,
                        "sequence_nr": _signed(ev.sequence_nr),
                        "input_shapes": _shapes(ev.input_shapes),
                        "output_shapes": _shapes(ev.output_shapes),
                    },
                ),
            )
        elif kind is UserRange:
            key = ("thread", ev.thread_id)
            args = {"name": ev.name, "thread": ev.thread_name}
            if ev.args is not None:
                args["args"] = ev.args
            add(key, ev.thread_name, _Slice(key, ev.start_ns, ev.end_ns, ev.name, CAT_USER, args))
        elif kind is GpuKernelSpan:
            key = ("stream", ev.device)
            add(
                key,
                f"{ev.device} stream",
                _Slice(
                    key,
                    ev.start_ns,
                    ev.end_ns,
                    ev.name,
                    CAT_GPU,
                    {
                        "name": ev.name,
                        "device": ev.device,
                        "sequence_nr": _signed(ev.sequence_nr),
                        "task_id": ev.task_id,
                        "node_id": ev.node_id,
                    },
                ),
            )
        elif kind is CollectiveSpan:
            key = ("comm", ev.rank)
            s = _Slice(
                key,
                ev.start_ns,
                ev.end_ns,
                ev.name,
                CAT_COMM,
                {
                    "name": ev.name,
                    "group": ev.group,
                    "rank": ev.rank,
                    "bytes": ev.nbytes,
                },
            )
            add(key, f"communication (rank {ev.rank})", s)
            collectives.append((ev, s))
        else:
            ignored += 1  # a record type newer than this exporter; skipped, counted in otherData

    # A thread that ran nodes is a device worker: name it by its device, sort it with the devices.
    for (kind, ident), track in tracks.items():
        if kind == "thread" and thread_devices.get(ident):
            devices = sorted(thread_devices[ident], key=device_sort_key)
            track.name = ",".join(devices)
            track.sort_key = (1, device_sort_key(devices[0]), 0)
        elif kind == "stream":
            track.sort_key = (1, device_sort_key(ident), 1)
        elif kind == "comm":
            track.sort_key = (2, (ident, 0, ""), 0)

    starts = [s.start_ns for t in tracks.values() for s in t.slices]
    starts += [h.sent_ns for h in handoffs]
    t0 = min(starts, default=0)

    def us(t_ns: int) -> float:
        return round((t_ns - t0) / 1000.0, 3)

    trace_events: list[dict[str, Any]] = [
        {
            "name": "process_name",
            "ph": "M",
            "ts": 0,
            "pid": pid,
            "tid": 0,
            "args": {"name": PROCESS_NAME},
        },
    ]
    tid = 0
    for track in sorted(tracks.values(), key=lambda t: t.sort_key):
        for lane, lane_slices in enumerate(_assign_lanes(track.slices)):
            tid += 1
            name = track.name if lane == 0 else f"{track.name} #{lane + 1}"
            trace_events.append(
                {
                    "name": "thread_name",
                    "ph": "M",
                    "ts": 0,
                    "pid": pid,
                    "tid": tid,
                    "args": {"name": name},
                }
            )
            trace_events.append(
                {
                    "name": "thread_sort_index",
                    "ph": "M",
                    "ts": 0,
                    "pid": pid,
                    "tid": tid,
                    "args": {"sort_index": tid},
                }
            )
            for s in lane_slices:
                s.tid = tid

    all_slices = sorted(
        (s for t in tracks.values() for s in t.slices), key=lambda s: (s.start_ns, -s.end_ns)
    )
    for s in all_slices:
        trace_events.append(
            {
                "name": s.name,
                "cat": s.cat,
                "ph": "X",
                "ts": us(s.start_ns),
                "dur": round((s.end_ns - s.start_ns) / 1000.0, 3),
                "pid": pid,
                "tid": s.tid,
                "args": s.args,
            }
        )

    unmatched = 0
    for flow_id, h in enumerate(handoffs, start=1):
        producer = _pick(nodes.get((h.task_id, h.src_node_id)), h.sent_ns)
        consumer = _pick(nodes.get((h.task_id, h.dst_node_id)), h.received_ns)
        if consumer is None:
            # A gradient handed back to the caller (grad()) lands in the caller's await slice.
            consumer = _pick(awaits.get((h.task_id, h.dst_thread_id)), h.received_ns)
        if producer is None or consumer is None:
            unmatched += 1
            continue
        name = f"{h.src_device} -> {h.dst_device}"
        common = {"name": name, "cat": CAT_HANDOFF, "id": flow_id, "pid": pid}
        trace_events.append(
            {
                **common,
                "ph": "s",
                "ts": us(_inside(h.sent_ns, producer)),
                "tid": producer.tid,
                "args": {
                    "task_id": h.task_id,
                    "sent_us": us(h.sent_ns),
                    "received_us": us(h.received_ns),
                },
            }
        )
        trace_events.append(
            {
                **common,
                "ph": "f",
                "bp": "e",
                "ts": us(_inside(h.received_ns, consumer)),
                "tid": consumer.tid,
            }
        )

    # A flow from the gradient accumulation that completed a bucket to the bucket's all_reduce.
    by_node: dict[int, list[_Slice]] = defaultdict(list)
    for (_, node_id), slices in nodes.items():
        by_node[node_id].extend(slices)
    for flow_id, (ev, comm) in enumerate(collectives, start=len(handoffs) + 1):
        producer = _pick(by_node.get(ev.source_node_id), ev.source_ns)
        if producer is None:
            continue
        common = {"name": "bucket ready", "cat": CAT_BUCKET_FLOW, "id": flow_id, "pid": pid}
        trace_events.append(
            {**common, "ph": "s", "ts": us(_inside(ev.source_ns, producer)), "tid": producer.tid}
        )
        trace_events.append(
            {**common, "ph": "f", "bp": "e", "ts": us(comm.start_ns), "tid": comm.tid}
        )

    return {
        "traceEvents": trace_events,
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": "autograd_async.profiler",
            "clock": "time.perf_counter_ns",
            "t0_ns": t0,
            "handoffs": len(handoffs),
            "unmatched_handoffs": unmatched,
            "ignored_events": ignored,
        },
    }


def export_chrome_trace(events: Iterable[Any], path: str | os.PathLike[str]) -> None:
    """Write engine trace records to `path` as Chrome Trace JSON (gzipped when it ends in .gz)."""
    write_trace(to_chrome_trace(events), path)


def write_trace(trace: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a trace dict as JSON to `path` (gzipped when it ends in .gz)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        # default=str: shapes or args from an unexpected backend must not make the export fail.
        json.dump(trace, f, separators=(",", ":"), default=str)


def load_trace(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a Chrome Trace JSON file (object or bare-array form, optionally gzipped) as a dict."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, list):
        return {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{path}: not a Chrome trace (no traceEvents list)")
    return data


def _signed(n: int) -> int:
    """A uint64 sequence number as int64: AccumulateGrad's UINT64_MAX becomes -1.

    JavaScript viewers read JSON numbers as doubles, which cannot hold 2**64 - 1 exactly.
    """
    return n - (1 << 64) if n >= (1 << 63) else n


def _shapes(shapes: Any) -> Any:
    """Shapes as JSON lists; None (no gradient) stays null."""
    if shapes is None:
        return None
    return [None if s is None else [int(d) for d in s] for s in shapes]


def _pick(candidates: list[_Slice] | None, t_ns: int) -> _Slice | None:
    """The candidate slice that covers `t_ns`, else the nearest one in time."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]

    def distance(s: _Slice) -> int:
        return max(s.start_ns - t_ns, t_ns - s.end_ns, 0)

    return min(candidates, key=distance)


def _inside(t_ns: int, s: _Slice) -> int:
    """Clamp `t_ns` strictly inside the slice (1 ns from its edges when it is long enough).

    Flow events bind to the slice that encloses them; a timestamp on a slice's very edge may bind to
    a neighbour, or to nothing, depending on the viewer's tie-breaking.
    """
    pad = 1 if s.end_ns - s.start_ns >= 2 else 0
    return min(max(t_ns, s.start_ns + pad), s.end_ns - pad)


def _assign_lanes(slices: list[_Slice]) -> list[list[_Slice]]:
    """Split a track's slices into lanes in which slices are disjoint or properly nested.

    Trace viewers require that; slices on one thread can overlap partially when a loop interleaves
    awaits (two `backward_async` calls gathered on one loop), and those go to an extra lane.
    """
    lanes: list[list[_Slice]] = []
    open_ends: list[list[int]] = []  # per lane, the end times of slices still open (a stack)
    for s in sorted(slices, key=lambda s: (s.start_ns, -s.end_ns)):
        for lane, stack in enumerate(open_ends):
            while stack and stack[-1] <= s.start_ns:
                stack.pop()
            if not stack or s.end_ns <= stack[-1]:
                stack.append(s.end_ns)
                lanes[lane].append(s)
                break
        else:
            lanes.append([s])
            open_ends.append([s.end_ns])
    return lanes or [[]]
