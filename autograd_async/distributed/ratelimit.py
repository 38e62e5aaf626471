"""A log whose rate a peer cannot drive: at most `burst` records per `period`, then a count.

Strangers control how often a server fails a handshake; one warning per failure would let them
fill the disk. `LogLimiter` passes the first `burst` records of each period and counts the
rest, reporting the count with the first record of a later period.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LogLimiter"]


class LogLimiter:
    """Rate-limited logging to one logger; `clock` is injectable for tests."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 10,
        period: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.burst = burst
        self.period = period
        self.clock = clock
        self._window_start = -float("inf")
        self._in_window = 0
        self.suppressed = 0

    def log(self, level: int, message: str, *args: Any) -> bool:
        """Log `message % args` unless this period's burst is spent; True when it was logged."""
        now = self.clock()
        if now - self._window_start >= self.period:
            self._window_start, self._in_window = now, 0
            if self.suppressed:
                self.logger.log(
                    level, "%d similar messages suppressed since the last report", self.suppressed
                )
                self.suppressed = 0
        if self._in_window >= self.burst:
            self.suppressed += 1
            return False
        self._in_window += 1
        self.logger.log(level, message, *args)
        return True

    def warning(self, message: str, *args: Any) -> bool:
        """`log(logging.WARNING, ...)`."""
        return self.log(logging.WARNING, message, *args)
