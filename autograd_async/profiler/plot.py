"""A PNG timeline of a trace: one lane per track, slices as bars, handoffs as arrows.

Slices nested in others (forward ops inside a `record_function` range) sit one level below them in
their lane, as in a trace viewer; a slice wide enough for text carries its name.

matplotlib is an optional dependency (`pip install 'autograd-async[plot]'`), imported only when a
plot is drawn, and only through its object API (no pyplot), so no global backend state changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from autograd_async.profiler.summary import TraceSlice, slices_by_track, track_names

# One colour per slice category; unknown categories get grey.
_CAT_COLORS = {
    "backward": "#4C72B0",
    "forward": "#55A868",
    "caller": "#C9C9C9",
    "gpu": "#DD8452",
    "user_annotation": "#8172B3",
}
_OTHER_COLOR = "#8C8C8C"
_ARROW_COLOR = "#C44E52"
_DARK_TEXT_ON = {"caller"}  # light bars: black text; the others take white
_LANE_HEIGHT = 0.7
_LABEL_POINTS = 7.0
_LABEL_PAD_PX = 4.0  # room left on both sides of a label, so it never touches a bar's edge


def plot_timeline(
    trace: dict[str, Any],
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    width_in: float = 14.0,
    dpi: int = 100,
) -> None:
    """Draw the trace's tracks as lanes of bars with handoff arrows and save a PNG at `path`."""
    fig = draw_timeline(trace, title=title, width_in=width_in, dpi=dpi)
    fig.savefig(os.fspath(path), format="png")


def draw_timeline(
    trace: dict[str, Any],
    *,
    title: str | None = None,
    width_in: float = 14.0,
    dpi: int = 100,
) -> Any:
    """The timeline as a matplotlib Figure (what `plot_timeline` saves)."""
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
    boxes: list[tuple[TraceSlice, float, float, float, float]] = []  # slice, x, width, y, height
    for name, slices in by_track.items():
        depths = nesting_depths(slices)
        height = _LANE_HEIGHT / (max(depths, default=0) + 1)
        top = lane_of[name] - _LANE_HEIGHT / 2
        # Outlines separate a few slices but turn thousands into a black band.
        edge = 0.2 if len(slices) <= 200 else 0.0
        for depth in sorted(set(depths)):
            level = [s for s, d in zip(slices, depths, strict=True) if d == depth]
            bars = [((s.ts - t0) * scale, max(s.dur * scale, min_width)) for s in level]
            y = top + depth * height
            colors = [_CAT_COLORS.get(s.cat, _OTHER_COLOR) for s in level]
            ax.broken_barh(bars, (y, height), facecolors=colors, edgecolor="black", linewidth=edge)
            boxes += [(s, x, w, y, height) for s, (x, w) in zip(level, bars, strict=True)]

    xs, ys, dxs, dys = _arrows(events, names, lane_of, t0, scale)
    if xs:
        ax.quiver(
            xs,
            ys,
            dxs,
            dys,
            angles="xy",
            scale_units="xy",
            scale=1,
            width=0.0015,
            color=_ARROW_COLOR,
            zorder=3,
        )

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
    _label_slices(fig, ax, boxes)
    return fig


def nesting_depths(slices: list[TraceSlice]) -> list[int]:
    """How many slices of the same track enclose each slice (`slices` sorted by start).

    A slice that starts inside another counts as nested in it even if it ends later (two gathered
    coroutines' ranges interleave that way), so overlapping bars never cover each other.
    """
    depths = []
    open_ends: list[float] = []
    for s in slices:
        while open_ends and open_ends[-1] <= s.ts:
            open_ends.pop()
        depths.append(len(open_ends))
        open_ends.append(s.end)
    return depths


def fit_label(name: str, width_px: float, text_width: Callable[[str], float]) -> str | None:
    """`name`, or its start and an ellipsis, if that fits `width_px`; None below 3 letters."""
    room = width_px - 2 * _LABEL_PAD_PX
    if text_width(name) <= room:
        return name
    if len(name) <= 3 or text_width(name[:3] + "…") > room:
        return None  # most narrow slices of a long trace end here, after one measurement
    for keep in range(len(name) - 1, 2, -1):
        short = name[:keep] + "…"
        if text_width(short) <= room:
            return short
    return None


def _label_slices(
    fig: Any, ax: Any, boxes: list[tuple[TraceSlice, float, float, float, float]]
) -> None:
    """Write each slice's name inside its bar where the bar is wide and tall enough."""
    from matplotlib.font_manager import FontProperties

    renderer = fig.canvas.get_renderer()
    font = FontProperties(size=_LABEL_POINTS)
    widths: dict[str, float] = {}

    def text_width(text: str) -> float:
        if text not in widths:
            widths[text] = renderer.get_text_width_height_descent(text, font, ismath=False)[0]
        return widths[text]

    # Data units to pixels, from the laid-out axes (y is inverted: the first lane is on top).
    extent = ax.get_window_extent()
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    px_per_x = extent.width / abs(x1 - x0)
    px_per_y = extent.height / abs(y1 - y0)
    line_px = _LABEL_POINTS * fig.dpi / 72 * 1.2
    for s, x, width, y, height in boxes:
        if height * px_per_y < line_px:
            continue
        label = fit_label(s.name, width * px_per_x, text_width)
        if label is None:
            continue
        color = "black" if s.cat in _DARK_TEXT_ON else "white"
        ax.text(
            x + width / 2,
            y + height / 2,
            label,
            ha="center",
            va="center",
            color=color,
            fontsize=_LABEL_POINTS,
            clip_on=True,
            in_layout=False,
        )


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
