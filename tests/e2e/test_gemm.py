"""The spine: the GEMM kernel from Python source to a verified result on the CPU device,
in the PVC (16-lane, 2D-block builtins emulated) and ARC (8-lane, plain loads) flavours."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from f32_accumulate_ref import exact_products_matmul, excess, f16_accumulating_matmul
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
    ref, bound = exact_products_matmul(a, b)        # exact products, f32 sums: tests/f32_accumulate_ref.py
    assert excess(c, ref, bound) <= 1.0, f"|c - ref| exceeds the f32-accumulation bound {excess(c, ref, bound):.3g}x"


def test_the_gemm_bound_rejects_an_f16_accumulating_gemm():
    """The bound above can fail: the 512^3 f16 operands of test_gemm_matches_numpy summed in
    f16 exceed it (about 86x; its largest error, 0.93, was inside the former tolerance
    atol = 1e-2 * max|ref| = 1.03), the same products summed in f32 (numpy) do not."""
    M = N = K = 512
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref, bound = exact_products_matmul(a, b)
    assert excess(a.astype(np.float32) @ b.astype(np.float32), ref, bound) <= 1.0
    assert excess(f16_accumulating_matmul(a, b), ref, bound) > 10.0


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
