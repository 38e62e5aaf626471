"""`autograd.profiler` is the profiler under PyTorch's older name, import statement included."""

from __future__ import annotations

import importlib

import autograd_async as aa


def test_autograd_profiler_is_the_profiler():
    legacy = importlib.import_module("autograd_async.autograd.profiler")
    assert legacy is aa.profiler and aa.autograd.profiler.profile is aa.profiler.profile
    with aa.autograd.profiler.profile() as prof:
        with aa.autograd.profiler.record_function("step"):
            (aa.randn(3, 3, requires_grad=True) @ aa.randn(3, 3)).sum().backward()
    assert len(prof.key_averages()) > 0
