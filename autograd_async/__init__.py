"""autograd-async: reverse-mode autograd on NumPy and CuPy, with a backward pass that runs on one
worker thread and asyncio event loop per device and that callers can `await`."""

# Before any core module loads: whether the compiled core or the .py files run (see compiled_core).
from . import compiled_core as _compiled_core  # noqa: I001

# Then: from here on `autograd_async.tensor` & co. name the core's modules (see _moved_modules).
from . import _moved_modules  # noqa: F401, I001

from . import autograd, cpu, cuda, engine, nn, optim, profiler, utils
from . import ops as _ops  # noqa: F401 - installs the op methods on Tensor
from .backends import set_sim_mode, sim_mode
from .creation import (
    Generator,
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    is_tensor,
    linspace,
    logspace,
    manual_seed,
    numel,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .devices import (
    Device,
    DeviceError,
    cuda_device_count,
    cuda_is_available,
    device,
    set_sim_device_count,
    sim_device_count,
)

# PyTorch's dtype aliases (`aa.float`, `aa.int`, ...) shadow builtins in this namespace only.
from .dtypes import bool_ as bool
from .dtypes import complex64 as cfloat
from .dtypes import complex128 as cdouble
from .dtypes import dtype, get_default_dtype, set_default_dtype
from .dtypes import float16 as half
from .dtypes import float32 as float
from .dtypes import float64 as double
from .dtypes import int16 as short
from .dtypes import int32 as int
from .dtypes import int64 as long
from .factories import (
    asarray,
    bartlett_window,
    blackman_window,
    empty_permuted,
    empty_strided,
    frombuffer,
    get_default_device,
    hamming_window,
    hann_window,
    kaiser_window,
    randint_like,
    range,
    scalar_tensor,
    set_default_device,
    to_dlpack,
)
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_anomaly_enabled,
    set_grad_enabled,
)
from .layouts import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    memory_format,
    preserve_format,
    strided,
)
from .ops import *  # noqa: F403 - the op functions: add, mul, matmul, sum, ...
from .ops.intra_op import get_num_threads, set_num_threads
from .ops.foreach import foreach_functions as _foreach_functions
from .ops.random_draws import bernoulli, multinomial, normal, poisson
from .runtime_settings import (
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_device,
    get_float32_matmul_precision,
    get_rng_state,
    initial_seed,
    is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled,
    seed,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_rng_state,
    set_warn_always,
    typename,
    use_deterministic_algorithms,
)
from .compile import compile
from .serialization import load, save
from .type_info import finfo, iinfo
from .streams import (
    Event,
    Stream,
    StreamRaceError,
    current_stream,
    default_stream,
    stream,
    synchronize,
)
from .core.size import Size
from .core.tensor import (
    Tensor,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)

# isort: split
from . import (
    amp,  # torch.amp's names
    distributions,  # torch.distributions' names
    fft,  # torch.fft's names
    func,  # torch.func's transforms
    linalg,  # torch.linalg's names
    special,  # torch.special's names
    testing,  # torch.testing's assert_close and make_tensor
)
from ._tensor_str import set_printoptions
from ._version import __version__ as __version__  # the one place for the version
from .amp import (
    autocast,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from .dtypes import bfloat16
from .func import vmap  # torch.vmap
from .ops.public import torch_functions

# PyTorch's out= and argument errors naming the function called, on every public function.
globals().update(torch_functions(_ops.__all__, globals()))
globals().update(
    _foreach_functions()
)  # torch._foreach_add and friends: private names, as PyTorch's
globals().update(
    torch_functions(
        (
            "arange",
            "empty",
            "eye",
            "full",
            "linspace",
            "logspace",
            "ones",
            "rand",
            "randint",
            "randn",
            "randperm",
            "zeros",
            "bernoulli",
            "multinomial",
            "normal",
            "poisson",
        ),
        globals(),
    )
)

__all__ = [
    "Device",
    "DeviceError",
    "Generator",
    "Size",
    "compile",
    "finfo",
    "iinfo",
    "Tensor",
    "arange",
    "as_tensor",
    "autograd",
    "engine",
    "linalg",
    "func",
    "vmap",
    "special",
    "testing",
    "fft",
    "amp",
    "autocast",
    "clear_autocast_cache",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "set_autocast_gpu_dtype",
    "get_autocast_dtype",
    "is_autocast_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "get_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_gpu_dtype",
    "nn",
    "optim",
    "profiler",
    "bool_",
    "bfloat16",
    "complex64",
    "complex128",
    "cuda_device_count",
    "cuda_is_available",
    "device",
    "empty",
    "empty_like",
    "enable_grad",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "full_like",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_grad_enabled",
    "load",
    "manual_seed",
    "no_grad",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "save",
    "set_grad_enabled",
    "set_sim_device_count",
    "sim_device_count",
    "set_sim_mode",
    "sim_mode",
    "tensor",
    "uint8",
    "utils",
    "inference_mode",
    "is_inference_mode_enabled",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled",
    "dtype",
    "get_default_dtype",
    "set_default_dtype",
    "bool",
    "cfloat",
    "cdouble",
    "half",
    "float",
    "double",
    "short",
    "int",
    "long",
    "zeros",
    "zeros_like",
    "eye",
    "is_tensor",
    "linspace",
    "logspace",
    "numel",
    "randint",
    "randperm",
    "cpu",
    "cuda",
    "from_dlpack",
    "Event",
    "Stream",
    "StreamRaceError",
    "current_stream",
    "default_stream",
    "stream",
    "synchronize",
    "get_num_threads",
    "set_num_threads",
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
    "distributions",
    "layout",
    "strided",
    "memory_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
    "are_deterministic_algorithms_enabled",
    "get_deterministic_debug_mode",
    "get_device",
    "get_float32_matmul_precision",
    "get_rng_state",
    "initial_seed",
    "is_deterministic_algorithms_warn_only_enabled",
    "is_warn_always_enabled",
    "seed",
    "set_deterministic_debug_mode",
    "set_float32_matmul_precision",
    "set_rng_state",
    "set_warn_always",
    "typename",
    "use_deterministic_algorithms",
    "asarray",
    "get_default_device",
    "bartlett_window",
    "blackman_window",
    "empty_strided",
    "hamming_window",
    "hann_window",
    "kaiser_window",
    "randint_like",
    "range",
    "scalar_tensor",
    "to_dlpack",
    "set_printoptions",
    "set_default_device",
    "empty_permuted",
    "frombuffer",
]

#: True when the compiled core runs, False while its .py files do (see `compiled_core`).
compiled = _compiled_core.active_compiled_core() is not None
