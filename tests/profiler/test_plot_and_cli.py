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
    return subprocess.run([sys.executable, "-m", "autograd_async.profiler", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


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
