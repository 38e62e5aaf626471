"""`autograd_async.linalg`: PyTorch's `torch.linalg` names for the norms and products in ops."""

from .ops.arithmetic import matmul
from .ops.cholesky import cholesky, solve_triangular
from .ops.linalg import linalg_norm as norm
from .ops.linalg import matrix_norm, svdvals, vector_norm

__all__ = ["matmul", "matrix_norm", "norm", "svdvals", "vector_norm"]
__all__ += ["cholesky", "solve_triangular"]
