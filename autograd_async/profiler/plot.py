"""A PNG timeline of a trace: one lane per track, slices as bars, handoffs as arrows.

matplotlib is an optional dependency (`pip install 'autograd-async[plot]'`), imported only when a
plot is drawn, and only through its object API (no pyplot), so no global backend state changes.
"""

from __future__ import annotations

import os
from typing import Any

from autograd_async.profiler.summary import slices_by_track, track_names

# One colour per slice category; unknown categories get grey.
_CAT_COLORS = {
    "backward": "#4C72B0",
    "forward": "#55A868",
    "caller": "#C9C9C9",
    "gpu": "#DD8452",
}
_OTHER_COLOR = "#8C8C8C"
_ARROW_COLOR = "#C44E52"


def plot_timeline(
    trace: dict[str, Any],
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    width_in: float = 14.0,
    dpi: int = 100,
) -> None:
    """Draw the trace's tracks as lanes of bars with handoff arrows and save a PNG at `path`."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError(
            "plotting needs matplotlib; install it with `pip install 'autograd-async[plot]'`"
        ) from e

    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = track_names(events)
    by_track = slices_by_track(events, names)
    lanes = list(by_track)
    lane_of = {name: i for i, name in enumerate(lanes)}
    starts = [s.ts for slices in by_track.values() for s in slices]
    ends = [s.end for slices in by_track.values() for s in slices]
    t0, t1 = min(starts, default=0.0), max(ends, default=1.0)
    # Milliseconds read better once the trace is longer than one.
    scale, unit = (1e-3, "ms") if t1 - t0 >= 1000 else (1.0, "us")

    fig = Figure(figsize=(width_in, 1.5 + 0.55 * max(1, len(lanes))), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    # A microsecond node in a second-long trace is narrower than a pixel; drawn at least this wide,
    # it still shows where it ran.
    min_width = (t1 - t0) * scale * 5e-4
    for name, slices in by_track.items():
        y = lane_of[name]
        bars = [((s.ts - t0) * scale, max(s.dur * scale, min_width)) for s in slices]
        colors = [_CAT_COLORS.get(s.cat, _OTHER_COLOR) for s in slices]
        # Outlines separate a few slices but turn thousands into a black band.
        edge = 0.2 if len(slices) <= 200 else 0.0
        ax.broken_barh(bars, (y - 0.35, 0.7), facecolors=colors, edgecolor="black", linewidth=edge)

    xs, ys, dxs, dys = _arrows(events, names, lane_of, t0, scale)
    if xs:
        ax.quiver(xs, ys, dxs, dys, angles="xy", scale_units="xy", scale=1, width=0.0015,
                  color=_ARROW_COLOR, zorder=3)

    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(max(1, len(lanes)) - 0.5, -0.5)  # first track on top, as viewers show it
    ax.set_xlim(0, max((t1 - t0) * scale, 1e-9))
    ax.set_xlabel(f"time since trace start ({unit})")
    ax.grid(axis="x", linewidth=0.3)
    cats = sorted({s.cat for slices in by_track.values() for s in slices})
    handles = [Patch(color=_CAT_COLORS.get(c, _OTHER_COLOR), label=c) for c in cats]
    if xs:
        handles.append(Patch(color=_ARROW_COLOR, label=f"handoff ({len(xs)})"))
    if handles:
        # Outside the axes, so it never hides a slice.
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize="small")
    ax.set_title(title or "autograd_async timeline")
    fig.tight_layout()
    fig.savefig(os.fspath(path), format="png")


def _arrows(
    events: list[dict[str, Any]],
    names: dict[tuple[Any, Any], str],
    lane_of: dict[str, int],
    t0: float,
    scale: float,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Arrow tails and vectors, one per flow s/f pair whose tracks are both drawn."""
    tails: dict[tuple[Any, Any, Any], tuple[float, int]] = {}
    for ev in events:
        if ev.get("ph") == "s":
            lane = lane_of.get(names.get((ev.get("pid"), ev.get("tid")), ""))
            if lane is not None:
                tails[(ev.get("cat"), ev.get("name"), ev.get("id"))] = (float(ev["ts"]), lane)
    xs: list[float] = []
    ys: list[float] = []
    dxs: list[float] = []
    dys: list[float] = []
    for ev in events:
        if ev.get("ph") != "f":
            continue
        tail = tails.get((ev.get("cat"), ev.get("name"), ev.get("id")))
        lane = lane_of.get(names.get((ev.get("pid"), ev.get("tid")), ""))
        if tail is None or lane is None:
            continue
        xs.append((tail[0] - t0) * scale)
        ys.append(tail[1])
        dxs.append((float(ev["ts"]) - tail[0]) * scale)
        dys.append(lane - tail[1])
    return xs, ys, dxs, dys
