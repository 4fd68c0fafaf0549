"""The ops as ``torch.library`` custom operators (``torch.ops.xetile.*``), so that
``torch.compile`` graphs keep each as one node instead of tracing into it.

Nothing here runs at import.  :func:`register` needs torch >= 2.4
(``torch.library.custom_op``) but no XPU device: registering only tells the dispatcher
the schema, the kernel and the fake implementation.  The kernel runs the op on XPU
tensors (an Intel GPU) without copies; tensors on any other device get a UsageError saying to
move them with ``.to("xpu")`` (not torch's "no kernel for this backend").  The fake
implementation gives the output's shape and dtype for tracing (and for meta tensors)
from the op's own ``*_result`` function, which checks the arguments as the op does.

The schemas are written out rather than inferred from annotations: this module needs no
torch at import, and each op's keyword arguments match the numpy entry point's (except
``out=``, a mutation: a functional op returns its result)."""
from __future__ import annotations

from ..errors import UsageError
from . import operands, rows
from .attention import attention, attention_result
from .matmul import matmul, matmul_result

#: op name -> its schema (arguments and defaults as in xetile_dsl.ops; none keyword-only, since
#: custom ops refuse keyword-only tensors such as matmul's ``bias``)
SCHEMAS = {
    "matmul": "(Tensor a, Tensor b, bool trans_a=False, bool trans_b=False, Tensor? bias=None, "
              "str? activation=None, ScalarType? out_dtype=None, str? target=None) -> Tensor",
    "softmax": "(Tensor x, int dim=-1, str? target=None) -> Tensor",
    "layer_norm": "(Tensor x, Tensor weight, Tensor bias, float eps=1e-05, str? target=None) -> Tensor",
    "rms_norm": "(Tensor x, Tensor weight, float eps=1e-06, str? target=None) -> Tensor",
    "attention": "(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None, str? target=None) -> Tensor",
}

_REGISTERED: dict[str, object] = {}


def register() -> dict[str, object]:
    """Register ``torch.ops.xetile.{matmul, softmax, layer_norm, rms_norm, attention}``
    (once; later calls return the same); returns the custom ops by name.  A UsageError
    without torch >= 2.4."""
    if _REGISTERED:
        return _REGISTERED
    custom_op = _torch().library.custom_op
    for name, schema in SCHEMAS.items():
        kernel, fake = _IMPLEMENTATIONS[name]
        op = custom_op(f"xetile::{name}", kernel, mutates_args=(), schema=schema)
        op.register_fake(fake)
        _REGISTERED[name] = op
    return _REGISTERED


def _torch():
    """torch, if it has ``torch.library.custom_op``; else a UsageError naming what is missing."""
    try:
        import torch  # optional dependency
    except ImportError:
        raise UsageError("xetile_dsl.ops.torch_ops.register() needs PyTorch >= 2.4 (to run the ops, its XPU "
                         "build: pip install torch --index-url https://download.pytorch.org/whl/xpu)") from None
    if not hasattr(torch.library, "custom_op"):
        raise UsageError(f"torch {torch.__version__} has no torch.library.custom_op: torch >= 2.4 is needed")
    return torch


def _require_xpu(op: str, **tensors) -> None:
    """A UsageError unless every tensor given lives on an XPU device (None: not given)."""
    for name, tensor in tensors.items():
        if tensor is not None and tensor.device.type not in ("xpu", "cuda"):   # cuda: the NVIDIA backend
            raise UsageError(f"torch.ops.xetile.{op}: {name} is a tensor on device {str(tensor.device)!r}; the xetile "
                             f"ops run on Intel GPU tensors: move the inputs there with .to('xpu') (without an "
                             f"Intel GPU, xetile_dsl.ops.{op}(tensor.numpy(), ...) runs on numpy arrays)")


# --- kernels (any device: they refuse what is not XPU) and fakes (shape and dtype) --------

def _matmul_kernel(a, b, trans_a=False, trans_b=False, bias=None, activation=None, out_dtype=None, target=None):
    _require_xpu("matmul", a=a, b=b, bias=bias)
    return matmul(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias, activation=activation,
                  out_dtype=out_dtype, target=target)


def _matmul_fake(a, b, trans_a=False, trans_b=False, bias=None, activation=None, out_dtype=None, target=None):
    shape, dtype = matmul_result(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias,
                                 activation=activation, out_dtype=out_dtype)
    return operands.empty_like_input(a, shape, dtype)


def _softmax_kernel(x, dim=-1, target=None):
    _require_xpu("softmax", x=x)
    return rows.softmax(x, dim, target=target)


def _softmax_fake(x, dim=-1, target=None):
    return operands.empty_like_input(x, *rows.softmax_result(x, dim))


def _layer_norm_kernel(x, weight, bias, eps=1e-5, target=None):
    _require_xpu("layer_norm", x=x, weight=weight, bias=bias)
    return rows.layer_norm(x, weight, bias, eps, target=target)


def _layer_norm_fake(x, weight, bias, eps=1e-5, target=None):
    return operands.empty_like_input(x, *rows.norm_result(x, weight, bias, rms=False))


def _rms_norm_kernel(x, weight, eps=1e-6, target=None):
    _require_xpu("rms_norm", x=x, weight=weight)
    return rows.rms_norm(x, weight, eps, target=target)


def _rms_norm_fake(x, weight, eps=1e-6, target=None):
    return operands.empty_like_input(x, *rows.norm_result(x, weight, rms=True))


def _attention_kernel(q, k, v, causal=False, scale=None, target=None):
    _require_xpu("attention", q=q, k=k, v=v)
    return attention(q, k, v, causal=causal, scale=scale, target=target)


def _attention_fake(q, k, v, causal=False, scale=None, target=None):
    return operands.empty_like_input(q, *attention_result(q, k, v))


_IMPLEMENTATIONS = {
    "matmul": (_matmul_kernel, _matmul_fake),
    "softmax": (_softmax_kernel, _softmax_fake),
    "layer_norm": (_layer_norm_kernel, _layer_norm_fake),
    "rms_norm": (_rms_norm_kernel, _rms_norm_fake),
    "attention": (_attention_kernel, _attention_fake),
}
