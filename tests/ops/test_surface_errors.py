"""Bad input to each op of the promised surface is a clear error naming the op, in PyTorch's
words where PyTorch has clear words of its own.

Each row is `(call, error type, pattern, same_in_torch)`: `call(m, F)` runs with `m` this library
and `F` its nn.functional; when `same_in_torch` is true it also runs with torch and
torch.nn.functional and must raise the same type with a message the pattern matches. Rows marked
false are errors PyTorch words otherwise (or reports with an AttributeError) and ours name the op.
"""

from __future__ import annotations

import warnings

import pytest

import autograd_async as aa
from autograd_async.nn import functional as aa_F

L = [1.0, 2.0]


def _not_tensor(name: str, argument: str = "input", position: int = 1) -> str:
    """The TypeError for a list where a tensor belongs; PyTorch adds the position."""
    return (
        rf"^{name}\(\): argument '{argument}'( \(position {position}\))? must be Tensor, "
        "not list"
    )


def _out_of_range(got: int, low: int = -2, high: int = 1) -> str:
    return (
        rf"Dimension out of range \(expected to be in range of \[{low}, {high}\], but got "
        rf"{got}\)"
    )


def _sizes(a: int, b: int, dim: int) -> str:
    return (
        rf"The size of tensor a \({a}\) must match the size of tensor b \({b}\) at "
        rf"non-singleton dimension {dim}"
    )


T, R, I, N = TypeError, RuntimeError, IndexError, NotImplementedError  # noqa: E741

