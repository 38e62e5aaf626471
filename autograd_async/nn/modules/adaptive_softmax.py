"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"):
frequent classes in a head softmax, rarer ones in clusters reached through the head."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ... import creation
from ...core.tensor import Tensor
from ...ops.elementwise import where
from ...ops.shape import cat
from .. import functional as F  # noqa: N812 - PyTorch's alias
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log probabilities of targets under an adaptive softmax, and their mean negative."""

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        make = {"device": device, "dtype": dtype}
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **make)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **make),
                    Linear(hidden, size, bias=False, **make),
                )
            )

    def reset_parameters(self) -> None:
        """Every Linear's own initialisation again."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection.children():
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """(log probability of each target, mean negative log probability)."""
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension."
                )
            if input_.dim() != 2:
                raise RuntimeError(
                    f"1D target tensor expects 2D input tensors, but found inputs with size "
                    f"{list(input_.shape)}"
                )
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(
                    f"0D target tensor expects 1D input tensors, but found inputs with size "
                    f"{list(input_.shape)}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        labels = np.asarray(target.detach().cpu().__array__()).astype(np.int64)
        bounds = [0, *self.cutoffs]
        if labels.size and (labels.min() < 0 or labels.max() >= self.n_classes):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{labels.min()}, {labels.max()}] were found. "
            )
        head_index = labels.copy()
        output = creation.zeros(labels.shape[0], dtype=input.dtype, device=input.device)
        for i in range(1, len(bounds) - 1):
            members = (labels >= bounds[i]) & (labels < bounds[i + 1])
            if not members.any():
                continue
            head_index[members] = self.shortlist_size + i - 1
            local = np.where(members, labels - bounds[i], 0)
            logprob = F.log_softmax(self.tail[i - 1](input), dim=1)
            picked = logprob.gather(1, self._labels(local, input).unsqueeze(1)).squeeze(1)
            output = output + where(self._labels(members, input), picked, 0.0)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(
            1, self._labels(head_index, input).unsqueeze(1)
        ).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    @staticmethod
    def _labels(values: np.ndarray, like: Tensor) -> Tensor:
        return creation.tensor(values, device=like.device)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log probabilities of every class, (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row."""
        return self.log_prob(input).argmax(dim=1)


__all__ = ["AdaptiveLogSoftmaxWithLoss"]
