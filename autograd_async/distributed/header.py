"""Frame headers: msgpack maps, decoded with strict limits and bounded nesting.

The decoder refuses `bin` and ext types and non-str map keys, and checks nesting without
recursion right after msgpack has decoded (msgpack itself does not recurse), so that nothing
recursive (repr, validators) ever sees a hostile depth. Every failure is a ProtocolError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack

from .errors import ProtocolError

__all__ = ["MAX_HEADER_DEPTH", "check_depth", "decode_msgpack", "pack_header", "unpack_header"]

# Real headers are a few levels deep (the schema allows 16 inside a field). Anything deeper is
# refused right after decoding, before recursive code (repr, validators) can see it and hit
# Python's recursion limit; msgpack itself decodes without recursion, up to 1024 levels.
MAX_HEADER_DEPTH = 64


def _refuse_ext(code: int, data: bytes) -> Any:
    raise ProtocolError(f"header contains msgpack ext type {code}, which is not allowed")


def check_depth(value: Any, limit: int = MAX_HEADER_DEPTH) -> None:
    """Raise ProtocolError if lists/maps in `value` nest deeper than `limit` (no recursion)."""
    if not isinstance(value, dict | list):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise ProtocolError(f"header is nested deeper than {limit} levels")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


def unpack_header(raw: bytes) -> Any:
    """Decode a msgpack header with strict limits: no bin, no ext, str keys only, bounded
    nesting."""
    header = decode_msgpack(raw)
    check_depth(header)
    return header


def decode_msgpack(raw: bytes) -> Any:
    """msgpack.unpackb with the header's limits; every failure becomes a ProtocolError."""
    n = len(raw)
    try:
        return msgpack.unpackb(
            raw,
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_str_len=n,
            max_bin_len=0,
            max_array_len=n,
            max_map_len=n // 2,
            max_ext_len=0,
            ext_hook=_refuse_ext,
        )
    except ProtocolError:
        raise
    except msgpack.StackError:
        raise ProtocolError("header is nested too deeply") from None
    except Exception as exc:  # msgpack signals bad input with many exception types
        text = str(exc)
        if "max_bin_len" in text:
            text = "binary (bin) values are not allowed; arrays travel as buffers"
        elif "strict_map_key" in text:
            text = f"map keys must be str ({text})"
        else:
            text = f"{type(exc).__name__}: {text}"
        raise ProtocolError(f"header is not valid msgpack: {text}") from None


def pack_header(header: Mapping[str, Any]) -> bytes:
    """Encode a header map with msgpack, refusing values msgpack cannot carry as simple values."""
    try:
        return msgpack.packb(header, use_bin_type=True, strict_types=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"header cannot be encoded: {exc}") from None
