"""Arrays whose rows are narrower than 2D block messages allow (64 bytes on PVC): a GEMM
with K = 20 (A rows of 40 bytes) or N = 12 (C rows of 48 bytes) runs, its narrow arrays
read and written per lane (issue 17 item 1), on both CPU lane layouts and the interpreter.

Inputs are small integers, so every product and sum is exact in f32: results must equal
numpy's exactly."""
from __future__ import annotations

import numpy as np
import pytest

from conftest_tools import require_dpnp
from xetile_dsl.kernels.matmul import matmul_kernel

#: (M, N, K): K = 20 (narrow A), N = 12 (narrow B and C), both
SHAPES = [(40, 48, 20), (40, 12, 48), (24, 12, 20)]
TILE = {"BM": 16, "BN": 16, "BK": 16}


def _operands(M, N, K):
    rng = np.random.default_rng(M * 100 + N * 10 + K)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    return a, b


def _run(target, a, b):
    M, N = a.shape[0], b.shape[1]
    c = np.full((M, N), np.nan, np.float32)   # every element must be written
    grid = (-(-M // TILE["BM"]), -(-N // TILE["BN"]))
    matmul_kernel.on(target)[grid](a, b, c, a.shape[1], **TILE)
    return c


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_with_narrow_rows_is_exact(shape, target):
    a, b = _operands(*shape)
    np.testing.assert_array_equal(_run(target, a, b), a.astype(np.float32) @ b.astype(np.float32))


def test_a_narrow_view_of_a_wide_array_is_exact():
    """A view whose rows are narrow inside wider rows (pitch 128 bytes, width 40): the
    per-lane accesses use the view's own pitch and stop at its width."""
    M, N, K = 32, 32, 20
    wide = np.random.default_rng(3).integers(-3, 4, (M, 64)).astype(np.float16)
    a = wide[:, 8:8 + K]
    b = np.random.default_rng(4).integers(-3, 4, (K, N)).astype(np.float16)
    np.testing.assert_array_equal(_run("cpu-pvc", a, b), a.astype(np.float32) @ b.astype(np.float32))


def test_dpnp_arrays_with_narrow_unaligned_rows_are_used_in_place():
    """Device arrays are not copied: A's rows of 40 bytes (pitch 40, no 16-byte multiple)
    were refused twice over (width and pitch); accessed per lane, neither rule applies."""
    dpnp = require_dpnp()
    M, N, K = 32, 32, 20
    a, b = _operands(M, N, K)
    c = dpnp.zeros((M, N), dtype=np.float32)
    grid = (M // TILE["BM"], N // TILE["BN"])
    matmul_kernel.on("cpu-pvc")[grid](dpnp.asarray(a), dpnp.asarray(b), c, K, **TILE)
    np.testing.assert_array_equal(dpnp.asnumpy(c), a.astype(np.float32) @ b.astype(np.float32))
