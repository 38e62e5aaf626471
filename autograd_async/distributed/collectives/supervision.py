"""A rank's line to the launcher (`python -m autograd_async.distributed.run`), when it has one.

The launcher listens on a local socket and passes its address and a token in the environment.
Each rank connects at `init_process_group` and keeps the connection open. Through it:

- a rank that raises tells the launcher its traceback before it exits, and a rank that dies
  closes the connection without saying goodbye; either way the launcher tells every other rank,
  whose collectives then fail at once with an error naming the failed rank (never a hang);
- a collective that times out asks where every rank is (the last collective each started in each
  group), so the error names the ranks that never arrived.

Messages are msgpack maps with a 4-byte length in front. Without a launcher none of this runs
and timeouts say less.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import hmac
import itertools
import os
import socket
import struct
import sys
import threading
import traceback
import weakref
from typing import Any

import msgpack

__all__ = [
    "ADDRESS_ENV",
    "TOKEN_ENV",
    "connect_if_launched",
    "failure",
    "read_message",
    "send_message",
    "unwatch",
    "watch",
    "whereabouts",
]

ADDRESS_ENV = "AUTOGRAD_ASYNC_RUN_ADDRESS"
TOKEN_ENV = "AUTOGRAD_ASYNC_RUN_TOKEN"
RANK_ENVS = ("AUTOGRAD_ASYNC_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "RANK")
HEADER = struct.Struct("!I")
MAX_MESSAGE = 1 << 20


def send_message(sock: socket.socket, message: dict) -> None:
    """Write one length-prefixed msgpack message."""
    body = msgpack.packb(message, use_bin_type=True)
    sock.sendall(HEADER.pack(len(body)) + body)


def read_message(reader: Any) -> dict | None:
    """Read one message from a file-like `reader` (None at the end of the stream)."""
    head = reader.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    if size > MAX_MESSAGE:
        raise ValueError(f"a supervision message of {size} bytes is over the limit")
    body = reader.read(size)
    if len(body) < size:
        return None
    return msgpack.unpackb(body, raw=False)


def launched_rank() -> int | None:
    """This process's rank as the MPI launcher set it, None outside a launch."""
    for name in RANK_ENVS:
        if name in os.environ:
            return int(os.environ[name])
    return None


class Supervision:
    """The connection to the launcher and the thread that listens on it."""

    def __init__(self, address: str, token: str, rank: int) -> None:
        host, _, port = address.rpartition(":")
        self.rank = rank
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.settimeout(None)
        self.send_lock = threading.Lock()
        self.groups: weakref.WeakSet = weakref.WeakSet()
        self.failure: str | None = None
        self.questions: dict[int, concurrent.futures.Future] = {}
        self.ids = itertools.count(1)
        self.send({"t": "hello", "rank": rank, "token": token})
        self.reader = self.sock.makefile("rb")
        self.thread = threading.Thread(
            target=self.listen, name="autograd-async:supervision", daemon=True
        )
        self.thread.start()
        self.previous_hook = sys.excepthook
        sys.excepthook = self.report_and_raise
        atexit.register(self.goodbye)

    def send(self, message: dict) -> None:
        with self.send_lock:
            try:
                send_message(self.sock, message)
            except OSError:
                pass  # the launcher is gone; the process is being torn down

    def listen(self) -> None:
        while True:
            try:
                message = read_message(self.reader)
            except (OSError, ValueError):
                message = None
            if message is None:
                return
            kind = message.get("t")
            if kind == "peer_failed":
                self.peer_failed(message["rank"], message["error"])
            elif kind == "report":
                where = {g.group_name: list(g.last_started) for g in list(self.groups)}
                self.send({"t": "at", "rank": self.rank, "id": message["id"], "groups": where})
            elif kind == "whereabouts":
                future = self.questions.pop(message["id"], None)
                if future is not None:
                    future.set_result(message["ranks"])

    def peer_failed(self, rank: int, error: str) -> None:
        last = error.strip().splitlines()[-1] if error.strip() else "no traceback"
        self.failure = f"rank {rank} failed ({last})"
        for group in list(self.groups):
            group.fail_pending(self.failure)

    def whereabouts(self, group_name: str, wait: float = 2.0) -> dict[int, tuple[int, str]]:
        """Where each responding rank is in `group_name`: {rank: (seq, collective)}."""
        ident = next(self.ids)
        future: concurrent.futures.Future = concurrent.futures.Future()
        self.questions[ident] = future
        self.send({"t": "query", "rank": self.rank, "id": ident, "wait": wait})
        try:
            ranks = future.result(wait + 2.0)
        except concurrent.futures.TimeoutError:
            return {}
        out = {}
        for rank, groups in ranks.items():
            seq, name = groups.get(group_name, [0, ""])
            out[int(rank)] = (int(seq), str(name))
        return out

    def report_and_raise(self, kind: type, value: BaseException, tb: Any) -> None:
        """sys.excepthook: tell the launcher this rank failed, then print as usual."""
        text = "".join(traceback.format_exception(kind, value, tb))
        self.send({"t": "failed", "rank": self.rank, "error": text})
        self.previous_hook(kind, value, tb)
        # Leave now: MPI_Finalize at exit would wait for peers that failed or are failing.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    def goodbye(self) -> None:
        self.send({"t": "bye", "rank": self.rank})


class State:
    """The process's supervision connection (one per process: it is the process that fails)."""

    connection: Supervision | None = None
    tried = False
    lock = threading.Lock()


def connect_if_launched() -> Supervision | None:
    """Connect to the launcher once, when the environment names one."""
    with State.lock:
        if not State.tried:
            State.tried = True
            address = os.environ.get(ADDRESS_ENV)
            rank = launched_rank()
            if address and rank is not None:
                State.connection = Supervision(address, os.environ.get(TOKEN_ENV, ""), rank)
        return State.connection


def check_token(given: Any, expected: str) -> bool:
    """Compare tokens in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given, expected)


def watch(group: Any) -> None:
    """Fail `group`'s collectives when a peer fails; report where it is when asked."""
    connection = connect_if_launched()
    if connection is not None:
        connection.groups.add(group)
        if connection.failure is not None:
            group.fail_pending(connection.failure)


def unwatch(group: Any) -> None:
    """Stop watching a destroyed group."""
    if State.connection is not None:
        State.connection.groups.discard(group)


def failure() -> str | None:
    """The failure of a peer the launcher reported, if any."""
    return State.connection.failure if State.connection is not None else None


def whereabouts(group_name: str) -> dict[int, tuple[int, str]] | None:
    """Every responding rank's last collective in the group (None without a launcher)."""
    if State.connection is None:
        return None
    return State.connection.whereabouts(group_name)
