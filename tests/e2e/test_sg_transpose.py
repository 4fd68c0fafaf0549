"""Subgroup-level tile_transpose (no wg_map, lowering/passes/sg_transpose.py) on the CPU device,
PVC and ARC flavours, against numpy and the interpreter: the transpose of a loaded tile
(folded into an order=[0, 1] load), of a computed tile (lane shuffles in registers at these
sizes; tests/e2e/test_register_transpose.py covers the SLM fallbacks), and as
tile_mma's B operand (C = A @ BT^T with BT loaded, or computed)."""
from __future__ import annotations

import numpy as np
import pytest

from kernels.subgroup_transposes import (matmul_bt_computed_kernel, matmul_bt_loaded_kernel,
                                             transpose_column_major_kernel, transpose_computed_kernel,
                                             transpose_loaded_kernel,
                                             workgroup_copy_and_sg_transpose_kernel)

DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32}
KERNELS = {"loaded": (transpose_loaded_kernel, lambda x: x),
           "computed": (transpose_computed_kernel, lambda x: x * 2 + 1)}
WORKGROUPS = 3  # each workgroup transposes its own rows: their SLM buffers must not mix
PITCH = 64      # array rows of at least 64 elements: 2D block messages need 64-byte rows


def _shapes(flavour):
    """Tile shapes [M, N] whose source and transpose are both legal tiles: 8x32's
    32x8 transpose is narrower than PVC's 16-lane blocks."""
    return [(16, 16), (32, 16), (16, 32)] + ([(8, 32)] if flavour == "arc" else [])


def _input(rows, dtype, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(-40, 40, (rows, PITCH)).astype(DTYPES[dtype])


def _transpose(device, which, x, M, N):
    kernel, _ = KERNELS[which]
    y = np.zeros((N, max(WORKGROUPS * M, PITCH)), x.dtype)
    kernel.on(device)[(WORKGROUPS,)](x, y, M=M, N=N)
    return y[:, :WORKGROUPS * M]


def _expected(which, x, M, N):
    f = KERNELS[which][1]
    return np.concatenate([f(x[p * M:(p + 1) * M, :N]).T for p in range(WORKGROUPS)], axis=1)


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "i32"])
@pytest.mark.parametrize("which", ["loaded", "computed"])
def test_transpose_matches_numpy(which, dtype, flavour):
    for M, N in _shapes(flavour):
        x = _input(WORKGROUPS * M, dtype, seed=M + N)
        y = _transpose(f"cpu-{flavour}", which, x, M, N)
        np.testing.assert_array_equal(y, _expected(which, x, M, N), err_msg=f"{M}x{N}")


@pytest.mark.parametrize("which", ["loaded", "computed"])
def test_interpreter_agrees(which):
    M, N = 32, 16
    x = _input(WORKGROUPS * M, "f16", seed=5)
    interp = _transpose("interpret", which, x, M, N)
    np.testing.assert_array_equal(interp, _expected(which, x, M, N))
    np.testing.assert_array_equal(_transpose("cpu-pvc", which, x, M, N), interp)


def _gemm(device, which, a, bt, tiles):
    (M, K), N = a.shape, bt.shape[0]
    BM, BN, BK = tiles
    kernel = matmul_bt_loaded_kernel if which == "loaded" else matmul_bt_computed_kernel
    c = np.zeros((M, N), np.float32)
    kernel.on(device)[(M // BM, N // BN)](a, bt, c, K, BM=BM, BN=BN, BK=BK)
    return c


@pytest.mark.parametrize("flavour,dtype", [("pvc", "f16"), ("pvc", "f32"), ("arc", "f16")])
@pytest.mark.parametrize("which", ["loaded", "computed"])
def test_transpose_as_mma_b_operand(which, flavour, dtype):
    """Small integers: f16 and tf32 products and their f32 sums are exact."""
    M, N, K = 64, 64, 96
    rng = np.random.default_rng(11)
    a = rng.integers(-3, 4, (M, K)).astype(DTYPES[dtype])
    bt = rng.integers(-3, 4, (N, K)).astype(DTYPES[dtype])
    tiles = (32, 32, 32) if flavour == "pvc" else (16, 16, 32)
    c = _gemm(f"cpu-{flavour}", which, a, bt, tiles)
    b = bt.T.astype(np.float64)
    ref = a.astype(np.float64) @ (b if which == "loaded" else b * 2 + 1)
    np.testing.assert_array_equal(c, ref)


def test_mma_interpreter_agrees():
    rng = np.random.default_rng(12)
    a = rng.integers(-3, 4, (32, 64)).astype(np.float16)
    bt = rng.integers(-3, 4, (32, 64)).astype(np.float16)
    interp = _gemm("interpret", "computed", a, bt, (32, 32, 32))
    np.testing.assert_array_equal(interp, a.astype(np.float64) @ (bt.T.astype(np.float64) * 2 + 1))
    np.testing.assert_array_equal(_gemm("cpu-pvc", "computed", a, bt, (32, 32, 32)), interp)


@pytest.mark.parametrize("device", ["cpu-pvc", "cpu-arc", "interpret"])
def test_undistributed_transpose_in_a_workgroup_kernel(device):
    rng = np.random.default_rng(13)
    x = rng.integers(-40, 40, (32, PITCH)).astype(np.float32)
    z = rng.integers(-40, 40, (32, PITCH)).astype(np.float32)
    y, w = np.zeros_like(x), np.zeros((16, PITCH), np.float32)
    workgroup_copy_and_sg_transpose_kernel.on(device)[(1,)](x, y, z, w)
    np.testing.assert_array_equal(y[:, :32], x[:, :32] + 1)
    np.testing.assert_array_equal(w[:, :32], (z[:, :16] * 2 + 1).T)


@pytest.mark.parametrize("device", ["cpu-pvc", "cpu-arc", "interpret"])
def test_transpose_of_a_column_major_load_is_the_row_major_array(device):
    x = _input(16, "f32", seed=14)
    y = np.zeros((16, PITCH), np.float32)
    transpose_column_major_kernel.on(device)[(1,)](x, y, M=32, N=16)
    np.testing.assert_array_equal(y[:, :32], x[:, :32])


@pytest.mark.parametrize("device", ["cpu-pvc", "cpu-arc", "interpret"])
def test_computed_8bit_transpose_is_exact(device):
    """8-bit values go through SLM widened to 16 bits (byte-wide
    transposed SLM reads came back wrong, so this used to be refused). int8 arithmetic
    wraps: 2 * x + 1 for x in [-40, 40) stays in range, so numpy's int8 result is exact."""
    x = _input(16, "i32", 5).astype(np.int8)
    y = np.zeros((32, 64), np.int8)
    transpose_computed_kernel.on(device)[(1,)](x, y, M=16, N=32)
    np.testing.assert_array_equal(y[:32, :16], (x[:16, :32] * 2 + 1).T)


def test_loaded_8bit_transpose_is_folded_and_exact():
    """The 8-bit transpose of a loaded tile needs no SLM (folded into the load): it runs."""
    x = _input(64, "i32", 6).astype(np.int8)
    y = np.zeros((64, 64), np.int8)
    transpose_loaded_kernel.on("cpu-pvc")[(1,)](x, y, M=32, N=64)
    np.testing.assert_array_equal(y[:64, :32], x[:32, :64].T)
