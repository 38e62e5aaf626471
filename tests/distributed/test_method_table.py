"""Remote methods are declared once (methods.py) and bound to handlers by decorator."""

from __future__ import annotations

import pytest

from autograd_async.distributed import methods
from autograd_async.distributed.methods import METHODS, bind_handlers, handles
from autograd_async.workers import WorkerServer

from .conftest import TOKEN


def test_every_declared_method_has_one_worker_handler():
    worker = WorkerServer("w", token=TOKEN, devices=["cpu"])
    try:
        table = bind_handlers(worker)
        assert sorted(table) == sorted(METHODS.names())
        assert table[methods.PEERS_UPDATE] == worker._peers_update
    finally:
        worker._compute.shutdown(wait=False)


def test_a_missing_or_doubled_handler_is_refused_at_once():
    class Partial:
        @handles(methods.STATS)
        async def stats(self, kw, arrays):
            return {}, []

    with pytest.raises(TypeError, match="Partial has no handler for call, module.forward"):
        bind_handlers(Partial())

    class Doubled(Partial):
        @handles(methods.STATS)
        async def stats_again(self, kw, arrays):
            return {}, []

    with pytest.raises(TypeError, match="handles 'stats' twice"):
        bind_handlers(Doubled())
    with pytest.raises(ValueError, match="'stat' is not a declared remote method"):
        handles("stat")
