"""f64 numpy references for ops.rope, ops.silu_mul and ops.add_rms_norm with per-element
bounds derived from the f32 arithmetic of ops/llm.py (notation and accuracy table as in
ops_ref.py: u = 2^-24; OpenCL full profile: sin, cos <= 4 ulp, exp <= 3 ulp, division
<= 2.5 ulp; one ulp of v is at most 2u|v|, and 2^-149 near 0)."""
from __future__ import annotations

import numpy as np

from ops_ref import OUT_ROUNDING, U, norm_ref


def rope_angles(positions, D: int, theta: float) -> np.ndarray:
    """[tokens, D/2] angles positions[t] * theta^(-2i/D), exactly (f64)."""
    freq = theta ** (-np.arange(0, D, 2, dtype=np.float64) / D)
    return np.asarray(positions, np.float64).reshape(-1, 1) * freq


def rope_pairs(x, style: str, R: int):
    """(first, second) elements of each rotated pair of x [..., D] (views), R the rotated width."""
    return (x[..., :R // 2], x[..., R // 2:R]) if style == "neox" else (x[..., 0:R:2], x[..., 1:R:2])


def rope_ref(x, positions, theta: float, style: str, rotary_dim: int | None = None):
    """(x rotated in f64, bound) for x [tokens, heads, D] (or [batch, seq, heads, D] with
    positions [batch, seq]) as the kernel rotates it; elements past ``rotary_dim`` stay
    (bound: the output rounding only, which they pass exactly).

    The kernel's angle is fl(p * fl(f)) (p exact in f32 below 2^24): two roundings of
    |theta_i| = |p f|, so |da| <= (2 + 2u) u |theta_i| radians; cos and sin move by at most
    that (Lipschitz 1) plus their 4 ulp (8u |value| + 4 * 2^-149).  y1 = x1 c - x2 s (and
    y2 = x2 c + x1 s) rounds each product and the sum: 2u (|x1| + |x2|) (|c|, |s| <= 1 + dc),
    and carries |x1| dc + |x2| ds; then the output rounding."""
    x64 = np.asarray(x, np.float64)
    shape = x64.shape
    x64 = x64.reshape(-1, shape[-2], shape[-1])
    R = shape[-1] if rotary_dim is None else rotary_dim
    angle = rope_angles(positions, R, theta)[:, None, :]
    c, s = np.cos(angle), np.sin(angle)
    x1, x2 = rope_pairs(x64, style, R)
    y = x64.copy()
    y1, y2 = rope_pairs(y, style, R)
    y1[...] = x1 * c - x2 * s
    y2[...] = x2 * c + x1 * s
    da = (2 + 2 * U) * U * np.abs(angle)
    dc = da + 8 * U * (np.abs(c) + da) + 4 * 2.0 ** -149
    ds = da + 8 * U * (np.abs(s) + da) + 4 * 2.0 ** -149
    bound = np.zeros_like(x64)
    b1, b2 = rope_pairs(bound, style, R)
    mag = np.abs(x1) + np.abs(x2)
    b1[...] = np.abs(x1) * dc + np.abs(x2) * ds + 2 * U * mag * (1 + dc + ds)
    b2[...] = np.abs(x2) * dc + np.abs(x1) * ds + 2 * U * mag * (1 + dc + ds)
    rel, floor = OUT_ROUNDING[np.dtype(x.dtype)]
    return y.reshape(shape), (bound * (1 + rel) + rel * np.abs(y) + floor).reshape(shape)


def silu_mul_ref(x, out_dtype):
    """(silu(a) * b in f64, bound) for x = [a | b]: the kernel's a / (1 + exp(-a)) * b in f32.

    exp(-a): 3 ulp (6u relative); 1 + e: one rounding, so 1 + e is within 7u relatively;
    the division 2.5 ulp (5u) and the product one rounding: 14u |y| with the second-order
    terms.  Where exp(-a) overflows (a < -88) silu is 0 in f32 and |silu(a)| < 2^-120 in
    f64: an absolute 2^-120 |b|.  Then the output rounding."""
    x64 = np.asarray(x, np.float64)
    n = x64.shape[-1] // 2
    a, b = x64[..., :n], x64[..., n:]
    with np.errstate(over="ignore"):
        y = a / (1.0 + np.exp(-a)) * b
    bound = 14 * U * np.abs(y) + 2.0 ** -120 * np.abs(b)
    rel, floor = OUT_ROUNDING[np.dtype(out_dtype)]
    return y, bound * (1 + rel) + rel * np.abs(y) + floor


def add_ref(x, residual):
    """(x + residual in f64, bound) for the kernel's f32 sum rounded to residual's dtype:
    u |s| for the f32 add, then the dtype's rounding."""
    s = np.asarray(x, np.float64) + np.asarray(residual, np.float64)
    rel, floor = OUT_ROUNDING[np.dtype(residual.dtype)]
    return s, U * np.abs(s) * (1 + rel) + rel * np.abs(s) + floor


def add_rms_norm_ref(residual_new, weight, eps, out_dtype, chunk: int):
    """(y in f64, bound): the kernel normalises the rounded sum it stored, with the RMS
    norm kernel's arithmetic, so this is ops_ref.norm_ref of that residual."""
    return norm_ref(residual_new, weight, None, eps, out_dtype, chunk, rms=True)
