"""Mutual HMAC-SHA256 challenge-response over a shared secret token.

    client -> server   hello      {name, version}                 (sent on connect)
    server -> client   challenge  {version, nonce_s}              (sent on connect)
    client -> server   auth       {nonce_c, proof_c}
    server -> client   auth_ok    {name, proof_s}

    proof_c = HMAC-SHA256(token, nonce_s || nonce_c || "autograd-async/1 client")
    proof_s = HMAC-SHA256(token, nonce_s || nonce_c || "autograd-async/1 server")

Both nonces are fresh 32-byte random values, so no proof can be replayed; the role labels
differ, so a proof obtained from one side can never be reflected to the other. The server
names itself only in `auth_ok`, once the client has proven the token: a stranger learns
nothing about the worker. The state machines below are pure (no I/O); `connection.py` drives
them from its protocols.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from typing import Any

from .errors import AuthenticationError, ProtocolError
from .wire import VERSION

__all__ = [
    "MIN_TOKEN_BYTES",
    "NONCE_BYTES",
    "ClientHandshake",
    "ServerHandshake",
    "check_token",
    "compute_proof",
    "load_token",
    "new_nonce",
]

NONCE_BYTES = 32
# A shared secret shorter than this can be guessed; 32 random bytes (base64) is the advice.
MIN_TOKEN_BYTES = 16
_TOKEN_ADVICE = "make one with: head -c 32 /dev/urandom | base64 > TOKEN && chmod 600 TOKEN"
_LABELS = {"client": b"autograd-async/1 client", "server": b"autograd-async/1 server"}


def check_token(token: Any) -> bytes:
    """Return `token` if it is a bytes secret of at least MIN_TOKEN_BYTES, else raise a clear
    error."""
    if isinstance(token, bytearray | memoryview):
        token = bytes(token)
    if not isinstance(token, bytes):
        raise TypeError(f"token must be bytes, got {type(token).__name__}")
    if not token:
        raise ValueError("token must not be empty")
    if len(token) < MIN_TOKEN_BYTES:
        raise ValueError(
            f"token must be at least {MIN_TOKEN_BYTES} bytes, got {len(token)} ({_TOKEN_ADVICE})"
        )
    return token


def load_token(path: str | os.PathLike[str]) -> bytes:
    """Read a token from a file, dropping surrounding whitespace; refuse an empty or short one,
    and (on POSIX) a file that group or others may read, as ssh refuses such keys."""
    name = os.fspath(path)
    with open(path, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise PermissionError(
                f"token file {name!r} is accessible by group or others "
                f"(mode {stat.S_IMODE(mode):04o}); run: chmod 600 {name}"
            )
        token = fh.read().strip()
    if not token:
        raise ValueError(f"token file {name!r} is empty")
    try:
        return check_token(token)
    except ValueError as exc:
        raise ValueError(f"token file {name!r}: {exc}") from None


def new_nonce() -> bytes:
    """Return a fresh random nonce."""
    return secrets.token_bytes(NONCE_BYTES)


def compute_proof(token: bytes, server_nonce: bytes, client_nonce: bytes, role: str) -> bytes:
    """HMAC-SHA256 of both nonces and the role label ('client' or 'server')."""
    return hmac.new(token, server_nonce + client_nonce + _LABELS[role], hashlib.sha256).digest()


def _nonce_from_hex(value: str, what: str) -> bytes:
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) != NONCE_BYTES:
        raise ProtocolError(f"{what} must be {2 * NONCE_BYTES} hex digits, got {value[:80]!r}")
    return raw


def _proof_matches(expected: bytes, received: str) -> bool:
    try:
        raw = bytes.fromhex(received)
    except ValueError:
        return False
    return hmac.compare_digest(expected, raw)


def _check_version(version: int, who: str) -> None:
    if version != VERSION:
        raise ProtocolError(f"{who} speaks protocol version {version}, this side speaks {VERSION}")


class _Handshake:
    """What both sides hold: the token, a fresh nonce, and the one message they expect next."""

    def __init__(self, token: bytes, name: str, expect: str) -> None:
        self._token = check_token(token)
        self.name = name
        self.peer_name: str | None = None
        self.done = False
        self._nonce = new_nonce()
        self._expect = expect

    def _check_expected(self, msg: str) -> None:
        if self.done or msg != self._expect:
            raise ProtocolError(
                f"message {msg!r} received before authentication completed "
                f"(expected {self._expect!r})"
            )


class ServerHandshake(_Handshake):
    """Server side of the handshake: expects hello, then auth; anything else is refused."""

    def __init__(self, token: bytes, name: str) -> None:
        super().__init__(token, name, "hello")

    def challenge(self) -> dict[str, Any]:
        """Fields of the challenge message the server sends as soon as a client connects (no
        name: that waits until the client has proven the token)."""
        return {"version": VERSION, "nonce": self._nonce.hex()}

    def receive(self, msg: str, fields: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """Consume one client message; return the message to send back, if any."""
        self._check_expected(msg)
        if msg == "hello":
            _check_version(fields["version"], f"client {fields['name']!r}")
            self.peer_name = fields["name"]
            self._expect = "auth"
            return None
        client_nonce = _nonce_from_hex(fields["nonce"], "client nonce")
        expected = compute_proof(self._token, self._nonce, client_nonce, "client")
        if not _proof_matches(expected, fields["proof"]):
            raise AuthenticationError(f"client {self.peer_name!r} presented a wrong token")
        self.done = True
        proof = compute_proof(self._token, self._nonce, client_nonce, "server")
        return "auth_ok", {"name": self.name, "proof": proof.hex()}


class ClientHandshake(_Handshake):
    """Client side of the handshake: sends hello, answers the challenge, checks auth_ok."""

    def __init__(self, token: bytes, name: str) -> None:
        super().__init__(token, name, "challenge")
        self._server_nonce = b""

    def hello(self) -> dict[str, Any]:
        """Fields of the hello message the client sends as soon as it connects."""
        return {"name": self.name, "version": VERSION}

    def receive(self, msg: str, fields: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """Consume one server message; return the message to send back, if any."""
        if msg == "error":
            # The server refuses before closing; its words are the best diagnosis we get.
            raise AuthenticationError(
                f"server {self.peer_name or '?'!r} refused the handshake: "
                f"{fields['type']}: {fields['message']}"
            )
        self._check_expected(msg)
        if msg == "challenge":
            _check_version(fields["version"], "the server")
            self._server_nonce = _nonce_from_hex(fields["nonce"], "server nonce")
            proof = compute_proof(self._token, self._server_nonce, self._nonce, "client")
            self._expect = "auth_ok"
            return "auth", {"nonce": self._nonce.hex(), "proof": proof.hex()}
        expected = compute_proof(self._token, self._server_nonce, self._nonce, "server")
        if not _proof_matches(expected, fields["proof"]):
            raise AuthenticationError(
                f"the server (calling itself {fields['name']!r}) could not prove it knows the token"
            )
        self.peer_name = fields["name"]
        self.done = True
        return None
