"""Ready kernels for ML code: ``from xetile_dsl import ops``.

Each op is a ``@jit`` kernel plus an entry point taking numpy arrays, dpnp/USM arrays or
torch XPU tensors, allocating its output like the input (or writing ``out=``), with its
tiles from a per-target table (:mod:`.configs`) and a :class:`~xetile_dsl.errors.UsageError`
for what it does not support."""
from .attention import attention
from .attention_backward import attention_backward
from .decode_attention import decode_attention
from .matmul import matmul
from .rows import layer_norm, rms_norm, softmax

__all__ = ["attention", "attention_backward", "decode_attention", "layer_norm", "matmul", "rms_norm", "softmax"]
