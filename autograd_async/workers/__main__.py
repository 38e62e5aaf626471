"""Command line of the worker process.

    python -m workers --listen 127.0.0.1:0 --name w1 --devices cpu,sim:0 --token-file TOKEN \\
        [--peer w2=HOST:PORT ...] [--load MODULE ...] [--context-ttl SECONDS] \\
        [--tls-cert CERT --tls-key KEY [--tls-ca CA]] [--insecure] \\
        [--max-memory SIZE [--max-peer-memory SIZE] [--max-call-memory SIZE]]

Once listening it prints one line, `READY <name> <host>:<port>`, to stdout (flushed); it serves
until SIGTERM or SIGINT, then finishes the requests in flight, releases its contexts and exits 0.
Start-up failures (bad token file, module that fails to import, unknown device, port in use)
print one line to stderr and exit 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import re
import signal
import socket
import sys
from collections.abc import Sequence

from autograd_async.devices import Device, set_sim_device_count, sim_device_count
from autograd_async.distributed import load_token
from autograd_async.distributed.client import DEFAULT_TIMEOUT, parse_address
from autograd_async.distributed.connection import (
    DEFAULT_FRAME_IDLE_TIMEOUT,
    DEFAULT_MAX_HANDSHAKES,
)
from autograd_async.distributed.quota import (
    DEFAULT_MAX_PEER_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
    format_bytes,
)
from autograd_async.distributed.tls import client_context, server_context
from autograd_async.engine import shutdown

from .contexts import DEFAULT_MAX_CONTEXTS_PER_PEER
from .heap import retain_freed_blocks
from .memory import DEFAULT_MAX_MEMORY
from .server import DEFAULT_CONTEXT_TTL, WorkerServer

__all__ = ["build_parser", "main", "run"]

logger = logging.getLogger("workers")

_DESCRIPTION = (
    "Serve this process's devices to distributed-autograd clients and peer workers that know "
    "the shared token: registered functions, remote modules and optimizers, and their part of "
    "distributed backward passes (docs/wire-protocol.md, sections 8-10). Prints "
    "'READY <name> <host>:<port>' once listening; SIGTERM or SIGINT stops it cleanly."
)


def _peer(text: str) -> tuple[str, tuple[str, int]]:
    name, sep, address = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--peer takes NAME=HOST:PORT, got {text!r}")
    try:
        return name, parse_address(address)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _listen(text: str) -> tuple[str, int]:
    try:
        return parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _devices(text: str) -> list[Device]:
    try:
        return [Device(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _name(text: str) -> str:
    if not text.strip() or text != text.strip():
        raise argparse.ArgumentTypeError(
            f"a worker name must be non-empty, without surrounding spaces, got {text!r}"
        )
    return text


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


def _size(text: str) -> int:
    """A byte count: 1048576, 512M, 512MiB, 2G ... (binary units)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"must be a size like 1048576, 512M or 2GiB, got {text!r}")
    number, unit = match.groups()
    value = int(float(number) * (1 << (10 * " KMGT".index(unit.upper() or " "))))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return value


def _check_tls_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    if args.tls_ca is not None and args.tls_cert is None:
        parser.error("--tls-ca needs --tls-cert and --tls-key (the worker's own certificate)")


