"""Ready kernels for ML code: ``from xetile_dsl import ops``.

Each op is a ``@jit`` kernel plus an entry point taking numpy arrays, dpnp/USM arrays or
torch XPU tensors, allocating its output like the input (or writing ``out=``), with its
tiles from a per-target table (:mod:`.configs`) and a :class:`~xetile_dsl.errors.UsageError`
for what it does not support."""
from .attention import attention
from .decode_attention import decode_attention
from .llm import add_rms_norm, rope, silu_mul
from .matmul import matmul
from .matmul_backward import matmul_backward
from .matmul_wq import matmul_wq, quantize_weights
from .rows import layer_norm, rms_norm, softmax

__all__ = [
    "add_rms_norm",
    "attention",
    "decode_attention",
    "layer_norm",
    "matmul",
    "matmul_backward",
    "matmul_wq",
    "quantize_weights",
    "rms_norm",
    "rope",
    "silu_mul",
    "softmax",
]
