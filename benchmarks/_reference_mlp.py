"""The MLP of the MLP benchmarks built in PyTorch from the same weights (cpu or cuda)."""

from __future__ import annotations

from typing import Any


def torch_mlp(torch: Any, weights: list) -> Any:
    """`Linear`/`ReLU` layers holding copies of `weights` ((w, b) pairs), as a Sequential."""
    layers: list[Any] = []
    for i, (w, b) in enumerate(weights):
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
        layers.append(linear)
        if i < len(weights) - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)
