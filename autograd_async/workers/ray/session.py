"""Finding Ray: importing it with a clear error when it is missing, connecting the driver to a
cluster (the user's `ray.init()` first), and where workers should listen on it."""

from __future__ import annotations

import asyncio
import logging
from types import ModuleType
from typing import Any

__all__ = ["MIN_RAY_VERSION", "RAY_MISSING", "connect_ray", "import_ray", "is_single_node"]

logger = logging.getLogger("workers.ray")

MIN_RAY_VERSION = (2, 9)
RAY_MISSING = (
    "running workers on Ray needs Ray >= 2.9, which is not installed: "
    "pip install 'autograd-async[ray]'"
)


def import_ray() -> ModuleType:
    """The `ray` module; ImportError saying how to install it when it is missing or too old."""
    try:
        import ray  # noqa: PLC0415 - an optional dependency
    except ImportError as exc:
        raise ImportError(RAY_MISSING) from exc
    version = tuple(int(p) for p in ray.__version__.split(".")[:2] if p.isdigit())
    if version < MIN_RAY_VERSION:
        raise ImportError(f"Ray {ray.__version__} is too old: {RAY_MISSING}")
    return ray


async def connect_ray(ray: ModuleType, timeout: float) -> bool:
    """Use the Ray this process is connected to; else join a running cluster
    (`ray.init(address="auto")`: RAY_ADDRESS, or the one `ray start` left on this machine);
    else start a local one. True when this call connected (so closing should disconnect)."""
    if ray.is_initialized():
        return False

    def init() -> None:
        try:
            ray.init(address="auto")
            logger.info("connected to the running Ray cluster")
        except ConnectionError:
            ray.init()
            logger.info("started a local Ray instance")

    # Off the loop: starting Ray takes seconds and the loop may be serving meanwhile.
    try:
        await asyncio.wait_for(asyncio.to_thread(init), timeout)
    except TimeoutError:
        raise TimeoutError(f"Ray did not start or connect within {timeout} s") from None
    return True


def is_single_node(ray: ModuleType) -> bool:
    """True when the cluster is one live node and this driver runs on it: workers can then
    listen on loopback, out of the network's reach."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    here: Any = ray.get_runtime_context().get_node_id()
    return len(alive) == 1 and alive[0].get("NodeID") == here
