"""Numbers read off a Chrome trace: key averages, busy share, idle gaps and the critical path.

Works on any trace dict in the Trace Event format (as written by `to_chrome_trace` or read back with
`load_trace`); only complete slices (`ph: "X"`), flow events (`s`/`f`) and `thread_name` metadata
are used. All times are microseconds, as in the trace.

What is computed (see `summarize`):

- **wall time**: from the earliest slice start to the latest slice end, over all tracks.
- **busy time** of a track: the length of the union of its slices (equal to the sum of their
  durations when, as on a device worker, slices never overlap); **busy share** = busy time / wall
  time.
- **idle gaps** of a track: the stretches between consecutive busy intervals of that track, i.e.
  after its first slice starts and before its last one ends (a device that only joins at the end
  of the trace is not reported as idle before it); the longest first.
- **critical path**: the heaviest chain of node executions (slices of cat "backward") in which
  each slice depends on the one before it, weighted by slice duration. A slice depends on the
  slice before it on the same track (a worker runs one node at a time) and on the slice that sent
  it a gradient (a flow arrow, `s` bound to the slice enclosing it, `f` to the enclosing slice
  when `bp` is "e", else to the next slice on its track). Queueing and handoff latency are not on
  it, so the path length is the time the backward pass would take with free handoffs and no
  waiting; wall time well above it means time goes to idling, handoffs or the caller rather than
  to computing.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from autograd_async.profiler.chrome_trace import (
    CAT_BACKWARD,
    CAT_CALLER,
    CAT_FORWARD,
    CAT_GPU,
    CAT_USER,
)
from autograd_async.profiler.key_averages import KeyAverages, format_ns

# Half a nanosecond in microseconds: slices are written with ns precision, so anything closer is
# the same instant up to float rounding.
_EPS_US = 5e-4


@dataclass(frozen=True)
class TraceSlice:
    """One complete (`X`) slice of a trace."""

    name: str
    cat: str
    track: str
    ts: float
    dur: float
    args: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def end(self) -> float:
        """End time in microseconds."""
        return self.ts + self.dur


@dataclass(frozen=True)
class IdleGap:
    """A stretch in which a track ran nothing, between two of its slices."""

    track: str
    start_us: float
    end_us: float

    @property
    def duration_us(self) -> float:
        """Length of the gap in microseconds."""
        return self.end_us - self.start_us


@dataclass
class TrackSummary:
    """Busy time and idle gaps of one track (a device worker, a GPU stream or a caller thread)."""

    name: str
    kind: str  # "device" (ran backward nodes), "gpu" (kernel spans) or "host" (caller / forward)
    slices: int
    busy_us: float
    busy_share: float
    idle_gaps: list[IdleGap]  # longest first

    @property
    def idle_us(self) -> float:
        """Total length of the idle gaps."""
        return sum(g.duration_us for g in self.idle_gaps)


@dataclass
class Summary:
    """What `summarize` reads off a trace; `str()` gives the report the CLI prints."""

    key_averages: KeyAverages
    start_us: float
    end_us: float
    tracks: dict[str, TrackSummary]
    handoffs: int
    critical_path: list[TraceSlice]

    @property
    def wall_us(self) -> float:
        """Wall time of the trace: earliest slice start to latest slice end."""
        return self.end_us - self.start_us

    @property
    def devices(self) -> dict[str, TrackSummary]:
        """The tracks of device workers and GPU streams, by track name."""
        return {n: t for n, t in self.tracks.items() if t.kind in ("device", "gpu")}

    @property
    def critical_path_us(self) -> float:
        """Sum of the durations of the slices on the critical path."""
        return sum(s.dur for s in self.critical_path)

    @property
    def critical_path_share(self) -> float:
        """Critical-path length over wall time (0 for an empty trace)."""
        return self.critical_path_us / self.wall_us if self.wall_us > 0 else 0.0

    def format(self, top_gaps: int = 3, row_limit: int | None = 30) -> str:
        """The human-readable report: key averages, busy share, idle gaps, critical path."""
        us = lambda v: format_ns(v * 1000.0)
        n_slices = sum(t.slices for t in self.tracks.values())
        lines = [
            f"Trace: {us(self.wall_us)} wall, {n_slices} slices on {len(self.tracks)} tracks, "
            f"{self.handoffs} cross-device handoffs",
            "",
            self.key_averages.table(row_limit=row_limit),
            "",
            "Busy share per device (busy time / wall time):",
        ]
        devices = self.devices
        width = max((len(n) for n in devices), default=6)
        for name, t in devices.items():
            lines.append(
                f"  {name.ljust(width)}  {us(t.busy_us):>12}  {100 * t.busy_share:5.1f}%"
                f"  slices: {t.slices}"
            )
        if not devices:
            lines.append("  (no device slices)")
        lines.append(f"Longest idle gaps per device (top {top_gaps}, times from trace start):")
        for name, t in devices.items():
            gaps = ", ".join(
                f"{us(g.duration_us)} at {us(g.start_us - self.start_us)}"
                f"..{us(g.end_us - self.start_us)}"
                for g in t.idle_gaps[:top_gaps]
            )
            lines.append(f"  {name.ljust(width)}  {gaps or 'none'}")
        path = self.critical_path
        lines.append(
            f"Critical path: {us(self.critical_path_us)} over {len(path)} node runs = "
            f"{100 * self.critical_path_share:.1f}% of wall time {us(self.wall_us)}"
        )
        if path:
            hops = [path[0].track]
            for s in path[1:]:
                if s.track != hops[-1]:
                    hops.append(s.track)
            lines.append(f"  tracks along it: {' -> '.join(hops)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def summarize(trace: dict[str, Any] | list[dict[str, Any]]) -> Summary:
    """Key averages, busy share, idle gaps and critical path of a trace (see the module doc)."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = track_names(events)
    by_track = slices_by_track(events, names)

    all_slices = [s for slices in by_track.values() for s in slices]
    start = min((s.ts for s in all_slices), default=0.0)
    end = max((s.end for s in all_slices), default=0.0)
    wall = end - start

    tracks: dict[str, TrackSummary] = {}
    for name in by_track:
        slices = by_track[name]
        busy, gaps = busy_and_gaps(slices)
        cats = {s.cat for s in slices}
        kind = "device" if CAT_BACKWARD in cats else "gpu" if CAT_GPU in cats else "host"
        share = min(1.0, busy / wall) if wall > 0 else 0.0
        tracks[name] = TrackSummary(
            name, kind, len(slices), busy, share, sorted(gaps, key=lambda g: -g.duration_us)
        )

    return Summary(
        key_averages=KeyAverages.from_samples(_samples(all_slices)),
        start_us=start,
        end_us=end,
        tracks=tracks,
        handoffs=sum(1 for ev in events if ev.get("ph") == "s"),
        critical_path=_critical_path(events, by_track, names),
    )


