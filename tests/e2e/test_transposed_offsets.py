"""Operand A stored K x M and read through an ``order=(0, 1)`` tile at any row offset.

The 32-bit transposed 2D block read addresses whole dwords (2 f16/bf16 rows of A, 4 int8
rows); a row offset inside a dword used to start the block at the dword's first row, so
A read at an odd offset got the row before (int8: offsets not a multiple of 4).  Exact
small-integer data, every flavour against numpy; the offset is a runtime argument (as
``pid * BM`` with ``BM = 1`` is) and, for the GEMV, ``program_id``.  M is wide enough
that the stored rows are >= 64 bytes (the 2D block path)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

DTYPES = {"f16": (np.float16, xt.float32, np.float32), "bf16": (ml_dtypes.bfloat16, xt.float32, np.float32),
          "i8": (np.int8, xt.int32, np.int32)}
FLAVOURS = ["cpu", "cpu-arc", "interpret"]


@xd.jit
def at_gemm_at(at, b, c, m0, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """C[BM, BN] = A[m0:m0+BM, :] @ B with A given as ``at`` = A^T ([K, M])."""
    acc = xt.zeros([BM, BN], ACC)
    ta = xt.init_tile(at, [m0, 0], [BM, BK], order=(0, 1))
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


def _data(dtype, M, K, N):
    rng = np.random.default_rng(M + K + N)
    a = rng.integers(-3, 4, (M, K)).astype(DTYPES[dtype][0])
    b = rng.integers(-3, 4, (K, N)).astype(DTYPES[dtype][0])
    return a, b, a.astype(np.int64) @ b.astype(np.int64)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", ["f16", "bf16", "i8"])
@pytest.mark.parametrize("BM", [8, 16])
def test_a_transposed_at_every_row_offset(dtype, BM, flavour):
    """Offsets 0..5 cover odd, even, 4k+2 and multiples of 4 (the int8 dword)."""
    np_dtype, acc, c_dtype = DTYPES[dtype]
    M, N = (96, 16) if dtype == "i8" else (48, 16)
    BK = 32 if dtype == "i8" else 16
    K = 2 * BK
    a, b, ref = _data(dtype, M, K, N)
    at = np.ascontiguousarray(a.T)
    for m0 in range(6):
        c = np.zeros((BM, N), c_dtype)
        at_gemm_at.on(flavour)[(1,)](at, b, c, m0, K, BM=BM, BN=N, BK=BK, ACC=acc)
        np.testing.assert_array_equal(c, ref[m0:m0 + BM], err_msg=f"row offset {m0}")


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", ["f16", "bf16", "i8"])
@pytest.mark.parametrize("BM", [1, 2])
def test_few_row_gemm_with_a_transposed(dtype, BM, flavour):
    """matmul_at_kernel with BM = 1 (a GEMV: program p reads row p, odd for every other
    program) and 2, M odd: a one-row A^T block is a column run per lane (2 elements per
    lane for 16-bit on ARC's 8 lanes and for int8 on 16), which compiled with an internal
    error before."""
    from xetile_dsl.kernels.gemm_transposed import matmul_at_kernel

    np_dtype, acc, c_dtype = DTYPES[dtype]
    M, N, K = (67, 32, 64) if dtype == "i8" else (35, 32, 64)
    a, b, ref = _data(dtype, M, K, N)
    c = np.zeros((M, N), c_dtype)
    BN, BK = 16, 32
    grid = ((M + BM - 1) // BM, N // BN)
    matmul_at_kernel.on(flavour)[grid](np.ascontiguousarray(a.T), b, c, K, BM=BM, BN=BN, BK=BK, ACC=acc)
    np.testing.assert_array_equal(c, ref)
