"""Collectives of Python objects, encoded with msgpack (never pickle): what travels is data.

An object is msgpack-encoded into a uint8 tensor; the ranks first agree on the longest encoding,
then gather or broadcast the padded bytes. Objects are what msgpack carries: None, bool, int,
float, str, bytes, and lists and dicts of them (a tuple arrives as a list).
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from ...creation import as_tensor
from .api import all_gather, broadcast, resolve_group

__all__ = ["all_gather_object", "broadcast_object_list"]


def _encode(obj: Any) -> bytes:
    try:
        return msgpack.packb(obj, use_bin_type=True)
    except TypeError as exc:
        raise TypeError(
            f"{type(obj).__name__} objects cannot travel: object collectives send msgpack "
            "data (None, bool, int, float, str, bytes, lists and dicts of them), never pickle"
        ) from exc


def _decode(data: np.ndarray, size: int) -> Any:
    return msgpack.unpackb(data[:size].tobytes(), raw=False, strict_map_key=False)


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Every rank's `obj` into `object_list[rank]` on every rank."""
    pg = resolve_group(group)
    pg.check_size(len(object_list), "object_list")
    payload = np.frombuffer(_encode(obj), dtype=np.uint8)
    longest = as_tensor(np.array([payload.size], dtype=np.int64))
    sizes = [as_tensor(np.zeros(1, dtype=np.int64)) for _ in range(pg.size())]
    all_gather(sizes, longest, group=pg)
    width = max(int(s.numpy()[0]) for s in sizes)
    padded = np.zeros(width, dtype=np.uint8)
    padded[: payload.size] = payload
    parts = [as_tensor(np.zeros(width, dtype=np.uint8)) for _ in range(pg.size())]
    all_gather(parts, as_tensor(padded), group=pg)
    for i, (part, size) in enumerate(zip(parts, sizes)):
        object_list[i] = _decode(part.numpy(), int(size.numpy()[0]))


def broadcast_object_list(
    object_list: list[Any],
    src: int | None = None,
    group: Any = None,
    device: Any = None,
    group_src: int | None = None,
) -> None:
    """Rank `src`'s `object_list` entries into every rank's `object_list`, in place."""
    pg = resolve_group(group)
    root = group_src if group_src is not None else pg.ranks.index(src or 0)
    is_root = pg.rank() == root
    encoded = [_encode(obj) for obj in object_list] if is_root else [b""] * len(object_list)
    sizes = as_tensor(np.array([len(e) for e in encoded], dtype=np.int64))
    broadcast(sizes, group=pg, group_src=root)
    lengths = [int(n) for n in sizes.numpy()]
    total = sum(lengths)
    payload = np.zeros(max(total, 1), dtype=np.uint8)
    if is_root and total:
        payload[:total] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    data = as_tensor(payload)
    broadcast(data, group=pg, group_src=root)
    if not is_root:
        flat, at = data.numpy(), 0
        for i, n in enumerate(lengths):
            object_list[i] = _decode(flat[at : at + n], n)
            at += n