def busy_and_gaps(slices: list[TraceSlice]) -> tuple[float, list[IdleGap]]:
    """Union length of the slices of one track and the gaps between its merged intervals."""
    busy = 0.0
    gaps: list[IdleGap] = []
    merged: tuple[float, float] | None = None  # (start, end) of the interval being merged
    for s in sorted(slices, key=lambda s: s.ts):
        if merged is None:
            merged = (s.ts, s.end)
        elif s.ts > merged[1] + _EPS_US:
            busy += merged[1] - merged[0]
            gaps.append(IdleGap(s.track, merged[1], s.ts))
            merged = (s.ts, s.end)
        else:
            merged = (merged[0], max(merged[1], s.end))
    if merged is not None:
        busy += merged[1] - merged[0]
    return busy, gaps


def _critical_path(
    events: list[dict[str, Any]],
    by_track: dict[str, list[TraceSlice]],
    names: dict[tuple[Any, Any], str],
) -> list[TraceSlice]:
    """The heaviest dependency chain of backward slices (see the module docstring), in order."""
    nodes = sorted(
        (s for slices in by_track.values() for s in slices if s.cat == CAT_BACKWARD),
        key=lambda s: (s.ts, -s.dur),  # the order each track's slices are in
    )
    order = {id(s): i for i, s in enumerate(nodes)}
    preds: list[list[int]] = [[] for _ in nodes]
    for slices in by_track.values():
        prev = None
        for s in slices:
            if s.cat != CAT_BACKWARD:
                continue
            if prev is not None:
                preds[order[id(s)]].append(order[id(prev)])
            prev = s

    locator = _SliceLocator(by_track)
    starts: dict[tuple[Any, Any, Any], TraceSlice] = {}
    for ev in events:
        if ev.get("ph") == "s":
            found = locator.enclosing(names[(ev.get("pid"), ev.get("tid"))], float(ev["ts"]))
            if found is not None:
                starts[(ev.get("cat"), ev.get("name"), ev.get("id"))] = found
    for ev in events:
        if ev.get("ph") != "f":
            continue
        src = starts.get((ev.get("cat"), ev.get("name"), ev.get("id")))
        track, ts = names[(ev.get("pid"), ev.get("tid"))], float(ev["ts"])
        dst = locator.enclosing(track, ts) if ev.get("bp") == "e" else locator.next(track, ts)
        if src is None or dst is None or id(src) not in order or id(dst) not in order:
            continue
        i, j = order[id(src)], order[id(dst)]
        if i < j:  # an arrow back in time would be a clock artefact; it cannot be a dependency
            preds[j].append(i)

    best: list[float] = [0.0] * len(nodes)
    via: list[int] = [-1] * len(nodes)
    # Predecessors come earlier in `nodes`, so one pass in that order is a topological DP.
    for j, s in enumerate(nodes):
        pick = -1
        for i in preds[j]:
            if i < j and (pick < 0 or best[i] > best[pick]):
                pick = i
        via[j] = pick
        best[j] = s.dur + (best[pick] if pick >= 0 else 0.0)
    if not nodes:
        return []
    j = max(range(len(nodes)), key=best.__getitem__)
    path = []
    while j >= 0:
        path.append(nodes[j])
        j = via[j]
    return path[::-1]


