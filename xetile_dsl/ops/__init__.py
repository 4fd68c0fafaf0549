"""Ready kernels for ML code: ``from xetile_dsl import ops``.

Each op is a ``@jit`` kernel plus an entry point taking numpy arrays, dpnp/USM arrays or
torch XPU tensors, allocating its output like the input (or writing ``out=``), with its
tiles from a per-target table (:mod:`.configs`) and a :class:`~xetile_dsl.errors.UsageError`
for what it does not support."""
from .attention import attention
from .attention_backward import attention_backward
from .decode_attention import decode_attention
from .llm import add_rms_norm, rope, silu_mul
from .losses import cross_entropy, cross_entropy_backward, cross_entropy_forward
from .matmul import matmul
from .matmul_backward import matmul_backward
from .matmul_wq import matmul_wq, quantize_weights
from .rows import layer_norm, log_softmax, rms_norm, softmax
from .rows_backward import layer_norm_backward, log_softmax_backward, rms_norm_backward, softmax_backward

__all__ = [
    "add_rms_norm",
    "attention",
    "attention_backward",
    "cross_entropy",
    "cross_entropy_backward",
    "cross_entropy_forward",
    "decode_attention",
    "layer_norm",
    "layer_norm_backward",
    "log_softmax",
    "log_softmax_backward",
    "matmul",
    "matmul_backward",
    "matmul_wq",
    "quantize_weights",
    "rms_norm",
    "rms_norm_backward",
    "rope",
    "silu_mul",
    "softmax",
    "softmax_backward",
]
