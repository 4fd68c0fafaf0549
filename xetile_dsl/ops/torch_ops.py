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

import numpy as np

from ..errors import UsageError
from . import losses as ce, operands, rows, rows_backward
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
    "log_softmax": "(Tensor x, int dim=-1, str? target=None) -> Tensor",
    "softmax_backward": "(Tensor y, Tensor dy, int dim=-1, str? target=None) -> Tensor",
    "log_softmax_backward": "(Tensor y, Tensor dy, int dim=-1, str? target=None) -> Tensor",
    "layer_norm_backward": "(Tensor dy, Tensor x, Tensor weight, Tensor mean, Tensor rstd, str? target=None) "
                           "-> (Tensor, Tensor, Tensor)",
    "rms_norm_backward": "(Tensor dy, Tensor x, Tensor weight, Tensor rstd, str? target=None) -> (Tensor, Tensor)",
    "cross_entropy": "(Tensor logits, Tensor targets, str reduction='mean', int ignore_index=-100, "
                     "str? target=None) -> Tensor",
    "cross_entropy_forward": "(Tensor logits, Tensor targets, int ignore_index=-100, str? target=None) "
                             "-> (Tensor, Tensor)",
    "cross_entropy_backward": "(Tensor logits, Tensor targets, Tensor lse, Tensor dloss_rows, int ignore_index=-100, "
                              "str? target=None) -> Tensor",
    # ops.layer_norm / ops.rms_norm with return_stats=True (a schema has one return arity)
    "layer_norm_with_stats": "(Tensor x, Tensor weight, Tensor bias, float eps=1e-05, str? target=None) "
                             "-> (Tensor, Tensor, Tensor)",
    "rms_norm_with_stats": "(Tensor x, Tensor weight, float eps=1e-06, str? target=None) -> (Tensor, Tensor)",
}

#: torch-only names: the numpy entry point and the flag each one stands for
WITH_FLAG = {"layer_norm_with_stats": ("layer_norm", "return_stats"), "rms_norm_with_stats": ("rms_norm", "return_stats")}

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
        if tensor is not None and tensor.device.type != "xpu":
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


def _log_softmax_kernel(x, dim=-1, target=None):
    _require_xpu("log_softmax", x=x)
    return rows.log_softmax(x, dim, target=target)


def _softmax_backward_kernel(y, dy, dim=-1, target=None):
    _require_xpu("softmax_backward", y=y, dy=dy)
    return rows_backward.softmax_backward(y, dy, dim, target=target)


def _log_softmax_backward_kernel(y, dy, dim=-1, target=None):
    _require_xpu("log_softmax_backward", y=y, dy=dy)
    return rows_backward.log_softmax_backward(y, dy, dim, target=target)


def _softmax_backward_fake(y, dy, dim=-1, target=None):
    return operands.empty_like_input(y, *rows_backward.softmax_backward_result(y, dy, dim))


def _layer_norm_backward_kernel(dy, x, weight, mean, rstd, target=None):
    _require_xpu("layer_norm_backward", dy=dy, x=x, weight=weight, mean=mean, rstd=rstd)
    return rows_backward.layer_norm_backward(dy, x, weight, mean, rstd, target=target)


def _layer_norm_backward_fake(dy, x, weight, mean, rstd, target=None):
    shape, dtype, wshape, wdtype = rows_backward.norm_backward_result(dy, x, weight, rms=False)
    return (operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, wshape, wdtype),
            operands.empty_like_input(x, wshape, wdtype))


def _rms_norm_backward_kernel(dy, x, weight, rstd, target=None):
    _require_xpu("rms_norm_backward", dy=dy, x=x, weight=weight, rstd=rstd)
    return rows_backward.rms_norm_backward(dy, x, weight, rstd, target=target)


def _rms_norm_backward_fake(dy, x, weight, rstd, target=None):
    shape, dtype, wshape, wdtype = rows_backward.norm_backward_result(dy, x, weight, rms=True)
    return operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, wshape, wdtype)


def _cross_entropy_kernel(logits, targets, reduction="mean", ignore_index=-100, target=None):
    _require_xpu("cross_entropy", logits=logits, targets=targets)
    return ce.cross_entropy(logits, targets, reduction, ignore_index, target=target)


