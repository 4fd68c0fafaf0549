"""The peers of ``ops.softmax`` and ``ops.layer_norm`` on an NVIDIA GPU: row kernels in
Triton after the algorithms of Triton's fused-softmax and layer-norm tutorials, in this
project's words: one program a row, the whole row (BLOCK = the power of two >= N
columns) loaded once into registers over ``num_warps`` warps, masked past N; softmax
subtracts the row maximum, exponentiates, divides by the sum; layer norm takes the mean,
the mean of the squared deviations, and writes ``(x - mean) * rstd * w + b``; RMS norm
writes ``x * rsqrt(mean(x^2) + eps) * w``.  Each is
autotuned over ``num_warps`` (4, 8, 16, 32) on its first call for a row width.

    python benchmarks/peer_rows_cuda_triton.py      # checks against torch, prints GB/s

``benchmarks/vs_cuda_attention.py`` and ``benchmarks/vs_cuda.py`` import :func:`softmax`,
:func:`layer_norm` (and vs_cuda.py :func:`rms_norm`) to time them beside ``ops``' and
torch's as a share of a copy's bandwidth.  Needs triton and a CUDA GPU."""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from cuda_events import median_ms

WARPS = [triton.Config({}, num_warps=w) for w in (4, 8, 16, 32)]


@triton.autotune(configs=WARPS, key=["N"])
@triton.jit
def _softmax_rows(x_ptr, y_ptr, stride_x, stride_y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    keep = cols < N
    v = tl.load(x_ptr + row * stride_x + cols, mask=keep, other=float("-inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, axis=0))
    out = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_y + cols, out.to(y_ptr.dtype.element_ty), mask=keep)


@triton.autotune(configs=WARPS, key=["N"])
@triton.jit
def _layer_norm_rows(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    keep = cols < N
    v = tl.load(x_ptr + row * stride_x + cols, mask=keep, other=0.0).to(tl.float32)
    mean = tl.sum(v, axis=0) / N
    d = tl.where(keep, v - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=keep, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=keep, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=keep)


@triton.autotune(configs=WARPS, key=["N"])
@triton.jit
def _rms_norm_rows(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    keep = cols < N
    v = tl.load(x_ptr + row * stride_x + cols, mask=keep, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=keep, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (v * rstd * w).to(y_ptr.dtype.element_ty), mask=keep)


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax along the last dimension of a 2-D CUDA tensor (rows contiguous)."""
    y = torch.empty_like(x) if out is None else out
    rows, n = x.shape
    _softmax_rows[(rows,)](x, y, x.stride(0), y.stride(0), n, BLOCK=triton.next_power_of_2(n))
    return y


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """Layer norm along the last dimension of a 2-D CUDA tensor, weight and bias [N]."""
    y = torch.empty_like(x) if out is None else out
    rows, n = x.shape
    _layer_norm_rows[(rows,)](x, w, b, y, x.stride(0), y.stride(0), n, eps, BLOCK=triton.next_power_of_2(n))
    return y


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6, out: torch.Tensor | None = None) -> torch.Tensor:
    """RMS norm along the last dimension of a 2-D CUDA tensor, weight [N]."""
    y = torch.empty_like(x) if out is None else out
    rows, n = x.shape
    _rms_norm_rows[(rows,)](x, w, y, x.stride(0), y.stride(0), n, eps, BLOCK=triton.next_power_of_2(n))
    return y


def best_warps(kernel) -> int | None:
    """The num_warps the autotuner chose on its last key (None before a call)."""
    config = getattr(kernel, "best_config", None)
    return None if config is None else config.num_warps


def main() -> None:
    torch.manual_seed(0)
    for rows, n in ((301, 1000), (8192, 8192)):
        x = torch.randn(rows, n, device="cuda", dtype=torch.float16)
        w, b = torch.randn(n, device="cuda", dtype=torch.float16), torch.randn(n, device="cuda", dtype=torch.float16)
        ref = torch.softmax(x.double(), -1)
        print(f"check triton softmax f16 {rows}x{n} error {float((softmax(x).double() - ref).abs().max()):.3e}")
        ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double())
        print(f"check triton layer_norm f16 {rows}x{n} error "
              f"{float((layer_norm(x, w, b).double() - ref).abs().max()):.3e}")
        ref = torch.nn.functional.rms_norm(x.double(), (n,), w.double(), 1e-6)
        print(f"check triton rms_norm f16 {rows}x{n} error {float((rms_norm(x, w).double() - ref).abs().max()):.3e}")
    y = torch.empty_like(x)
    for name, fn in (("softmax", lambda: softmax(x, y)), ("layer_norm", lambda: layer_norm(x, w, b, out=y)),
                     ("rms_norm", lambda: rms_norm(x, w, out=y))):
        ms = median_ms(fn, 20, warmup=0)
        print(f"triton {name} f16 8192x8192 {ms:.4f} ms {2 * x.numel() * 2 / ms / 1e6:.0f} GB/s")


if __name__ == "__main__":
    main()
