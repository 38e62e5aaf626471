"""The launcher: `python -m autograd_async.distributed.run -n 4 train.py args...` (as `torchrun`).

It wraps the MPI launcher (`mpiexec`, from the `mpich` wheel or the system): every rank runs the
script with this interpreter, and `init_process_group()` finds its rank and world size from MPI.
The launcher also supervises the ranks over a local socket (see `collectives/supervision.py`):

- when a rank raises, its traceback is printed and every other rank's collectives fail at once
  with an error naming it; when a rank dies without a word (killed, crashed), the same;
- the ranks still running after `--grace` seconds are stopped, and the launcher exits non-zero,
  repeating the traceback of the rank that failed first;
- SIGINT and SIGTERM are forwarded to the MPI launcher, which passes them to the ranks.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .collectives.supervision import (
    ADDRESS_ENV,
    TOKEN_ENV,
    check_token,
    read_message,
    send_message,
)

__all__ = ["Supervisor", "main", "mpiexec_command"]


def find_mpiexec(given: str | None) -> str:
    """The MPI launcher: `--mpiexec`, the one beside this interpreter, or the one on PATH."""
    if given:
        return given
    beside = Path(sys.executable).with_name("mpiexec")
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found is None:
        raise SystemExit("no mpiexec found: pip install 'autograd-async[mpi]' or install an MPI")
    return found


def is_hydra(mpiexec: str) -> bool:
    """True for MPICH's launcher (Hydra), whose option keeps the ranks up when one fails."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "HYDRA" in out.stdout


def mpiexec_command(
    mpiexec: str, n: int, target: Sequence[str], hosts: str | None = None, hydra: bool = False
) -> list[str]:
    """The MPI launch line: n ranks of this interpreter running `target`."""
    command = [mpiexec]
    if hydra:
        # This launcher stops the others itself once they have reported their errors.
        command.append("-disable-auto-cleanup")
    if hosts:
        command += ["-hosts", hosts]
    return [*command, "-n", str(n), sys.executable, "-u", *target]


class Supervisor:
    """Listens to the ranks: who is up, who failed first, and where each one is when asked."""

    def __init__(self, size: int, host: str = "127.0.0.1") -> None:
        self.size = size
        self.token = secrets.token_hex(16)
        self.server = socket.create_server((host, 0))
        self.address = f"{host}:{self.server.getsockname()[1]}"
        self.lock = threading.Lock()
        self.ranks: dict[int, socket.socket] = {}
        self.finished: set[int] = set()
        self.first_failure: tuple[int, str] | None = None
        self.failed_at: float | None = None
        self.answers: dict[int, dict] = {}
        threading.Thread(target=self.accept, name="supervisor-accept", daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        hello = read_message(reader)
        if (
            not hello
            or hello.get("t") != "hello"
            or not check_token(hello.get("token"), self.token)
        ):
            conn.close()
            return
        rank = int(hello["rank"])
        with self.lock:
            self.ranks[rank] = conn
        while True:
            try:
                message = read_message(reader)
            except (OSError, ValueError):
                message = None
            if message is None:
                break
            kind = message.get("t")
            if kind == "failed":
                self.rank_failed(rank, str(message.get("error", "")))
            elif kind == "bye":
                with self.lock:
                    self.finished.add(rank)
            elif kind == "query":
                threading.Thread(target=self.answer, args=(rank, message), daemon=True).start()
            elif kind == "at":
                with self.lock:
                    self.answers.setdefault(int(message["id"]), {})[rank] = message["groups"]
        with self.lock:
            self.ranks.pop(rank, None)
            clean = rank in self.finished
        if not clean:
            self.rank_failed(rank, f"rank {rank} exited without finishing (killed or crashed)")

    def send(self, rank: int, message: dict) -> None:
        with self.lock:
            conn = self.ranks.get(rank)
        if conn is not None:
            try:
                send_message(conn, message)
            except OSError:
                pass

    def rank_failed(self, rank: int, error: str) -> None:
        """Tell every other rank, once: the first failure is the one that counts."""
        with self.lock:
            if self.first_failure is not None:
                return
            self.first_failure = (rank, error)
            self.failed_at = time.monotonic()
            others = [r for r in self.ranks if r != rank]
        for other in others:
            self.send(other, {"t": "peer_failed", "rank": rank, "error": error})

    def answer(self, asker: int, query: dict) -> None:
        """Ask every rank where it is; reply to the asker with what came back in time."""
        ident = int(query["id"]) * 1000 + asker
        with self.lock:
            alive = list(self.ranks)
        for r in alive:
            self.send(r, {"t": "report", "id": ident})
        deadline = time.monotonic() + float(query.get("wait", 2.0))
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.answers.get(ident, {})) >= len(alive):
                    break
            time.sleep(0.01)
        with self.lock:
            got = self.answers.pop(ident, {})
        self.send(
            asker,
            {"t": "whereabouts", "id": query["id"], "ranks": {str(r): g for r, g in got.items()}},
        )

    def close(self) -> None:
        self.server.close()


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m autograd_async.distributed.run",
        description="Run a training script on N ranks under MPI, supervised: a failing rank "
        "stops the others with its traceback shown.",
    )
    parser.add_argument(
        "-n",
        "--nproc",
        "--nproc-per-node",
        type=int,
        default=1,
        help="number of ranks (torchrun's --nproc-per-node)",
    )
    parser.add_argument("--hosts", default=None, help="comma-separated hosts (MPI's -hosts)")
    parser.add_argument("--mpiexec", default=None, help="the MPI launcher to wrap")
    parser.add_argument(
        "--grace",
        type=float,
        default=10.0,
        help="seconds the other ranks get to stop after one fails",
    )
    parser.add_argument(
        "-m", dest="module", action="store_true", help="run the target as a module (python -m)"
    )
    parser.add_argument("script", help="the script (or module, with -m) to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Launch, supervise, and return the exit status."""
    options = parse(sys.argv[1:] if argv is None else argv)
    mpiexec = find_mpiexec(options.mpiexec)
    host = socket.gethostname() if options.hosts else "127.0.0.1"
    supervisor = Supervisor(options.nproc, "0.0.0.0" if options.hosts else host)
    address = (
        supervisor.address
        if not options.hosts
        else (f"{host}:{supervisor.address.rpartition(':')[2]}")
    )
    target = (["-m", options.script] if options.module else [options.script]) + options.args
    command = mpiexec_command(mpiexec, options.nproc, target, options.hosts, is_hydra(mpiexec))
    env = dict(os.environ, **{ADDRESS_ENV: address, TOKEN_ENV: supervisor.token})
    proc = subprocess.Popen(command, env=env, start_new_session=True)

    def forward(signum: int, _frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        stopping = False
        while proc.poll() is None:
            time.sleep(0.05)
            failed_at = supervisor.failed_at
            if failed_at is not None and not stopping:
                if time.monotonic() - failed_at > options.grace:
                    stopping = True
                    _stop(proc)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        supervisor.close()
    status = proc.returncode
    if supervisor.first_failure is not None:
        rank, error = supervisor.first_failure
        sys.stderr.write(
            f"autograd_async.distributed.run: rank {rank} failed first:\n{error.rstrip()}\n"
        )
        return status if status not in (0, None) and status > 0 else 1
    return status if status >= 0 else 128 - status


def _stop(proc: subprocess.Popen) -> None:
    """Stop the MPI launcher and its ranks: SIGTERM to the group, SIGKILL if it lingers."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(3.0)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main())
