"""`aa.cuda.amp`: PyTorch's deprecated `torch.cuda.amp` names (use `aa.amp` with "cuda")."""

from ..amp.deprecated_aliases import CudaAutocast as autocast
from ..amp.deprecated_aliases import CudaGradScaler as GradScaler
from ..amp.deprecated_aliases import cuda_custom_bwd as custom_bwd
from ..amp.deprecated_aliases import cuda_custom_fwd as custom_fwd

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
