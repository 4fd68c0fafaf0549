"""The spine: the GEMM kernel from Python source to a verified result on the CPU device,
in the PVC (16-lane, 2D-block builtins emulated) and ARC (8-lane, plain loads) flavours."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from xetile_dsl.kernels.matmul import matmul

SHAPES = [(256, 256, 256), (512, 512, 512), (256, 512, 256), (300, 200, 100)]
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_matches_numpy(shape, dtype, flavour):
    M, N, K = shape
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    a = rng.standard_normal((M, K)).astype(DTYPES[dtype])
    b = rng.standard_normal((K, N)).astype(DTYPES[dtype])
    c = matmul(a, b, target=f"cpu-{flavour}")
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_unaligned_edges_are_zero_filled_and_not_written(flavour):
    """300x200x100: the last row/column/K tiles hang over the edges of every array."""
    M, N, K = 300, 200, 100
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    matmul(a, b, c, target=f"cpu-{flavour}")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))  # small ints: exact


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("tiles", [(16, 16, 16), (32, 64, 32), (64, 32, 16), (16, 32, 64)])
def test_tile_shapes(tiles, flavour):
    BM, BN, BK = tiles
    M, N, K = 128, 128, 96
    rng = np.random.default_rng(1)
    a = rng.integers(-2, 3, (M, K)).astype(np.float16)
    b = rng.integers(-2, 3, (K, N)).astype(np.float16)
    c = matmul(a, b, BM=BM, BN=BN, BK=BK, target=f"cpu-{flavour}")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
