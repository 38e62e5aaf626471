"""PyTorch's `torch.autograd` surface: backward, grad (and their awaitable forms), Function, modes."""

from ..core.graph import Node
from ..grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from . import functional, graph, tensor_methods  # noqa: F401 - installs Tensor.backward
from .api import backward, backward_async, grad, grad_async
from .function import Function, FunctionCtx
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "Function",
    "FunctionCtx",
    "Node",
    "backward",
    "backward_async",
    "detect_anomaly",
    "functional",
    "graph",
    "enable_grad",
    "grad",
    "grad_async",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_inference_mode_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
    "Variable",
]
