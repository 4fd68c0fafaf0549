"""Non-splat constant rows feeding operand A of tile_mma: a K-column mask built from
``xt.arange`` and compared with K, and an arange row converted to f16 and added to A.
On ARC (8 lanes) the row's lanes must hold it in A's lane layout of A's element width
(lane n: columns 2n, 2n+1 of each 16-column block), not its own width's; on PVC the
same.  Exact small-integer data; every flavour against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def _masked_k(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    ta = xt.init_tile(a, [0, 0], [BM, BK])
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for kk in range(0, K, BK):
        av = xt.where(xt.arange(0, BK) + kk < K, xt.load_tile(ta), 0.0)
        acc = xt.tile_mma(av, xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


@xd.jit
def _row_added(a, b, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    av = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK])) + xt.astype(xt.arange(0, BK) % 5, xt.float16)
    acc = xt.tile_mma(av, xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])), xt.zeros([BM, BN], xt.float32))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


def _operands(M, N, K, seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(-3, 4, (M, K)).astype(np.float16), rng.integers(-3, 4, (K, N)).astype(np.float16))


@pytest.mark.parametrize("target", ["cpu-arc", "cpu", "interpret"])
@pytest.mark.parametrize("BK", [16, 32])
def test_k_mask_row_into_operand_a(target, BK):
    """K = 20: the second K step's columns past K are masked off (the array is padded
    with 7s there, so a missing mask shows)."""
    M, N, K = 8, 16, 20
    a, b = _operands(M, N, 2 * BK, BK)
    a[:, K:] = 7
    b[K:, :] = 7
    ref = a[:, :K].astype(np.float32) @ b[:K].astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    _masked_k.on(target)[(1,)](a, b, c, K, BM=M, BN=N, BK=BK)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("target", ["cpu-arc", "cpu", "interpret"])
@pytest.mark.parametrize("BK", [16, 32])
def test_arange_row_of_another_width_into_operand_a(target, BK):
    M, N = 8, 16
    a, b = _operands(M, N, BK, BK + 1)
    ref = (a.astype(np.float32) + (np.arange(BK) % 5)) @ b.astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    _row_added.on(target)[(1,)](a, b, c, BM=M, BN=N, BK=BK)
    np.testing.assert_array_equal(c, ref)
