"""Command line: `python -m autograd_async.profiler {summary,plot} trace.json`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from autograd_async.profiler.chrome_trace import load_trace
from autograd_async.profiler.summary import summarize


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with its `summary` and `plot` subcommands."""
    parser = argparse.ArgumentParser(
        prog="python -m autograd_async.profiler",
        description="Read a Chrome trace written by autograd_async.profiler.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    summary = sub.add_parser(
        "summary", help="key averages, busy share, idle gaps and critical path"
    )
    summary.add_argument("trace", help="trace file (.json or .json.gz)")
    summary.add_argument("--top-gaps", type=int, default=3, help="idle gaps shown per device")
    summary.add_argument("--rows", type=int, default=30, help="rows of the key-average table")
    plot = sub.add_parser("plot", help="PNG timeline, one lane per track")
    plot.add_argument("trace", help="trace file (.json or .json.gz)")
    plot.add_argument("-o", "--output", default="timeline.png", help="PNG file to write")
    plot.add_argument("--title", default=None, help="title of the figure")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    args = build_parser().parse_args(argv)
    try:
        trace = load_trace(args.trace)
    except (OSError, ValueError) as e:
        print(f"error: cannot read trace {args.trace}: {e}", file=sys.stderr)
        return 2
    if args.command == "summary":
        print(summarize(trace).format(top_gaps=args.top_gaps, row_limit=args.rows))
        return 0
    from autograd_async.profiler.plot import plot_timeline

    try:
        plot_timeline(trace, args.output, title=args.title)
    except ImportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