def build_parser() -> argparse.ArgumentParser:
    """The worker's argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m workers", description=_DESCRIPTION, allow_abbrev=False
    )
    parser.add_argument(
        "--listen",
        type=_listen,
        default=("127.0.0.1", 0),
        help="HOST:PORT to listen on (port 0: any free port)",
    )
    parser.add_argument("--name", type=_name, required=True, help="this worker's name")
    parser.add_argument(
        "--devices",
        type=_devices,
        default=[Device("cpu")],
        help="comma-separated devices it computes on; the first is the default",
    )
    parser.add_argument("--token-file", required=True, help="file holding the shared token")
    parser.add_argument(
        "--peer",
        type=_peer,
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="a worker this one may call (repeatable); peers started later "
        "are added while it runs with the peers.update method",
    )
    parser.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE at start-up to register functions (repeatable)",
    )
    parser.add_argument(
        "--context-ttl",
        type=_positive,
        default=DEFAULT_CONTEXT_TTL,
        help="seconds an idle distributed context is kept (default %(default)s)",
    )
    parser.add_argument(
        "--peer-timeout",
        type=_positive,
        default=DEFAULT_TIMEOUT,
        help="seconds before a silent peer counts as lost (default %(default)s)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=_positive,
        default=10.0,
        help="seconds in-flight requests get to finish on SIGTERM",
    )
    parser.add_argument("--tls-cert", metavar="PEM", help="serve over TLS with this certificate")
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument(
        "--tls-ca",
        metavar="PEM",
        help="require client certificates signed by this CA (mutual TLS); "
        "peers' certificates are checked against it too",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow listening beyond loopback without TLS (frames then have "
        "no integrity protection after the handshake)",
    )
    parser.add_argument(
        "--max-handshakes",
        type=_positive_int,
        default=DEFAULT_MAX_HANDSHAKES,
        help="connections allowed in their handshake at once (default %(default)s)",
    )
    parser.add_argument(
        "--max-peer-bytes",
        type=_size,
        default=DEFAULT_MAX_PEER_BYTES,
        metavar="SIZE",
        help="bytes one peer may make the worker hold: frames in flight, "
        "replies, modules, contexts (default 512M)",
    )
    parser.add_argument(
        "--max-total-bytes",
        type=_size,
        default=DEFAULT_MAX_TOTAL_BYTES,
        metavar="SIZE",
        help="the same, for all peers together (default 2G)",
    )
    parser.add_argument(
        "--max-memory",
        type=_size,
        default=DEFAULT_MAX_MEMORY,
        metavar="SIZE",
        help="bytes the arrays of all calls together may hold while they run "
        "and after (outputs kept for backward, modules); a call that would "
        "go over is refused with ResourceExhausted (default: half the "
        f"machine's memory, here {format_bytes(DEFAULT_MAX_MEMORY)})",
    )
    parser.add_argument(
        "--max-peer-memory",
        type=_size,
        default=None,
        metavar="SIZE",
        help="the same for the calls of one peer (default: half of --max-memory)",
    )
    parser.add_argument(
        "--max-call-memory",
        type=_size,
        default=None,
        metavar="SIZE",
        help="the same for one call (default: a quarter of --max-memory)",
    )
    parser.add_argument(
        "--max-contexts-per-peer",
        type=_positive_int,
        default=DEFAULT_MAX_CONTEXTS_PER_PEER,
        help="distributed contexts one peer may keep open (default %(default)s)",
    )
    parser.add_argument(
        "--frame-idle-timeout",
        type=_positive,
        default=DEFAULT_FRAME_IDLE_TIMEOUT,
        help="seconds an authenticated peer may leave a frame half-sent "
        "before it is disconnected (default %(default)s)",
    )
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument(
        "--release-freed-memory",
        action="store_true",
        help="give large freed blocks back to the system at once (the C "
        "library's default) instead of keeping those below 1 GiB for "
        "reuse, which spares large tensors page faults (workers/heap.py)",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        default="WARNING",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
    )
    return parser


async def run(args: argparse.Namespace) -> int:
    """Start the worker, print the READY line, serve until SIGTERM/SIGINT, shut down."""
    token = load_token(args.token_file)
    for module in args.load:
        importlib.import_module(module)  # the operator's choice, never a name from the wire
    sims = [d.index for d in args.devices if d.type == "sim"]
    if sims and max(sims) >= sim_device_count():
        set_sim_device_count(max(sims) + 1)
    server_ssl = peer_ssl = None
    if args.tls_cert is not None:
        server_ssl = server_context(args.tls_cert, args.tls_key, args.tls_ca)
        peer_ssl = client_context(args.tls_ca, args.tls_cert, args.tls_key)
    server = WorkerServer(
        args.name,
        token=token,
        devices=args.devices,
        peers=dict(args.peer),
        context_ttl=args.context_ttl,
        peer_timeout=args.peer_timeout,
        ssl=server_ssl,
        peer_ssl=peer_ssl,
        insecure=args.insecure,
        max_handshakes=args.max_handshakes,
        max_peer_bytes=args.max_peer_bytes,
        max_total_bytes=args.max_total_bytes,
        max_contexts_per_peer=args.max_contexts_per_peer,
        frame_idle_timeout=args.frame_idle_timeout,
        max_memory=args.max_memory,
        max_peer_memory=args.max_peer_memory,
        max_call_memory=args.max_call_memory,
    )
    host, port = args.listen
    try:
        await server.start(host, port)
    except socket.gaierror as exc:
        raise OSError(f"cannot resolve --listen host {host!r}: {exc.strerror or exc}") from None
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    host, port = server.address
    print(f"READY {args.name} {host}:{port}", flush=True)
    logger.info(
        "worker %r listening on %s:%d, devices %s",
        args.name,
        host,
        port,
        ",".join(str(d) for d in args.devices),
    )
    await stop.wait()
    logger.info("worker %r stopping", args.name)
    await server.stop(args.shutdown_grace)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `python -m workers` and `autograd-async-worker`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_tls_args(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format=f"%(asctime)s {args.name}[%(process)d] %(levelname)s %(message)s",
    )
    if not args.release_freed_memory:
        retain_freed_blocks()  # before any of the worker's threads start
    try:
        if args.loop == "uvloop":
            import uvloop  # noqa: PLC0415 - optional on platforms without it

            code = uvloop.run(run(args))
        else:
            code = asyncio.run(run(args))
    except (OSError, ValueError, ImportError, RuntimeError) as exc:
        print(
            f"worker {args.name!r} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True
        )
        return 1
    finally:
        shutdown(2.0)
    return code


if __name__ == "__main__":
    sys.exit(main())
