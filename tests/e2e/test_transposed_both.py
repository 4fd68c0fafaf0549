"""C = A @ B with both operands stored transposed (A^T as [K, M], B^T as [N, K], read
through order=(0, 1) tiles): the K loop is rewritten to accumulate C^T = B^T-stored @
A^T-stored with row-major operand reads (lowering/passes/wg_to_sg/operand_swap.py) and C^T is stored
through a transposed view of C.  Checked against numpy on the CPU device, PVC and ARC
flavours: f16 within the f32 accumulation bound, int8 exactly."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def wg_gemm_at_bt(at, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
                  SN: xt.constexpr, ACC: xt.constexpr, TB: xt.constexpr):
    """A workgroup GEMM (gemm_wg's maps) reading ``at`` = A^T and ``bt`` = B^T (``bt`` = B
    itself, row-major, when not ``TB``)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(at, [m, 0], [BM, BK], order=(0, 1), wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK]))
    mp_b = xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN])
    if TB:
        tb = xt.init_tile(bt, [0, n], [BK, BN], order=(0, 1), wg_map=mp_b)
    else:
        tb = xt.init_tile(bt, [0, n], [BK, BN], wg_map=mp_b)
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc, wg_map=mp_c)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


#: M, N, K: two workgroups each way, several K steps, M != N (a swapped index shows)
M, N, K = 128, 192, 128
TILES = {"pvc": (64, 96, 2, 2), "arc": (32, 64, 2, 2)}  # BM, BN, SM, SN: C subgroup tiles 32x48, 16x32


def _run(a, b, flavour, acc, c_dtype, bk, tiles=None, tb=True):
    bm, bn, sm, sn = tiles or TILES[flavour]
    c = np.zeros((M, N), c_dtype)
    grid = (M // bm, N // bn)
    wg_gemm_at_bt.on(f"cpu-{flavour}")[grid](np.ascontiguousarray(a.T), np.ascontiguousarray(b.T if tb else b), c,
                                              K, BM=bm, BN=bn, BK=bk, SM=sm, SN=sn, ACC=acc, TB=tb)
    return c


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_f16_both_transposed(flavour):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = _run(a, b, flavour, xt.float32, np.float32, 32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # f16 products are exact in f32; K = 128 f32 additions of terms bounded by |a||b|
    bound = K * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - ref) <= bound)


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_int8_both_transposed_exact(flavour):
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    c = _run(a, b, flavour, xt.int32, np.int32, 64)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_f16_at_b_swapped_for_narrower_n(flavour):
    """A^T-stored @ B with C subgroup tiles 32x16: B (16 columns) read transposed as
    operand A of C^T costs half the unpacking of A (32 rows), so the loop is swapped too."""
    rng = np.random.default_rng(13)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = _run(a, b, flavour, xt.float32, np.float32, 32, tiles=(64, 64, 2, 4), tb=False)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = K * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - ref) <= bound)
