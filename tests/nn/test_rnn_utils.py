"""nn.utils.rnn against PyTorch: packing, padding and unpadding, values, gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa
from autograd_async.nn.utils import rnn as R


def to_numpy(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("as_tensor", [False, True], ids=["list", "tensor"])
def test_pack_then_pad_matches_torch(torch, device, batch_first, enforce_sorted, as_tensor):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    x = np.random.default_rng(0).standard_normal((4, 6, 2) if batch_first else (6, 4, 2))
    ours_x = aa.tensor(x, requires_grad=True, device=device)
    ref_x = torch.tensor(x, requires_grad=True)
    ours = R.pack_padded_sequence(
        ours_x,
        aa.tensor(lengths) if as_tensor else lengths,
        batch_first=batch_first,
        enforce_sorted=enforce_sorted,
    )
    ref = torch.nn.utils.rnn.pack_padded_sequence(
        ref_x,
        torch.tensor(lengths) if as_tensor else lengths,
        batch_first=batch_first,
        enforce_sorted=enforce_sorted,
    )
    np.testing.assert_array_equal(to_numpy(ours.data), ref.data.detach().numpy())
    assert ours.batch_sizes.tolist() == ref.batch_sizes.tolist()
    assert ours.batch_sizes.dtype == aa.int64 and ours.batch_sizes.device.type == "cpu"
    for mine, theirs in (
        (ours.sorted_indices, ref.sorted_indices),
        (ours.unsorted_indices, ref.unsorted_indices),
    ):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert mine.tolist() == theirs.tolist()
    for total in (None, 7):
        padded, lens = R.pad_packed_sequence(
            ours, batch_first=batch_first, padding_value=-1.5, total_length=total
        )
        ref_padded, ref_lens = torch.nn.utils.rnn.pad_packed_sequence(
            ref, batch_first=batch_first, padding_value=-1.5, total_length=total
        )
        np.testing.assert_array_equal(to_numpy(padded), ref_padded.detach().numpy())
        assert lens.tolist() == ref_lens.tolist()
    w = np.random.default_rng(1).standard_normal(tuple(ref_padded.shape))
    (padded * aa.tensor(w, device=device)).sum().backward()
    (ref_padded * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_numpy(ours_x.grad), ref_x.grad.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, device, batch_first, side):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((n, 2, 3)) for n in (2, 4, 1)]
    ours_in = [aa.tensor(a, requires_grad=True, device=device) for a in arrays]
    ref_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours = R.pad_sequence(ours_in, batch_first=batch_first, padding_value=7.0, padding_side=side)
    ref = torch.nn.utils.rnn.pad_sequence(
        ref_in, batch_first=batch_first, padding_value=7.0, padding_side=side
    )
    np.testing.assert_array_equal(to_numpy(ours), ref.detach().numpy())
    w = rng.standard_normal(tuple(ref.shape))
    (ours * aa.tensor(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, b in zip(ours_in, ref_in, strict=True):
        np.testing.assert_allclose(to_numpy(a.grad), b.grad.numpy())


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_unpack_and_unpad_sequence_match_torch(torch, device, enforce_sorted):
    rng = np.random.default_rng(3)
    sizes = (4, 2, 1) if enforce_sorted else (2, 4, 1)
    arrays = [rng.standard_normal((n, 3)) for n in sizes]
    ours = R.pack_sequence([aa.tensor(a, device=device) for a in arrays], enforce_sorted)
    ref = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted)
    np.testing.assert_array_equal(to_numpy(ours.data), ref.data.numpy())
    assert ours.batch_sizes.tolist() == ref.batch_sizes.tolist()
    for mine, theirs in zip(
        R.unpack_sequence(ours), torch.nn.utils.rnn.unpack_sequence(ref), strict=True
    ):
        np.testing.assert_array_equal(to_numpy(mine), theirs.numpy())
    padded = R.pad_sequence([aa.tensor(a, device=device) for a in arrays], batch_first=True)
    pieces = R.unpad_sequence(padded, aa.tensor(list(sizes)), batch_first=True)
    for piece, a in zip(pieces, arrays, strict=True):
        np.testing.assert_array_equal(to_numpy(piece), a)


def test_packed_sequence_to_and_fields(torch):
    packed = R.pack_sequence([aa.randn(3, 2), aa.randn(2, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert data is packed.data and sorted_indices is None and unsorted_indices is None
    doubled = packed.to(aa.float64)
    assert doubled.data.dtype == aa.float64 and doubled.batch_sizes is packed.batch_sizes
    assert packed.double().data.dtype == aa.float64
    assert packed.to("cpu") is packed
    moved = R.pack_sequence([aa.randn(1, 2), aa.randn(3, 2)], enforce_sorted=False).to("sim:0")
    assert moved.data.device.type == "sim" and moved.sorted_indices.device.type == "sim"
    assert moved.batch_sizes.device.type == "cpu"
    assert not packed.is_cuda
    built = R.PackedSequence(aa.randn(3, 2), aa.tensor([2, 1]), aa.tensor([1, 0]))
    assert built.unsorted_indices.tolist() == [1, 0]
    assert R.PackedSequence((built.data, built.batch_sizes)).batch_sizes is built.batch_sizes


def error_of(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc), str(exc)
    return None


def test_errors_match_torch(torch):
    x = np.zeros((4, 3, 2))
    cases = [
        lambda m, t: m.pack_padded_sequence(t(x), [2, 3, 1]),
        lambda m, t: m.pack_padded_sequence(t(x), [3, 2]),
        lambda m, t: m.pack_padded_sequence(t(x), [3, 1, 0]),
        lambda m, t: m.pad_packed_sequence(m.pack_padded_sequence(t(x), [3, 2, 1]), total_length=2),
        lambda m, t: m.pad_sequence([t(np.zeros(2))], padding_side="middle"),
    ]
    for case in cases:
        ours = error_of(lambda case=case: case(R, aa.tensor))
        ref = error_of(lambda case=case: case(torch.nn.utils.rnn, torch.tensor))
        assert ours == ref
    with pytest.raises(RuntimeError, match="1D CPU int64 tensor, but got 2D"):
        R.pack_padded_sequence(aa.tensor(x), aa.tensor([[3, 2, 1]]))
