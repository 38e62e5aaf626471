"""Leaving a distributed context releases it on the workers it reached, but never waits again on
a worker already known lost."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import autograd_async as ag
from autograd_async import distributed as dist
from autograd_async.distributed import Client, WorkerLostError

from .conftest import TOKEN

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 3.0  # the client's timeout here: small, so the lost worker's timeout passes quickly


async def contexts(client: Client, worker: str) -> int:
    return (await client.stats(worker))["contexts"]


async def test_leaving_a_context_skips_a_worker_lost_to_a_timeout(spawn_worker):
    w1, w2 = spawn_worker("w1"), spawn_worker("w2")
    async with Client({"w1": w1.address, "w2": w2.address}, token=TOKEN, timeout=TIMEOUT) as client:
        x = ag.ones(3, requires_grad=True)
        os_stopped = False
        try:
            with pytest.raises(WorkerLostError, match="no answer to 'backward'") as info:
                async with dist.context(client) as ctx:
                    h = await client.call("w1", "tanh", x)
                    y = await client.call("w2", "mul", h, 2.0)
                    os.kill(w2.pid, signal.SIGSTOP)
                    os_stopped = True
                    try:
                        await dist.backward(ctx, [y.sum()])
                    finally:
                        lost_at = time.monotonic()
            leaving = time.monotonic() - lost_at
            assert info.value.worker == "w2" and client.is_lost("w2")
            # Releasing on w1 is one round trip to a live local process (milliseconds even on a
            # loaded machine); calling w2 again would add a whole TIMEOUT before giving up.
            assert leaving < TIMEOUT / 2, leaving
            assert await contexts(client, "w1") == 0  # the live worker was still released
        finally:
            if os_stopped:
                os.kill(w2.pid, signal.SIGCONT)
        # w2 answers again: the next call reconnects and it is no longer taken as lost.
        y = await client.call("w2", "mul", ag.ones(2), 3.0)
        np.testing.assert_array_equal(y.numpy(), [3.0, 3.0])
        assert not client.is_lost("w2")
