"""Testing helpers with PyTorch's names: `assert_close`, `make_tensor` and `assert_allclose`.

Test suites written for `torch.testing` run here by changing the import: the same rules decide
which inputs compare (tensors with tensors, numbers with numbers, sequences and mappings item by
item), the same default tolerances apply per dtype, and a failure reads as PyTorch's does.
"""

from .comparison import assert_allclose, assert_close
from .creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
