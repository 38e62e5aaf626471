"""Packed and padded batches of sequences (PyTorch's `torch.nn.utils.rnn`).

A `PackedSequence` holds the rows of every time step back to back: step t contributes the first
`batch_sizes[t]` sequences of a batch sorted by decreasing length. Packing, padding and
unpadding are each one row gather (`index_select`) on the graph, so gradients flow back to the
padded or packed tensor they came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ... import creation
from ...core.tensor import Tensor
from ...ops.gather import index_select
from ...ops.shape import cat


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """Packed rows (`data`), the batch size of each step, and the sort applied to the batch.

    Given `sorted_indices` alone, the inverse permutation is worked out, as PyTorch does.
    """

    __slots__ = ()

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's legacy form: a (data, batch_sizes) pair
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """`data.to(...)`; the indices follow it to its device, `batch_sizes` stays on the cpu."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        device = data.device

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(device)

        return PackedSequence(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    def cpu(self) -> PackedSequence:
        """This sequence with its data on the cpu."""
        return self.to("cpu")

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """This sequence with its data on a CUDA device."""
        return self.to(*(args or ("cuda",)), **kwargs)

    def double(self) -> PackedSequence:
        """This sequence with float64 data."""
        return self.to(dtype=np.float64)

    def float(self) -> PackedSequence:
        """This sequence with float32 data."""
        return self.to(dtype=np.float32)

    def half(self) -> PackedSequence:
        """This sequence with float16 data."""
        return self.to(dtype=np.float16)

    @property
    def is_cuda(self) -> bool:
        """Whether the data lives on a CUDA device."""
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        """Whether the data is in pinned host memory (never, here)."""
        return False


def _indices(values: Any, device: Any) -> Tensor:
    return creation.tensor(np.asarray(values, dtype=np.int64), device=device)


def _lengths_list(lengths: Any) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
            kind = "cpu" if lengths.device.type != "cuda" else "cuda"
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.ndim}D {kind} {str(lengths.dtype).capitalize()} tensor"
            )
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in np.asarray(lengths).reshape(-1)]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes `permutation` (None for None)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.tolist(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return _indices(inverse, permutation.device)


def _packed_rows(sorted_lengths: list[int], columns: np.ndarray) -> tuple[list[int], Any]:
    """Batch sizes per step and, for each packed row, its index in the (T * batch) padded rows
    (`columns`: the padded column of each sorted position)."""
    steps, batch = sorted_lengths[0], len(sorted_lengths)
    counts = np.asarray(sorted_lengths)
    grid = np.arange(steps)[:, None] < counts[None, :]  # (T, batch): step t of sequence s
    batch_sizes = grid.sum(axis=1).tolist()
    rows = (np.arange(steps)[:, None] * batch + columns[None, :])[grid]  # row-major: t, then s
    return batch_sizes, rows


def pack_padded_sequence(
    input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded (T, B, *) batch (B, T, * with `batch_first`) of sequences of `lengths`."""
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        order = None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable, as torch's
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if len(lengths) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
            f"(batch_size={batch})"
        )
    if lengths and min(lengths) <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if max(lengths) > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {max(lengths)} exceeds the padded sequence "
            f"length {steps}"
        )
    sorted_indices = None if order is None else _indices(order, input.device)
    ranked = lengths if order is None else [lengths[i] for i in order]
    columns = np.arange(batch) if order is None else np.asarray(order, dtype=np.int64)
    batch_sizes, rows = _packed_rows(ranked, columns)
    flat = input.reshape(steps * batch, *input.shape[2:])
    data = index_select(flat, 0, _indices(rows, input.device))
    return PackedSequence(
        data,
        creation.tensor(np.asarray(batch_sizes, dtype=np.int64)),
        sorted_indices,
        invert_permutation(sorted_indices),
    )


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The padded (T, B, *) batch of a packed one, in the original order, and its lengths."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    steps, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
        steps = total_length
    sorted_lengths = [sum(1 for b in batch_sizes if b > j) for j in range(batch)]
    unsorted = sequence.unsorted_indices
    column = list(range(batch)) if unsorted is None else [int(v) for v in unsorted.tolist()]
    starts = np.cumsum([0, *batch_sizes[:-1], 0])  # steps past the data read the padding
    pad_row = data.shape[0]  # the padding row appended after the data
    step = np.arange(steps)[:, None]
    sorted_position = np.asarray(column, dtype=np.int64)[None, :]
    valid = step < np.asarray(sorted_lengths)[sorted_position]
    first = starts[np.minimum(step, len(batch_sizes))]
    rows = np.where(valid, first + sorted_position, pad_row).reshape(-1)
    filler = creation.full(
        (1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device
    )
    padded = index_select(cat([data, filler], 0), 0, _indices(rows, data.device))
    padded = padded.reshape(steps, batch, *data.shape[1:])
    if batch_first:
        padded = padded.transpose(0, 1)
    lengths = creation.tensor(np.asarray([sorted_lengths[s] for s in column], dtype=np.int64))
    return padded, lengths


def pad_sequence(
    sequences: Tensor | Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of shape (L_i, *) into (max L, B, *) ((B, max L, *) with batch_first)."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    longest = max(s.shape[0] for s in sequences)
    batch = len(sequences)
    first = sequences[0]
    filler = creation.full(
        (1, *first.shape[1:]), padding_value, dtype=first.dtype, device=first.device
    )
    joined = cat([*sequences, filler], 0)  # the trailing sizes must agree, as torch's check
    pad_row = joined.shape[0] - 1
    lengths = np.asarray([s.shape[0] for s in sequences])[None, :]
    starts = np.cumsum([0, *lengths[0, :-1]])[None, :]
    step = np.arange(longest)[:, None] - (0 if padding_side == "right" else longest - lengths)
    rows = np.where((step >= 0) & (step < lengths), starts + step, pad_row).reshape(-1)
    padded = index_select(joined, 0, _indices(rows, first.device))
    padded = padded.reshape(longest, batch, *first.shape[1:])
    return padded.transpose(0, 1) if batch_first else padded


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences of shape (L_i, *)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Any, batch_first: bool = False
) -> list[Tensor]:
    """The list of sequences, each cut to its length, of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :length] for i, length in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences in a packed batch, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]
