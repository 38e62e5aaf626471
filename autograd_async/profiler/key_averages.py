"""Per-(op, device) timing aggregates, printed as a table like PyTorch's `key_averages()`.

Rows are built from plain `(name, device, kind, duration_ns)` samples so the same code serves the
raw records of a live `profile` and the slices of a trace read back from disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

# Keys accepted by `KeyAverages.sort_by`, mapped to (row attribute, descending?).
_SORT_KEYS = {
    "total": ("total_ns", True),
    "mean": ("mean_ns", True),
    "count": ("count", True),
    "max": ("max_ns", True),
    "min": ("min_ns", True),
    "name": ("name", False),
    "device": ("device", False),
}


@dataclass
class KeyAverage:
    """Timing of every run of one op name on one device (or forward thread)."""

    name: str
    device: str
    kind: str  # "backward", "forward", "gpu", "caller" or "user"
    count: int = 0
    total_ns: int = 0
    min_ns: int = 0
    max_ns: int = 0

    @property
    def mean_ns(self) -> float:
        """Mean duration in nanoseconds (0 for an empty row)."""
        return self.total_ns / self.count if self.count else 0.0

    def add(self, duration_ns: int) -> None:
        """Fold one run of `duration_ns` into the row."""
        if self.count == 0 or duration_ns < self.min_ns:
            self.min_ns = duration_ns
        if duration_ns > self.max_ns:
            self.max_ns = duration_ns
        self.count += 1
        self.total_ns += duration_ns


class KeyAverages(Sequence[KeyAverage]):
    """A table of `KeyAverage` rows; `str()` renders it sorted by total time."""

    def __init__(self, rows: Iterable[KeyAverage]) -> None:
        self._rows = list(rows)

    @classmethod
    def from_samples(cls, samples: Iterable[tuple[str, str, str, int]]) -> KeyAverages:
        """Aggregate `(name, device, kind, duration_ns)` samples into one row per key."""
        rows: dict[tuple[str, str, str], KeyAverage] = {}
        for name, device, kind, duration_ns in samples:
            key = (name, device, kind)
            row = rows.get(key)
            if row is None:
                row = rows[key] = KeyAverage(name, device, kind)
            row.add(int(duration_ns))
        return cls(rows.values()).sort_by("total")

    @overload
    def __getitem__(self, index: int) -> KeyAverage: ...

    @overload
    def __getitem__(self, index: slice) -> KeyAverages: ...

    def __getitem__(self, index: int | slice) -> KeyAverage | KeyAverages:
        if isinstance(index, slice):
            return KeyAverages(self._rows[index])
        return self._rows[index]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[KeyAverage]:
        return iter(self._rows)

    def total_ns(self, kind: str | None = None) -> int:
        """Sum of the rows' total times (only rows of `kind` when given)."""
        return sum(r.total_ns for r in self._rows if kind is None or r.kind == kind)

    def find(self, name: str, device: str | None = None, kind: str | None = None) -> KeyAverage:
        """The one row for `name` (and `device`, `kind` when given); KeyError if none or several."""
        found = [
            r
            for r in self._rows
            if r.name == name
            and (device is None or r.device == device)
            and (kind is None or r.kind == kind)
        ]
        if len(found) != 1:
            raise KeyError(f"{len(found)} rows match name={name!r} device={device!r} kind={kind!r}")
        return found[0]

    def sort_by(self, key: str = "total") -> KeyAverages:
        """A copy sorted by one of total, mean, count, max, min (descending) or name, device."""
        try:
            attr, descending = _SORT_KEYS[key]
        except KeyError:
            raise ValueError(f"unknown sort key {key!r}; use one of {sorted(_SORT_KEYS)}") from None
        # Name and device break ties so the order is stable across runs.
        rows = sorted(self._rows, key=lambda r: (r.name, r.device))
        rows.sort(key=lambda r: getattr(r, attr), reverse=descending)
        return KeyAverages(rows)

    def table(self, sort_by: str = "total", row_limit: int | None = None) -> str:
        """Render the rows as a fixed-width text table."""
        rows = self.sort_by(sort_by)._rows
        if row_limit is not None:
            rows = rows[:row_limit]
        # Shares are within a kind: a GPU span overlaps its node's run, an await covers a whole
        # backward and a user range the ops in it, so a grand total would count time twice.
        kind_totals: dict[str, int] = {}
        for r in self._rows:
            kind_totals[r.kind] = kind_totals.get(r.kind, 0) + r.total_ns
        header = ("Name", "Device", "Kind", "Count", "Total", "% of kind", "Mean", "Min", "Max")
        body = [
            (
                r.name,
                r.device,
                r.kind,
                str(r.count),
                format_ns(r.total_ns),
                f"{100.0 * r.total_ns / (kind_totals[r.kind] or 1):.1f}%",
                format_ns(r.mean_ns),
                format_ns(r.min_ns),
                format_ns(r.max_ns),
            )
            for r in rows
        ]
        widths = [max([len(h)] + [len(line[i]) for line in body]) for i, h in enumerate(header)]

        # Text columns are left-aligned, numbers right-aligned, as in PyTorch's table.
        def render(cells: Sequence[str]) -> str:
            parts = [
                c.ljust(w) if i < 3 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ]
            return "  ".join(parts).rstrip()

        rule = "-" * len(render(["-" * w for w in widths]))
        lines = [rule, render(header), rule, *(render(line) for line in body), rule]
        totals = ", ".join(f"{kind} {format_ns(t)}" for kind, t in sorted(kind_totals.items()))
        lines.append(f"{len(self._rows)} rows; total time by kind: {totals or 'none'}")
        lines.append("% of kind: share of the total time of the row's kind (kinds overlap in time)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"KeyAverages({len(self._rows)} rows)"


def format_ns(ns: float) -> str:
    """Format a duration in nanoseconds with a readable unit (ns, us, ms or s)."""
    if ns < 1e3:
        return f"{ns:.0f}ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3f}us"
    if ns < 1e9:
        return f"{ns / 1e6:.3f}ms"
    return f"{ns / 1e9:.3f}s"
