"""ARC GEMMs read and write through subgroup block messages, one per row, where a block
lies inside its array (codegen/builtins/block1d.py), and through the per-lane row loop
where it does not (codegen/builtins/block2d.py): both paths on the CPU device (cpu-arc)
run the ARC kernel body with the builtins defined from their specification, and must
give numpy's result exactly (small integers: every product and sum is exact in f32).

Shapes: multiples of the tiles (every block inside: block messages only), ragged M, N
and K (edge blocks partly outside: the row loop, its first and last rows), an odd
number of columns (rows 2-byte aligned: the 4-byte alignment test fails, so every
block takes the row loop), and C prefilled with NaN (a block write that missed a piece
or a fallback that wrote outside the array shows)."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl.kernels.gemm_wg import ARC_TILES, gemm_wg
from xetile_dsl.kernels.matmul import matmul

SHAPES = [(128, 128, 64), (72, 100, 40), (33, 47, 17)]


def _operands(M, N, K, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_arc_tiles_gemm_is_exact(M, N, K):
    a, b, ref = _operands(M, N, K, M + N + K)
    c = gemm_wg(a, b, np.full((M, N), np.nan, np.float32), target="cpu-arc", **ARC_TILES)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("M,N,K", [(64, 64, 48), (40, 56, 24)])
def test_subgroup_gemm_store_path_is_exact(M, N, K):
    """The one-subgroup GEMM (coalesced 16x32 operands), f32 C written by block writes
    inside and by the per-lane row loop on the ragged edge."""
    a, b, ref = _operands(M, N, K, 7)
    c = matmul(a, b, np.full((M, N), np.nan, np.float32), BM=16, BN=32, BK=16, target="cpu-arc")
    np.testing.assert_array_equal(c, ref)
