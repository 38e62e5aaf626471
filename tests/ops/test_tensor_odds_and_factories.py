"""set_default_device, empty_permuted, frombuffer, nonzero_static, narrow_copy, get_device,
is_storage and the top-level resize_as_/as_strided_, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import autograd_async as aa


def test_default_device_is_honoured_by_factories_and_restored(device):
    try:
        aa.set_default_device(device)
        assert aa.get_default_device() == aa.device(device)
        made = [
            aa.zeros(2),
            aa.ones(2),
            aa.empty(2),
            aa.full((2,), 1.0),
            aa.tensor([1, 2]),
            aa.arange(3),
            aa.linspace(0, 1, 3),
            aa.eye(2),
            aa.rand(2),
            aa.randn(2),
            aa.randint(0, 3, (2,)),
            aa.hann_window(4),
            aa.empty_permuted((2, 3), (1, 0)),
        ]
        assert all(t.device == aa.device(device) for t in made)
        assert aa.zeros(1, device="cpu").device == aa.device("cpu")
        assert aa.from_numpy(np.zeros(2)).device == aa.device("cpu")
    finally:
        aa.set_default_device(None)
    assert aa.get_default_device() == aa.device("cpu") and aa.zeros(1).device.type == "cpu"


def test_empty_permuted_matches_torch(torch):
    for size, layout in [((2, 3, 5, 7), (0, 2, 3, 1)), ((4, 6), (1, 0)), ((3,), (0,))]:
        ours, theirs = aa.empty_permuted(size, layout), torch.empty_permuted(size, layout)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.stride() == theirs.stride()
    for size, layout, text in [
        ((2, 3), (0,), "len(size) = 2 is not equal to len("),
        ((2, 3), (0, 0), "Duplicate dim not allowed"),
    ]:
        for lib in (aa, torch):
            with pytest.raises(RuntimeError) as info:
                lib.empty_permuted(size, layout)
            assert text in str(info.value)


def test_frombuffer_shares_memory_and_matches_torch(torch):
    buffer = bytearray(np.arange(4, dtype=np.float32).tobytes())
    t = aa.frombuffer(buffer, dtype=aa.float32, offset=4, count=2)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    t[0] = 7.0
    assert np.frombuffer(buffer, dtype=np.float32)[1] == 7.0
    ref = torch.frombuffer(buffer, dtype=torch.float32)
    np.testing.assert_array_equal(aa.frombuffer(buffer, dtype=aa.float32).numpy(), ref.numpy())
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        assert aa.frombuffer(b"abcd", dtype=aa.uint8).tolist() == [97, 98, 99, 100]
    cases = [
        (bytearray(b""), {}, "both buffer length (0) and count (-1) must not be 0"),
        (bytearray(7), {}, "buffer length (7 bytes) after offset (0 bytes) must be a multiple"),
        (bytearray(8), {"offset": 9}, "offset (9 bytes) must be non-negative and no greater"),
        (bytearray(8), {"count": 3}, "requested buffer length (3 * 4 bytes) after offset"),
    ]
    for data, kwargs, text in cases:
        for lib in (aa, torch):
            with pytest.raises(ValueError) as info:
                lib.frombuffer(data, dtype=lib.float32, **kwargs)
            assert text in str(info.value)


def test_nonzero_static_matches_torch(torch, device):
    data = [[0, 1], [2, 0]]
    for kwargs in ({"size": 4}, {"size": 1, "fill_value": 9}, {"size": 3, "fill_value": -5}):
        ours = aa.nonzero_static(aa.tensor(data, device=device), **kwargs)
        assert ours.device == aa.device(device)
        ref = torch.nonzero_static(torch.tensor(data), **kwargs)
        np.testing.assert_array_equal(ours.cpu().numpy(), ref.numpy())
        assert aa.tensor(data).nonzero_static(**kwargs).tolist() == ref.tolist()
    assert tuple(aa.nonzero_static(aa.tensor(0), size=2).shape) == (2, 0)
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        aa.nonzero_static(aa.tensor(data), size=-1)


def test_small_names_match_torch(torch, device):
    x = aa.arange(6, device=device).view(2, 3)
    copy = x.narrow_copy(1, 1, 2)
    assert copy.is_contiguous() and copy.tolist() == [[1, 2], [4, 5]]
    assert aa.narrow_copy(x, 0, 1, 1).tolist() == [[3, 4, 5]]
    assert aa.ones(1).get_device() == torch.ones(1).get_device() == -1
    assert aa.ones(1, device=device).get_device() == aa.get_device(aa.ones(1, device=device))
    assert aa.is_storage(x) is False and aa.is_storage(x.cpu().numpy()) is False
    a = aa.ones(2, 3, device=device)
    assert aa.resize_as_(a, aa.ones(6)) is a and tuple(a.shape) == (6,)
    b = aa.arange(6.0, device=device)
    assert aa.as_strided_(b, (2, 2), (1, 2)) is b and b.tolist() == [[0.0, 2.0], [1.0, 3.0]]
