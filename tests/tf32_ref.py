"""numpy reference for the tf32 DPAS: f32 inputs rounded to tf32, products summed in f64.

Written independently of the code generator and the interpreter (which round with an
integer bit trick): here the rounding is done on frexp mantissas in float64."""
from __future__ import annotations

import numpy as np


def tf32_round(x: np.ndarray) -> np.ndarray:
    """f32 -> tf32 (11 significant bits, f32's exponent range), to nearest even."""
    x64 = np.asarray(x, np.float64)
    mant, exp = np.frexp(x64)  # |mant| in [0.5, 1): 11 significant bits = mant * 2^11
    return np.ldexp(np.rint(mant * 2.0 ** 11), exp - 11).astype(np.float32)


def tf32_matmul_ref(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """``tf32(a) @ tf32(b)`` in f64 and the absolute error an f32 accumulation of K such
    (exact) products may add: ``(K + 1) * 2^-24 * max(|tf32(a)| @ |tf32(b)|)``."""
    ta, tb = tf32_round(a).astype(np.float64), tf32_round(b).astype(np.float64)
    bound = (np.abs(ta) @ np.abs(tb)).max()
    return ta @ tb, (a.shape[1] + 1) * 2.0 ** -24 * bound
