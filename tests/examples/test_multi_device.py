"""examples/multi_device.py: pipelined gradients equal a single-device run; the work overlaps."""

from __future__ import annotations

import numpy as np
import pytest
from multi_device import (
    TwoStageMLP,
    blas_threads,
    check_gradients,
    gradients,
    merged,
    overlap_seconds,
    parse_args,
    pick_devices,
    pipelined_step,
    run,
    sequential_step,
    split,
    synthetic_batch,
)

from autograd_async.engine.trace_events import ForwardOp, NodeRun
from autograd_async.profiler import load_trace

from .helpers import EXAMPLE_TEST_TIMEOUT, run_example

SMALL = ["--width", "512", "--batch-size", "128", "--micro-batches", "4", "--steps", "1"]


async def test_pipelined_run_matches_single_device_and_overlaps():
    report = await run(parse_args(SMALL))  # raises AssertionError if any gradient differs
    assert report.devices in (("sim:0", "sim:1"), ("cuda:0", "cuda:1"))
    assert report.max_gradient_difference < 1e-5
    a, b = report.devices
    # Both device workers ran backward nodes: stage 1's on A, stage 2's and the copy's on B.
    assert report.nodes_run[a] > 0 and report.nodes_run[b] > 0
    # Some backward work ran while the next micro-batch's forward or the other device worked.
    assert report.overlap_s > 0


async def test_both_schedules_accumulate_the_same_gradients():
    args = parse_args(SMALL)
    device_a, device_b = pick_devices()
    model = TwoStageMLP(args.width, device_a, device_b)
    micro_batches = split(*synthetic_batch(args), 4, device_a, device_b)
    with blas_threads(1):
        await sequential_step(model, micro_batches)
        one_by_one = gradients(model)
        model.zero_grad()
        await pipelined_step(model, micro_batches)
    check_gradients(gradients(model), one_by_one)


def test_a_wrong_gradient_is_caught():
    want = {"w": np.ones((3, 3), np.float32)}
    got = {"w": want["w"].copy()}
    got["w"][1, 2] += 1e-2
    with pytest.raises(AssertionError, match="gradient of w"):
        check_gradients(got, want)


def _forward(start: int, end: int) -> ForwardOp:
    return ForwardOp(1, "MainThread", "linear", 0, start, end, (), ())


def _node(device: str, start: int, end: int) -> NodeRun:
    return NodeRun(device, 2, device, "LinearBackward0", 0, 0, 0, start, end, (), ())


def test_overlap_counts_time_with_two_or_more_tracks_busy():
    events = [
        _forward(0, 100),
        _forward(10, 20),  # nested ops on one track count once
        _node("sim:1", 50, 150),  # overlaps the forward for 50
        _node("sim:0", 120, 200),  # overlaps sim:1 for 30
        _node("sim:0", 300, 400),  # alone
    ]
    assert overlap_seconds(events) == pytest.approx(80e-9)
    assert overlap_seconds([_forward(0, 10), _node("sim:0", 10, 20)]) == 0
    assert merged([(5, 9), (0, 3), (2, 4)]) == [(0, 4), (5, 9)]


@pytest.mark.timeout(EXAMPLE_TEST_TIMEOUT)
def test_command_line_run(tmp_path):
    trace = tmp_path / "pipeline.json"
    done = run_example("multi_device.py", *SMALL, "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    assert "gradients match a single-device run" in done.stdout
    assert "faster" in done.stdout
    devices = {e.get("args", {}).get("device") for e in load_trace(trace)["traceEvents"]}
    assert {"sim:0", "sim:1"} <= devices or {"cuda:0", "cuda:1"} <= devices