def _cross_entropy_fake(logits, targets, reduction="mean", ignore_index=-100, target=None):
    ce.check_reduction(reduction)
    ce.cross_entropy_result(logits, targets)
    shape = tuple(targets.shape) if reduction == "none" else ()
    return operands.empty_like_input(logits, shape, ce.F32)


def _cross_entropy_forward_kernel(logits, targets, ignore_index=-100, target=None):
    _require_xpu("cross_entropy_forward", logits=logits, targets=targets)
    return ce.cross_entropy_forward(logits, targets, ignore_index, target=target)


def _cross_entropy_forward_fake(logits, targets, ignore_index=-100, target=None):
    rows_, _ = ce.cross_entropy_result(logits, targets, "cross_entropy_forward")
    return operands.empty_like_input(logits, (rows_,), ce.F32), operands.empty_like_input(logits, (rows_,), ce.F32)


def _cross_entropy_backward_kernel(logits, targets, lse, dloss_rows, ignore_index=-100, target=None):
    _require_xpu("cross_entropy_backward", logits=logits, targets=targets, lse=lse, dloss_rows=dloss_rows)
    return ce.cross_entropy_backward(logits, targets, lse, dloss_rows, ignore_index, target=target)


def _cross_entropy_backward_fake(logits, targets, lse, dloss_rows, ignore_index=-100, target=None):
    _, dtype = ce.cross_entropy_result(logits, targets, "cross_entropy_backward")
    return operands.empty_like_input(logits, tuple(logits.shape), dtype)


def _layer_norm_with_stats_kernel(x, weight, bias, eps=1e-5, target=None):
    _require_xpu("layer_norm_with_stats", x=x, weight=weight, bias=bias)
    return rows.layer_norm(x, weight, bias, eps, return_stats=True, target=target)


def _layer_norm_with_stats_fake(x, weight, bias, eps=1e-5, target=None):
    shape, dtype = rows.norm_result(x, weight, bias, rms=False)
    stat = (int(np.prod(shape[:-1], dtype=np.int64)),)
    return (operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, stat, np.float32),
            operands.empty_like_input(x, stat, np.float32))


def _rms_norm_with_stats_kernel(x, weight, eps=1e-6, target=None):
    _require_xpu("rms_norm_with_stats", x=x, weight=weight)
    return rows.rms_norm(x, weight, eps, return_stats=True, target=target)


def _rms_norm_with_stats_fake(x, weight, eps=1e-6, target=None):
    shape, dtype = rows.norm_result(x, weight, rms=True)
    stat = (int(np.prod(shape[:-1], dtype=np.int64)),)
    return operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, stat, np.float32)


_IMPLEMENTATIONS = {
    "matmul": (_matmul_kernel, _matmul_fake),
    "softmax": (_softmax_kernel, _softmax_fake),
    "layer_norm": (_layer_norm_kernel, _layer_norm_fake),
    "rms_norm": (_rms_norm_kernel, _rms_norm_fake),
    "attention": (_attention_kernel, _attention_fake),
    "log_softmax": (_log_softmax_kernel, _softmax_fake),
    "softmax_backward": (_softmax_backward_kernel, _softmax_backward_fake),
    "log_softmax_backward": (_log_softmax_backward_kernel, _softmax_backward_fake),
    "layer_norm_backward": (_layer_norm_backward_kernel, _layer_norm_backward_fake),
    "rms_norm_backward": (_rms_norm_backward_kernel, _rms_norm_backward_fake),
    "cross_entropy": (_cross_entropy_kernel, _cross_entropy_fake),
    "cross_entropy_forward": (_cross_entropy_forward_kernel, _cross_entropy_forward_fake),
    "cross_entropy_backward": (_cross_entropy_backward_kernel, _cross_entropy_backward_fake),
    "layer_norm_with_stats": (_layer_norm_with_stats_kernel, _layer_norm_with_stats_fake),
    "rms_norm_with_stats": (_rms_norm_with_stats_kernel, _rms_norm_with_stats_fake),
}