class _SliceLocator:
    """Finds the slice of a track that encloses, or follows, a timestamp."""

    def __init__(self, by_track: dict[str, list[TraceSlice]]) -> None:
        self._slices = by_track
        self._starts = {t: [s.ts for s in slices] for t, slices in by_track.items()}
        # Running max of slice ends lets `enclosing` stop scanning back once nothing can reach ts.
        self._max_end = {
            t: list(accumulate((s.end for s in slices), max)) for t, slices in by_track.items()
        }

    def enclosing(self, track: str, ts: float) -> TraceSlice | None:
        """The innermost slice of `track` with start <= ts <= end."""
        slices = self._slices.get(track, [])
        max_end = self._max_end.get(track, [])
        j = bisect.bisect_right(self._starts.get(track, []), ts + _EPS_US) - 1
        while j >= 0 and max_end[j] >= ts - _EPS_US:
            if slices[j].end >= ts - _EPS_US:
                return slices[j]
            j -= 1
        return None

    def next(self, track: str, ts: float) -> TraceSlice | None:
        """The first slice of `track` that starts at or after ts."""
        slices = self._slices.get(track, [])
        j = bisect.bisect_left(self._starts.get(track, []), ts - _EPS_US)
        return slices[j] if j < len(slices) else None


def slices_by_track(
    events: list[dict[str, Any]], names: dict[tuple[Any, Any], str] | None = None
) -> dict[str, list[TraceSlice]]:
    """The X slices of a trace grouped by track name (in track order), each sorted by start."""
    names = track_names(events) if names is None else names
    found: dict[str, list[TraceSlice]] = defaultdict(list)
    for ev in events:
        if ev.get("ph") == "X":
            track = names[(ev.get("pid"), ev.get("tid"))]
            found[track].append(
                TraceSlice(
                    str(ev.get("name", "")),
                    str(ev.get("cat", "")),
                    track,
                    float(ev["ts"]),
                    float(ev.get("dur", 0.0)),
                    ev.get("args") or {},
                )
            )
    by_track = {name: found[name] for name in dict.fromkeys(names.values()) if name in found}
    for slices in by_track.values():
        # Longer first among equal starts, so an enclosing slice precedes what it encloses.
        slices.sort(key=lambda s: (s.ts, -s.dur))
    return by_track


def track_names(events: list[dict[str, Any]]) -> dict[tuple[Any, Any], str]:
    """Map (pid, tid) to a unique track name, from thread_name metadata (else "pid/tid")."""
    raw: dict[tuple[Any, Any], str] = {}
    for ev in events:
        if ev.get("ph") == "M" and ev.get("name") == "thread_name":
            raw[(ev.get("pid"), ev.get("tid"))] = str((ev.get("args") or {}).get("name", ""))
    for ev in events:
        key = (ev.get("pid"), ev.get("tid"))
        if ev.get("ph") != "M" and key not in raw:
            raw[key] = f"{key[0]}/{key[1]}"
    counts: dict[str, int] = defaultdict(int)
    for name in raw.values():
        counts[name] += 1
    # Two threads with one name (two processes, a restarted worker) must stay two tracks.
    return {k: (n if counts[n] == 1 else f"{n} [{k[0]}/{k[1]}]") for k, n in raw.items()}


def _samples(slices: list[TraceSlice]) -> list[tuple[str, str, str, int]]:
    """Key-average samples from trace slices, labelled as `profile.key_averages` labels records."""
    kinds = {
        CAT_BACKWARD: "backward",
        CAT_GPU: "gpu",
        CAT_FORWARD: "forward",
        CAT_CALLER: "caller",
        CAT_USER: "user",
    }
    out = []
    for s in slices:
        kind = kinds.get(s.cat, s.cat or "other")
        where = s.args.get("device") or s.args.get("thread") or s.track
        out.append((s.name, str(where), kind, round(s.dur * 1000.0)))
    return out
