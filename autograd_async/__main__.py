"""`python -m autograd_async`: the version, and a report of the environment.

`python -m autograd_async --version` prints `autograd-async 0.1.0`; `python -m autograd_async
doctor [--json]` reports Python, NumPy, CuPy and its GPUs, MPI, ... and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__
from .doctor import collect_report, format_json, format_text


def build_parser() -> argparse.ArgumentParser:
    """The command line: `--version` and the `doctor` command."""
    parser = argparse.ArgumentParser(
        prog="python -m autograd_async",
        description="autograd-async: its version, and a report of this environment.",
    )
    parser.add_argument("--version", action="version", version=f"autograd-async {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = commands.add_parser(
        "doctor",
        help="report Python, NumPy, CuPy and GPUs, MPI, ... (paste it into bug reports)",
        description="Report what this environment holds: Python, the platform, NumPy and its "
        "BLAS, SciPy, CuPy and the GPUs it sees, uvloop, Ray, mpi4py and MPI, PyTorch, msgpack, "
        "ml_dtypes, the sim devices and whether a compiled core is active.",
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "doctor":
        report = collect_report()
        print(format_json(report) if args.json else format_text(report))
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
