"""Profiler for autograd_async's backward pass: Chrome traces, key averages, summaries and plots.

    from autograd_async.profiler import profile

    with profile() as prof:                     # forward ops too; record_forward=False: not
        with record_function("step"):           # a named range of your own code
            loss = model(x).sum()
            loss.backward()
    print(prof.key_averages())
    prof.export_chrome_trace("backward.trace.json")   # open in https://ui.perfetto.dev

Then `python -m autograd_async.profiler summary backward.trace.json` or
`python -m autograd_async.profiler plot backward.trace.json -o timeline.png`.
"""

import os
import sys
from typing import Any

from autograd_async import autograd as _autograd_package
from autograd_async.profiler.chrome_trace import (
    export_chrome_trace,
    load_trace,
    to_chrome_trace,
    write_trace,
)
from autograd_async.profiler.key_averages import KeyAverage, KeyAverages
from autograd_async.profiler.profiling import ProfilerError, key_averages, profile
from autograd_async.profiler.record_function import UserRange, record_function
from autograd_async.profiler.summary import IdleGap, Summary, TraceSlice, TrackSummary, summarize


def plot_timeline(trace: dict[str, Any], path: str | os.PathLike[str], **options: Any) -> None:
    """Draw a PNG timeline of a trace (options: see `autograd_async.profiler.plot`)."""
    # Imported on call, so importing the profiler never needs matplotlib (plot imports it lazily
    # too; this keeps even the plot module out of `import autograd_async.profiler`).
    from autograd_async.profiler.plot import plot_timeline as _plot

    _plot(trace, path, **options)


__all__ = [
    "IdleGap",
    "KeyAverage",
    "KeyAverages",
    "ProfilerError",
    "Summary",
    "TraceSlice",
    "TrackSummary",
    "UserRange",
    "export_chrome_trace",
    "key_averages",
    "load_trace",
    "plot_timeline",
    "profile",
    "record_function",
    "summarize",
    "to_chrome_trace",
    "write_trace",
]

# PyTorch also offers `profile` and `record_function` as `torch.autograd.profiler`: this module
# answers to that name too (`import autograd_async.autograd.profiler` included), installed from
# here, above the autograd package, as higher layers install themselves into lower ones.
sys.modules.setdefault("autograd_async.autograd.profiler", sys.modules[__name__])
setattr(_autograd_package, "profiler", sys.modules[__name__])  # noqa: B010 - installed from above
