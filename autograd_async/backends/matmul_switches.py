"""`torch.backends.cuda.matmul`'s precision switches, held by the cuda backend module."""

from __future__ import annotations


class MatmulSwitches:
    """Whether float32 products may use TF32 and half products reduced-precision sums.

    Recorded for scripts that set them; CuPy's matrix products follow its own `CUPY_TF32`
    environment variable, read when CuPy starts, so set that to use TF32 on a GPU.
    """

    __slots__ = (
        "allow_tf32",
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    )

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
