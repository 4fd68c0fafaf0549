"""numpy reference for GEMMs whose products are exact in f32 and whose sums accumulate in
f32 (f16, bf16 and tf32 inputs on DPAS), with the per-element error bound of that
accumulation; plus the f16-accumulating GEMM the bound must reject.

Why the bound holds: an f16 (bf16, tf32) value has 11 (8, 11) significant bits, so the
product of two has at most 22 (16, 22) <= 24: every product is exact in f32.  The only
rounding is in the f32 sums.  Summing K terms in any order (sequentially, in DPAS blocks,
pairwise) in precision u = 2^-24 gives |computed - exact| <= gamma_(K-1) * sum_k |a_ik b_kj|
with gamma_n = n u / (1 - n u) <= (n + 2) u while n u <= 1/2 (Higham, Accuracy and
Stability of Numerical Algorithms, 2nd ed., section 4.2), hence the bound
``(K + 1) * 2^-24 * (|a| @ |b|)_ij``.  The reference itself is computed in f64, whose own
error (about K * 2^-53 relative) is far below it."""
from __future__ import annotations

import numpy as np


def exact_products_matmul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``a @ b`` in f64, the per-element bound of an f32 accumulation of its products)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    k = a64.shape[1]
    return a64 @ b64, (k + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64))


def f16_accumulating_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What a GEMM accumulating in f16 computes: each product and each partial sum rounded
    to f16, in K order (the wrong kernel a test's bound has to reject)."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float16)
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    for k in range(a.shape[1]):
        acc = acc + np.outer(a32[:, k], b32[k]).astype(np.float16)   # f16 + f16 rounds to f16
    return acc.astype(np.float32)


def excess(c: np.ndarray, ref: np.ndarray, bound: np.ndarray) -> float:
    """The largest ``|c - ref| / bound`` (> 1 means the bound is violated somewhere)."""
    return float(np.max(np.abs(np.asarray(c, np.float64) - ref) / bound))
