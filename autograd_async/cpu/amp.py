"""`aa.cpu.amp`: PyTorch's deprecated `torch.cpu.amp` names (use `aa.amp` with "cpu")."""

from ..amp.deprecated_aliases import CpuAutocast as autocast
from ..amp.deprecated_aliases import CpuGradScaler as GradScaler

__all__ = ["GradScaler", "autocast"]
