"""What the training examples' command lines share: the default device and the run-and-report
step with its `--check` exit status."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import autograd_async as aa


def default_device() -> str:
    """cuda:0 when a GPU is usable, else the simulated accelerator sim:0."""
    return "cuda:0" if aa.cuda_is_available() else "sim:0"


def run_and_report(
    train: Callable[[argparse.Namespace], Awaitable[Any]],
    args: argparse.Namespace,
    summary: Callable[[Any], str],
    score: Callable[[Any], float],
    target: float,
    what: str,
) -> int:
    """Train, print `summary(result)`, and return 1 if `--check` finds `score` below `target`.

    A device that is not there (say cuda:0 without a GPU) is one line and exit status 2.
    """
    try:
        result = asyncio.run(train(args))
    except aa.DeviceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary(result))
    if args.trace:
        print(f"trace written to {args.trace}")
    if args.check and score(result) < target:
        print(f"FAILED: {what} is below the {target:.0%} target", file=sys.stderr)
        return 1
    return 0
