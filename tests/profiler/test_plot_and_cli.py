"""PNG timeline and the `python -m autograd_async.profiler` command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autograd_async.profiler import export_chrome_trace, load_trace, plot_timeline
from autograd_async.profiler.__main__ import main

from .synthetic import backward_events, gpu_events

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "backward.json"
    export_chrome_trace(backward_events() + gpu_events(), path)
    return path


def _check_png(path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    pixels = image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 0 and pixels.shape[1] > 0


def test_plot_writes_a_png(trace_file, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "timeline.png"
    plot_timeline(load_trace(trace_file), out, title="test")
    _check_png(out)


def test_plot_of_an_empty_trace(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "empty.png"
    plot_timeline({"traceEvents": []}, out)
    _check_png(out)


def test_plot_without_matplotlib_says_how_to_install(trace_file, tmp_path, monkeypatch):
    # a None entry in sys.modules makes the import fail, as if matplotlib were not installed
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match="autograd-async\\[plot\\]"):
        plot_timeline(load_trace(trace_file), tmp_path / "x.png")


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autograd_async.profiler", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_summary(trace_file):
    result = _run_cli("summary", str(trace_file))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "TanhBackward0" in out and "Busy share" in out and "Critical path: 1.900us" in out


def test_cli_plot(trace_file, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "timeline.png"
    result = _run_cli("plot", str(trace_file), "-o", str(out))
    assert result.returncode == 0, result.stderr
    _check_png(out)


def test_cli_reports_an_unreadable_trace(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert main(["summary", str(bad)]) == 2
    assert "cannot read trace" in capsys.readouterr().err


def test_cli_needs_a_subcommand():
    result = _run_cli()
    assert result.returncode != 0 and "summary" in result.stderr


def _slices_trace() -> dict:
    """One track: a wide range holding a wide op and a 1 us op, then a second wide op."""
    meta = [
        {
            "name": "thread_name",
            "ph": "M",
            "ts": 0,
            "pid": 1,
            "tid": 1,
            "args": {"name": "MainThread"},
        }
    ]

    def x(name, ts, dur, cat):
        return {
            "name": name,
            "cat": cat,
            "ph": "X",
            "ts": ts,
            "dur": dur,
            "pid": 1,
            "tid": 1,
            "args": {},
        }

    return {
        "traceEvents": meta
        + [
            x("train step", 0, 600, "user_annotation"),
            x("LinearBackward0 wide", 10, 500, "forward"),
            x("tiny op", 520, 1, "forward"),
            x("second wide op", 700, 300, "backward"),
        ]
    }


def test_plot_labels_the_slices_wide_enough_for_their_name():
    pytest.importorskip("matplotlib")
    from autograd_async.profiler.plot import draw_timeline

    fig = draw_timeline(_slices_trace())
    (ax,) = fig.axes
    labels = {t.get_text(): t for t in ax.texts}
    assert {"train step", "LinearBackward0 wide", "second wide op"} <= set(labels)
    assert "tiny op" not in labels and not any(name.startswith("tin") for name in labels)
    # every label lies inside the bar it names, in pixels as drawn
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    for name, start, dur in (
        ("train step", 0, 600),
        ("LinearBackward0 wide", 10, 500),
        ("second wide op", 700, 300),
    ):
        box = labels[name].get_window_extent(renderer)
        # the trace lasts 1 ms, so the axis is in ms
        left, right = to_px((start / 1e3, 0))[0], to_px(((start + dur) / 1e3, 0))[0]
        assert left < box.x0 and box.x1 < right, name
    # the nested op sits below the range that holds it, in the same lane
    assert labels["train step"].get_position()[1] < labels["LinearBackward0 wide"].get_position()[1]


def test_nesting_depths_and_label_fitting():
    from autograd_async.profiler.plot import fit_label, nesting_depths
    from autograd_async.profiler.summary import TraceSlice

    def s(ts, dur):
        return TraceSlice("n", "forward", "t", ts, dur)

    # a range, two ops in it, one op in the second, one starting in the second and outlasting it,
    # then a new root
    assert nesting_depths([s(0, 100), s(10, 20), s(40, 50), s(45, 10), s(80, 40), s(200, 5)]) == [
        0,
        1,
        1,
        2,
        2,
        0,
    ]

    def width(text):  # 6 px a character
        return 6.0 * len(text)

    assert fit_label("SumBackward0", 200, width) == "SumBackward0"
    assert fit_label("SumBackward0", 50, width) == "SumBac…"
    assert fit_label("SumBackward0", 20, width) is None