ERRORS = {
    # ------------------------------------------------------------ creation
    "empty_negative": (
        lambda m, F: m.empty(-1),
        R,
        r"Trying to create tensor with negative dimension -1: \[-1\]",
        True,
    ),
    "new_zeros_negative": (
        lambda m, F: m.zeros(2).new_zeros(2, -3),
        R,
        r"Trying to create tensor with negative dimension -3: \[2, -3\]",
        True,
    ),
    "empty_like_list": (lambda m, F: m.empty_like(L), T, _not_tensor("empty_like"), True),
    "full_like_list": (lambda m, F: m.full_like(L, 2.0), T, _not_tensor("full_like"), True),
    "numel_list": (lambda m, F: m.numel(L), T, _not_tensor("numel"), True),
    # ---------------------------------------------------- shape and views
    "narrow_dim": (lambda m, F: m.zeros(3, 4).narrow(2, 0, 1), I, _out_of_range(2), True),
    "select_dim": (lambda m, F: m.zeros(3, 4).select(-3, 0), I, _out_of_range(-3), True),
    "view_as_size": (
        lambda m, F: m.zeros(3, 3).view_as(m.zeros(5)),
        R,
        r"shape '\[5\]' is invalid for input of size 9",
        True,
    ),
    "expand_as_size": (
        lambda m, F: m.zeros(3, 4).expand_as(m.zeros(3, 5)),
        R,
        r"The expanded size of the tensor \(5\) must match the existing size \(4\) "
        r"at non-singleton dimension 1",
        True,
    ),
    "swapaxes_dim": (lambda m, F: m.zeros(3, 4).swapaxes(0, 2), I, _out_of_range(2), True),
    "split_negative_sizes": (
        lambda m, F: m.zeros(3, 4).split([4, -1]),
        R,
        r"split_with_sizes expects split_sizes have only non-negative "
        r"entries, but got split_sizes=\[4, -1\]",
        True,
    ),
    "split_negative_size": (
        lambda m, F: m.zeros(3, 4).split(-1),
        R,
        r"split expects split_size be non-negative, but got split_size=-1",
        True,
    ),
    "split_zero_size": (
        lambda m, F: m.zeros(3, 4).split(0),
        R,
        r"split_size can only be 0 if dimension size is 0, but got dimension size "
        r"of 3",
        True,
    ),
    "diagonal_dim": (lambda m, F: m.zeros(3, 4).diagonal(0, 0, 2), I, _out_of_range(2), True),
    # ------------------------------------------------------------ indexing
    "nonzero_list": (lambda m, F: m.nonzero(L), T, _not_tensor("nonzero"), True),
    "sort_list": (lambda m, F: m.sort(L), T, _not_tensor("sort"), True),
    "argsort_list": (lambda m, F: m.argsort(L), T, _not_tensor("argsort"), True),
    "topk_list": (lambda m, F: m.topk(L, 1), T, _not_tensor("topk"), True),
    "kthvalue_list": (lambda m, F: m.kthvalue(L, 1), T, _not_tensor("kthvalue"), True),
    "where_condition": (
        lambda m, F: m.where(m.ones(2), m.ones(2), m.ones(2)),
        R,
        r"where expected condition to be a boolean tensor, but got a tensor with "
        r"dtype",
        True,
    ),
    "where_shapes": (
        lambda m, F: m.where(m.tensor([True, False]), m.ones(3), 0.0),
        R,
        _sizes(2, 3, 0),
        True,
    ),
    "scatter_inplace_index": (
        lambda m, F: m.zeros(3, 4).scatter_(0, m.tensor([[9]]), m.ones(1, 1)),
        R,
        r"index 9 is out of bounds for dimension 0 with size 3",
        True,
    ),
    "scatter_add_inplace_index": (
        lambda m, F: m.zeros(3, 4).scatter_add_(1, m.tensor([[7]]), m.ones(1, 1)),
        R,
        r"index 7 is out of bounds for dimension 1 with size 4",
        True,
    ),
    "max_dim": (lambda m, F: m.zeros(2, 3).max(2), I, _out_of_range(2), True),
    "min_dim": (lambda m, F: m.min(m.zeros(2, 3), -3, keepdim=True), I, _out_of_range(-3), True),
    # ---------------------------------------------------------------- math
    "dot_2d": (
        lambda m, F: m.dot(m.zeros(2, 2), m.zeros(2)),
        R,
        r"1D tensors expected, but got 2D and 1D tensors",
        True,
    ),
    "dot_lengths": (
        lambda m, F: m.zeros(3).dot(m.zeros(4)),
        R,
        r"inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the "
        r"same number of elements, but got 3 and 4 elements respectively",
        True,
    ),
    "dot_dtypes": (
        lambda m, F: m.dot(m.zeros(3), m.zeros(3).double()),
        R,
        r"dot : expected both vectors to have same dtype, but found Float and Double",
        True,
    ),
    "baddbmm_2d": (
        lambda m, F: m.baddbmm(m.zeros(2, 2), m.zeros(2, 2), m.zeros(2, 2)),
        R,
        r"baddbmm: batch1 must be a 3D tensor, got 2D",
        False,
    ),
    "baddbmm_sizes": (
        lambda m, F: m.baddbmm(m.zeros(2, 3, 5), m.zeros(2, 3, 4), m.zeros(2, 5, 5)),
        R,
        r"Expected size for first two dimensions of batch2 tensor to be: \[2, 4\] "
        r"but got: \[2, 5\]\.",
        True,
    ),
    "addmm_sizes": (
        lambda m, F: m.addmm(m.zeros(3, 5), m.zeros(3, 4), m.zeros(3, 5)),
        R,
        r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x5\)",
        True,
    ),
    "mv_1d": (
        lambda m, F: m.mv(m.zeros(3), m.zeros(3)),
        R,
        r"mv: expected a 2D matrix and a 1D vector, got 1D and 1D",
        False,
    ),
    "outer_list": (lambda m, F: m.outer(L, m.zeros(2)), T, _not_tensor("outer"), False),
    "einsum_output": (
        lambda m, F: m.einsum("ij->k", m.zeros(2, 2)),
        R,
        r"einsum\(\): output subscript k does not appear in the equation for any "
        r"input operand",
        True,
    ),
    "var_integer": (
        lambda m, F: m.var(m.tensor([1, 2])),
        R,
        r"std and var only support floating point and complex dtypes",
        True,
    ),
    "std_integer": (
        lambda m, F: m.tensor([1, 2]).std(),
        R,
        r"std and var only support floating point and complex dtypes",
        True,
    ),
    "var_mean_integer": (
        lambda m, F: m.var_mean(m.tensor([1, 2])),
        R,
        r"var_mean only support floating point and complex dtypes",
        True,
    ),
    "std_mean_integer": (
        lambda m, F: m.std_mean(m.tensor([1, 2])),
        R,
        r"std_mean only support floating point and complex dtypes",
        True,
    ),
    "std_mean_dim": (lambda m, F: m.std_mean(m.zeros(2, 3), 2), I, _out_of_range(2), True),
    "linalg_norm_fro_of_vector": (
        lambda m, F: m.linalg.norm(m.zeros(3), "fro"),
        R,
        r"linalg.matrix_norm: The input tensor A must have at least 2 "
        r"dimensions\.",
        True,
    ),
    "vector_norm_dim": (
        lambda m, F: m.linalg.vector_norm(m.zeros(2, 3), dim=2),
        I,
        _out_of_range(2),
        True,
    ),
    "norm_integer": (
        lambda m, F: m.norm(m.tensor([1, 2])),
        R,
        r"linalg.vector_norm: Expected a floating point or complex tensor as input\. "
        r"Got Long",
        True,
    ),
    "matrix_norm_dim": (
        lambda m, F: m.norm(m.zeros(2, 3), "nuc", dim=0),
        R,
        r"linalg.matrix_norm: dim must be a 2-tuple\. Got 0",
        True,
    ),
    "logsumexp_dim": (lambda m, F: m.logsumexp(m.zeros(2, 3), 2), I, _out_of_range(2), True),
    "amax_empty": (
        lambda m, F: m.amax(m.zeros(0)),
        R,
        r"amax\(\): Expected reduction dim to be specified for input\.numel\(\) == 0",
        True,
    ),
    "amin_repeated_dim": (
        lambda m, F: m.amin(m.zeros(2, 3), (0, 0)),
        R,
        r"dim 0 appears multiple times in the list of dims",
        True,
    ),
    "prod_dim": (lambda m, F: m.prod(m.zeros(2, 3), 2), I, _out_of_range(2), True),
    "cumsum_list": (lambda m, F: m.cumsum(L, 0), T, _not_tensor("cumsum"), True),
    "cumprod_list": (lambda m, F: m.cumprod(L, 0), T, _not_tensor("cumprod"), True),
    "erf_list": (lambda m, F: m.erf(L), T, _not_tensor("erf"), True),
    "reciprocal_list": (lambda m, F: m.reciprocal(L), T, _not_tensor("reciprocal"), True),
    "square_list": (lambda m, F: m.square(L), T, _not_tensor("square"), True),
    "erf_complex": (
        lambda m, F: m.erf(m.tensor([0.5 + 1j])),
        R,
        r"erf: complex tensors are not supported",
        False,
    ),
    "hypot_integers": (
        lambda m, F: m.hypot(m.tensor([3]), m.tensor([4])),
        N,
        r"\"hypot_cpu\" not implemented for 'Long'",
        True,
    ),
    "hypot_number": (
        lambda m, F: m.hypot(m.zeros(2), 1.0),
        T,
        r"^hypot\(\): argument 'other' \(position 2\) must be Tensor, not float",
        True,
    ),
    "hypot_shapes": (lambda m, F: m.hypot(m.zeros(2), m.zeros(3)), R, _sizes(2, 3, 0), True),
    "maximum_number": (
        lambda m, F: m.maximum(m.zeros(2), 1.0),
        T,
        r"^maximum\(\): argument 'other' \(position 2\) must be Tensor, not float",
        True,
    ),
    "minimum_list": (lambda m, F: m.minimum(L, m.zeros(2)), T, _not_tensor("minimum"), True),
    "maximum_complex": (
        lambda m, F: m.maximum(m.tensor([1j]), m.tensor([1j])),
        R,
        r"maximum not implemented for complex tensors\.",
        True,
    ),
    "minimum_shapes": (lambda m, F: m.minimum(m.zeros(2), m.zeros(3)), R, _sizes(2, 3, 0), True),
    "atan2_shapes": (lambda m, F: m.atan2(m.zeros(2), m.zeros(3)), R, _sizes(2, 3, 0), True),
    "lerp_shapes": (lambda m, F: m.lerp(m.zeros(2), m.zeros(3), 0.5), R, _sizes(2, 3, 0), True),
    "clamp_shapes": (lambda m, F: m.clamp(m.zeros(2), m.zeros(3)), R, _sizes(2, 3, 0), True),
    "isnan_list": (lambda m, F: m.isnan(L), T, _not_tensor("isnan"), True),
    "isinf_list": (lambda m, F: m.isinf(L), T, _not_tensor("isinf"), True),
    "isfinite_list": (lambda m, F: m.isfinite(L), T, _not_tensor("isfinite"), True),
    "allclose_shapes": (lambda m, F: m.allclose(m.zeros(2), m.zeros(3)), R, _sizes(2, 3, 0), True),
    "allclose_dtypes": (
        lambda m, F: m.allclose(m.zeros(2), m.zeros(2).double()),
        R,
        r"Float did not match Double",
        True,
    ),
    "equal_list": (lambda m, F: m.equal(m.zeros(2), L), T, _not_tensor("equal", "other", 2), True),
    "any_dim": (lambda m, F: m.any(m.zeros(2), 1), I, _out_of_range(1, -1, 0), True),
    "all_list": (lambda m, F: m.all(L), T, _not_tensor("all"), False),
    # ------------------------------------------------------- nn.functional
    "conv1d_list": (lambda m, F: F.conv1d(L, m.zeros(1, 1, 1)), T, _not_tensor("conv1d"), False),
    "conv3d_dims": (
        lambda m, F: F.conv3d(m.zeros(2, 3, 4), m.zeros(1, 3, 1, 1, 1)),
        R,
        r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv3d, but got input "
        r"of size: \[2, 3, 4\]",
        True,
    ),
    "conv_transpose1d_dims": (
        lambda m, F: F.conv_transpose1d(m.zeros(1, 2, 3, 4), m.zeros(2, 1, 2)),
        R,
        r"Expected 2D \(unbatched\) or 3D \(batched\) input to "
        r"conv_transpose1d, but got input of size: \[1, 2, 3, 4\]",
        True,
    ),
    "max_pool2d_list": (
        lambda m, F: F.max_pool2d([[[1.0]]], 1),
        T,
        _not_tensor("max_pool2d"),
        True,
    ),
    "avg_pool1d_dims": (
        lambda m, F: F.avg_pool1d(m.zeros(1, 2, 3, 4), 2),
        R,
        r"avg_pool1d: Expected 2D or 3D \(batch mode\) non-empty tensor for input",
        False,
    ),
    "avg_pool2d_dims": (
        lambda m, F: F.avg_pool2d(m.zeros(3, 4), 2),
        R,
        r"avg_pool2d: Expected 3D or 4D \(batch mode\) non-empty tensor for input",
        False,
    ),
    "pad_list": (lambda m, F: F.pad(L, (1, 1)), T, _not_tensor("pad"), True),
    "interpolate_bilinear_3d": (
        lambda m, F: F.interpolate(m.zeros(1, 2, 3), size=4, mode="bilinear"),
        N,
        r"Got 3D input, but bilinear mode needs 4D input",
        True,
    ),
    "batch_norm_list": (
        lambda m, F: F.batch_norm([[1.0]], None, None, training=True),
        T,
        _not_tensor("batch_norm"),
        False,
    ),
    "layer_norm_weight": (
        lambda m, F: F.layer_norm(m.zeros(2, 3), (3,), m.ones(2)),
        R,
        r"Expected weight to be of same shape as normalized_shape, but got "
        r"weight of shape \[2\] and normalized_shape = \[3\]",
        True,
    ),
    "group_norm_1d": (
        lambda m, F: F.group_norm(m.zeros(3), 1),
        R,
        r"Expected at least 2 dimensions for input tensor but received 1",
        True,
    ),
    "instance_norm_list": (lambda m, F: F.instance_norm(L), T, _not_tensor("instance_norm"), False),
    "embedding_weight_1d": (
        lambda m, F: F.embedding(m.tensor([0]), m.zeros(3)),
        R,
        r"'weight' must be 2-D",
        True,
    ),
    "one_hot_list": (lambda m, F: F.one_hot([1]), T, _not_tensor("one_hot"), True),
    "normalize_list": (lambda m, F: F.normalize(L), T, _not_tensor("normalize"), False),
    "normalize_dim": (
        lambda m, F: F.normalize(m.zeros(2), dim=1),
        I,
        _out_of_range(1, -1, 0),
        True,
    ),
    "cosine_similarity_list": (
        lambda m, F: F.cosine_similarity(L, m.zeros(2), dim=0),
        T,
        _not_tensor("cosine_similarity", "x1"),
        True,
    ),
    "pairwise_distance_list": (
        lambda m, F: F.pairwise_distance(m.zeros(2), L),
        T,
        _not_tensor("pairwise_distance", "x2", 2),
        True,
    ),
    "sdpa_mask_shape": (
        lambda m, F: F.scaled_dot_product_attention(
            m.zeros(1, 2, 3), m.zeros(1, 2, 3), m.zeros(1, 2, 3), attn_mask=m.zeros(3, 3)
        ),
        R,
        _sizes(2, 3, 2),
        True,
    ),
    "sdpa_dropout": (
        lambda m, F: F.scaled_dot_product_attention(
            m.zeros(1, 2, 3), m.zeros(1, 2, 3), m.zeros(1, 2, 3), dropout_p=1.5
        ),
        R,
        r"dropout probability has to be between 0 and 1, but got 1\.5",
        True,
    ),
    # -------------------------------------------------------- activations
    **{
        f"{name}_list": (lambda m, F, name=name: getattr(F, name)(L), T, _not_tensor(kernel), True)
        for name, kernel in (
            ("silu", "silu"),
            ("leaky_relu", "leaky_relu"),
            ("elu", "elu"),
            ("selu", "selu"),
            ("celu", "celu"),
            ("softplus", "softplus"),
            ("mish", "mish"),
            ("hardtanh", "hardtanh"),
            ("relu6", "relu6"),
            ("hardsigmoid", "hardsigmoid"),
            ("hardswish", "hardswish"),
            ("logsigmoid", "log_sigmoid"),
            ("gelu", "gelu"),
        )
    },
    **{
        f"{name}_list": (lambda m, F, name=name: getattr(F, name)(L), T, _not_tensor(name), False)
        for name in ("softsign", "tanhshrink", "glu")
    },
    "prelu_list": (lambda m, F: F.prelu(L, m.ones(1)), T, _not_tensor("prelu"), True),
    "prelu_integers": (
        lambda m, F: F.prelu(m.tensor([1]), m.tensor([1])),
        N,
        r"\"prelu_cpu\" not implemented for 'Long'",
        True,
    ),
    "gelu_integers": (
        lambda m, F: F.gelu(m.tensor([1])),
        N,
        r"\"GeluKernelImpl\" not implemented for 'Long'",
        True,
    ),
    "gelu_approximate": (
        lambda m, F: F.gelu(m.zeros(2), approximate="foo"),
        R,
        r"approximate argument must be either none or tanh",
        True,
    ),
    "glu_dim": (lambda m, F: F.glu(m.zeros(2, 4), 2), I, _out_of_range(2), True),
    # ------------------------------------------------------------- losses
    "nll_loss_0d": (
        lambda m, F: F.nll_loss(m.tensor(1.0), m.tensor(1)),
        ValueError,
        r"Expected 1 or more dimensions \(got 0\)",
        True,
    ),
    "binary_cross_entropy_long_target": (
        lambda m, F: F.binary_cross_entropy(m.zeros(2), m.tensor([0, 1])),
        R,
        r"Found dtype Long but expected Float",
        True,
    ),
    "bce_with_logits_pos_weight": (
        lambda m, F: F.binary_cross_entropy_with_logits(
            m.zeros(2, 3), m.zeros(2, 3), pos_weight=m.ones(2)
        ),
        R,
        _sizes(2, 3, 1),
        True,
    ),
    "l1_loss_shapes": (lambda m, F: F.l1_loss(m.zeros(2), m.zeros(3)), R, _sizes(2, 3, 0), True),
    "smooth_l1_loss_shapes": (
        lambda m, F: F.smooth_l1_loss(m.zeros(2), m.zeros(3)),
        R,
        _sizes(2, 3, 0),
        True,
    ),
    "huber_loss_shapes": (
        lambda m, F: F.huber_loss(m.zeros(2), m.zeros(3)),
        R,
        _sizes(2, 3, 0),
        True,
    ),
    "kl_div_list": (lambda m, F: F.kl_div(L, m.zeros(2)), T, _not_tensor("kl_div"), True),
    "kl_div_shapes": (
        lambda m, F: F.kl_div(m.zeros(2), m.zeros(3), reduction="sum"),
        R,
        _sizes(3, 2, 0),
        True,
    ),
    "margin_ranking_loss_list": (
        lambda m, F: F.margin_ranking_loss(L, m.ones(2), m.ones(2)),
        T,
        _not_tensor("margin_ranking_loss", "input1"),
        False,
    ),
    "margin_ranking_loss_target": (
        lambda m, F: F.margin_ranking_loss(m.zeros(2), m.zeros(2), m.zeros(3)),
        R,
        _sizes(3, 2, 0),
        True,
    ),
    "cosine_embedding_loss_list": (
        lambda m, F: F.cosine_embedding_loss([[1.0]], m.ones(1, 1), m.ones(1)),
        T,
        _not_tensor("cosine_embedding_loss", "input1"),
        True,
    ),
}


def _raises(call, error: type, pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # size-mismatch and reduction warnings, in both libraries
        with pytest.raises(error, match=pattern):
            call()


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_names_the_op(name: str) -> None:
    call, error, pattern, _ = ERRORS[name]
    _raises(lambda: call(aa, aa_F), error, pattern)


@pytest.mark.parametrize("name", [n for n, row in ERRORS.items() if row[3]])
def test_pytorch_raises_the_same(torch, name: str) -> None:
    call, error, pattern, _ = ERRORS[name]
    _raises(lambda: call(torch, torch.nn.functional), error, pattern)


def test_unfold_and_fold_refuse_other_ranks() -> None:
    # PyTorch raises a RuntimeError worded otherwise; ours (a NotImplementedError) names the rank.
    with pytest.raises(
        NotImplementedError,
        match=r"Only 3D or 4D input Tensors are supported "
        r"\(got 5D\)",
    ):
        aa_F.unfold(aa.zeros(1, 1, 2, 2, 2), 1)
    with pytest.raises(
        NotImplementedError,
        match=r"Only unbatched \(2D\) or batched \(3D\) input "
        r"Tensors are supported \(got 4D\)",
    ):
        aa_F.fold(aa.zeros(1, 1, 2, 2), 2, 1)
