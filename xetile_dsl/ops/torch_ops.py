"""The ops as ``torch.library`` custom operators for XPU tensors (``torch.ops.xetile.*``),
so that ``torch.compile`` graphs keep them as single nodes.

Nothing here runs at import: :func:`register` needs torch >= 2.4 (``torch.library.custom_op``)
with an XPU device, and says which is missing otherwise.  Each operator has a fake
(meta) implementation giving the output's shape and dtype for tracing; the real one
calls the op on the tensors in place.  CPU tensors reach the real implementation only
through ``device_types="xpu"`` registration, so torch itself refuses them."""
from __future__ import annotations

from ..errors import UsageError
from . import matmul as _matmul
from . import rows as _rows

_REGISTERED: dict[str, object] = {}


def register() -> dict[str, object]:
    """Register ``xetile::matmul``, ``xetile::softmax``, ``xetile::layer_norm`` and
    ``xetile::rms_norm`` (once); returns them by name.  UsageError without torch + XPU."""
    if _REGISTERED:
        return _REGISTERED
    torch = _torch_with_xpu()
    custom_op = torch.library.custom_op

    @custom_op("xetile::matmul", mutates_args=(), device_types="xpu")
    def matmul(a: torch.Tensor, b: torch.Tensor, trans_a: bool = False, trans_b: bool = False,
               bias: torch.Tensor | None = None, activation: str | None = None) -> torch.Tensor:
        return _matmul.matmul(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias, activation=activation)

    @matmul.register_fake
    def _(a, b, trans_a=False, trans_b=False, bias=None, activation=None):
        m = a.shape[1] if trans_a else a.shape[0]
        n = b.shape[0] if trans_b else b.shape[1]
        return a.new_empty((m, n), dtype=torch.int32 if a.dtype in (torch.int8, torch.uint8) else a.dtype)

    @custom_op("xetile::softmax", mutates_args=(), device_types="xpu")
    def softmax(x: torch.Tensor) -> torch.Tensor:
        return _rows.softmax(x)

    @custom_op("xetile::layer_norm", mutates_args=(), device_types="xpu")
    def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
        return _rows.layer_norm(x, weight, bias, eps)

    @custom_op("xetile::rms_norm", mutates_args=(), device_types="xpu")
    def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return _rows.rms_norm(x, weight, eps)

    for row_op in (softmax, layer_norm, rms_norm):
        row_op.register_fake(lambda x, *rest: x.new_empty(x.shape))
    _REGISTERED.update(matmul=matmul, softmax=softmax, layer_norm=layer_norm, rms_norm=rms_norm)
    return _REGISTERED


def _torch_with_xpu():
    """torch, if it has custom_op and an XPU device; else a UsageError naming what is missing."""
    try:
        import torch  # optional dependency
    except ImportError:
        raise UsageError("xetile_dsl.ops.torch_ops.register() needs PyTorch with XPU support "
                         "(pip install torch --index-url https://download.pytorch.org/whl/xpu)") from None
    if not hasattr(torch.library, "custom_op"):
        raise UsageError(f"torch {torch.__version__} has no torch.library.custom_op: torch >= 2.4 is needed")
    if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        raise UsageError(f"torch {torch.__version__} sees no XPU device: the xetile ops run on Intel GPUs only")
    return torch
