"""embedding, one_hot, normalize, cosine_similarity, pairwise_distance and
scaled_dot_product_attention against PyTorch, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import to_numpy

import autograd_async as aa
from autograd_async.autograd import gradcheck, gradgradcheck
from autograd_async.nn import functional as F  # noqa: N812

from .torch_reference import against_torch

RNG = np.random.default_rng(0)


def _r(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1}])
def test_embedding_matches_torch(torch, device, kwargs) -> None:
    tf = torch.nn.functional
    index = np.array([[0, 2, 4], [2, 2, 1]])
    against_torch(
        torch,
        lambda i, w: F.embedding(i, w, **kwargs),
        lambda i, w: tf.embedding(i, w, **kwargs),
        index,
        _r(5, 3),
        device=device,
        grad=[False, True],
    )


def test_embedding_max_norm_renormalises_rows_in_place(torch, device) -> None:
    table = _r(5, 3) * 3
    index = np.array([1, 3, 3])
    ours = aa.tensor(table, device=device, requires_grad=True)
    theirs = torch.tensor(table, requires_grad=True)
    out = F.embedding(aa.tensor(index, device=device), ours, max_norm=1.5, norm_type=1.0)
    ref = torch.nn.functional.embedding(torch.tensor(index), theirs, max_norm=1.5, norm_type=1.0)
    np.testing.assert_allclose(to_numpy(out), ref.detach().numpy(), rtol=1e-7)
    np.testing.assert_allclose(to_numpy(ours), theirs.detach().numpy(), rtol=1e-7)


def test_one_hot_matches_torch(torch, device) -> None:
    index = np.array([[0, 3], [2, 1]])
    for classes in (-1, 6):
        ours = F.one_hot(aa.tensor(index, device=device), classes)
        ref = torch.nn.functional.one_hot(torch.tensor(index), classes)
        assert ours.dtype == aa.int64 and ours.device == aa.device(device)
        np.testing.assert_array_equal(to_numpy(ours), ref.numpy())


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_p_norms_match_torch(torch, device, p) -> None:
    tf = torch.nn.functional
    a = _r(4, 5)
    a[1] = 0  # an all-zero vector: clamped by eps, with a finite gradient
    against_torch(
        torch, lambda x: F.normalize(x, p=p), lambda x: tf.normalize(x, p=p), a, device=device
    )
    against_torch(
        torch,
        lambda x, y: F.pairwise_distance(x, y, p=p),
        lambda x, y: tf.pairwise_distance(x, y, p=p),
        _r(4, 5),
        _r(4, 5),
        device=device,
    )


def test_distances_match_torch(torch, device) -> None:
    tf = torch.nn.functional
    a, b = _r(4, 5), _r(4, 5)
    a[1] = 0
    against_torch(
        torch,
        lambda x: F.normalize(x, dim=0),
        lambda x: tf.normalize(x, dim=0),
        _r(3, 4),
        device=device,
    )
    against_torch(
        torch,
        lambda x, y: F.pairwise_distance(x, y, keepdim=True),
        lambda x, y: tf.pairwise_distance(x, y, keepdim=True),
        _r(2, 3, 5),
        _r(3, 5),
        device=device,
    )
    against_torch(torch, F.cosine_similarity, tf.cosine_similarity, a, b, device=device)
    against_torch(
        torch,
        lambda x, y: F.cosine_similarity(x, y, dim=-1),
        lambda x, y: tf.cosine_similarity(x, y, dim=-1),
        _r(2, 3, 5),
        _r(3, 5),
        device=device,
    )


ATTENTION_CASES = [
    {},
    {"is_causal": True},
    {"scale": 0.3},
    {"mask": "bool"},
    {"mask": "float"},
]


@pytest.mark.parametrize("case", ATTENTION_CASES)
def test_scaled_dot_product_attention_matches_torch(torch, device, case) -> None:
    kwargs = {k: v for k, v in case.items() if k != "mask"}
    q, k, v = _r(2, 3, 4, 5), _r(2, 3, 6, 5), _r(2, 3, 6, 7)
    if "mask" not in case:
        against_torch(
            torch,
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs),
            lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs),
            q,
            k,
            v,
            device=device,
        )
        return
    if case["mask"] == "bool":
        mask = RNG.random((4, 6)) < 0.7
        mask[:, 0] = True  # every query sees at least one key
    else:
        mask = _r(4, 6)
    against_torch(
        torch,
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        lambda q, k, v, m: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
        q,
        k,
        v,
        mask,
        device=device,
        grad=[True, True, True, mask.dtype != np.bool_],
    )


def test_attention_dropout_zeroes_weights_and_scales_the_rest(device) -> None:
    q = aa.randn(1, 8, 4, device=device, requires_grad=True)
    v = aa.ones(1, 8, 3, device=device)
    aa.manual_seed(0)
    out = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
    rows = to_numpy(out)[0, :, 0]
    # Each row is the sum of its kept softmax weights times 2: not all rows equal one any more.
    assert not np.allclose(rows, 1.0) and np.all(rows >= 0) and np.all(rows <= 2.0 + 1e-6)
    out.sum().backward()
    assert q.grad is not None and q.grad.device == aa.device(device)
    none = F.scaled_dot_product_attention(q, q, v, dropout_p=0.0)
    np.testing.assert_allclose(to_numpy(none), 1.0, rtol=1e-5)


def test_float32_stays_float32(device) -> None:
    q = aa.randn(2, 3, 4, device=device, requires_grad=True)
    w = aa.randn(5, 4, device=device, requires_grad=True)
    out = (
        F.scaled_dot_product_attention(q, q, q, is_causal=True).sum()
        + F.embedding(aa.tensor([1, 2], device=device), w).sum()
        + F.cosine_similarity(q, q).sum()
        + F.normalize(q).sum()
    )
    out.backward()
    assert out.dtype == q.grad.dtype == w.grad.dtype == aa.float32


def test_gradcheck_and_gradgradcheck(device) -> None:
    def t(*shape: int) -> aa.Tensor:
        return aa.tensor(_r(*shape), device=device, requires_grad=True)

    index = aa.tensor([[0, 2], [2, 1]], device=device)
    for fn, args in (
        (lambda w: F.embedding(index, w), (t(3, 2),)),  # padding_idx: no gradient by design
        (lambda x: F.normalize(x, p=3.0), (t(2, 3),)),
        (lambda x, y: F.cosine_similarity(x, y), (t(2, 3), t(2, 3))),
        (lambda x, y: F.pairwise_distance(x, y), (t(2, 3), t(2, 3))),
        (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            (t(2, 3, 2), t(2, 3, 2), t(2, 3, 2)),
        ),
    ):
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: F.one_hot(aa.tensor([1.0])),
            RuntimeError,
            r"one_hot is only applicable to index tensor of type LongTensor.",
        ),
        (lambda: F.one_hot(aa.tensor([-1])), RuntimeError, r"Class values must be non-negative."),
        (
            lambda: F.one_hot(aa.tensor([3]), 3),
            RuntimeError,
            r"Class values must be smaller than num_classes.",
        ),
        (
            lambda: F.embedding(aa.tensor([1.0]), aa.randn(3, 2)),
            RuntimeError,
            r"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            r"Long, Int",
        ),
        (lambda: F.embedding(aa.tensor([5]), aa.randn(3, 2)), IndexError, r"index out of range"),
        (
            lambda: F.embedding(aa.tensor([1]), aa.randn(3, 2), padding_idx=5),
            ValueError,
            r"Padding_idx must be within num_embeddings",
        ),
        (
            lambda: F.scaled_dot_product_attention(
                aa.randn(2, 3, 4),
                aa.randn(2, 3, 4),
                aa.randn(2, 3, 4),
                attn_mask=aa.ones(3, 3, dtype=aa.bool_),
                is_causal=True,
            ),
            RuntimeError,
            r"Explicit attn_mask should not be set when is_causal=True",
        ),
        (
            lambda: F.scaled_dot_product_attention(
                aa.randn(2, 3, 4), aa.randn(2, 3, 5), aa.randn(2, 3, 4)
            ),
            RuntimeError,
            r"scaled_dot_product_attention: expected query and key with the same embedding size",
        ),
        (
            lambda: F.cosine_similarity(aa.randn(2, 3, 4), aa.randn(2, 4, 4)),
            RuntimeError,
            r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
            r"dimension 1",
        ),
        (
            lambda: F.pairwise_distance(aa.randn(2, 3, 4), aa.randn(2, 3, 5)),
            RuntimeError,
            r"The size of tensor a \(4\) must match the size of tensor b \(5\) at non-singleton "
            r"dimension 2",
        ),
    ],
)
def test_bad_arguments_raise_pytorch_errors(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()
