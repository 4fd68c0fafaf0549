"""@jit kernels in the interpreter: the GEMM against numpy and against the compiled kernel
on the OpenCL CPU device (PVC and ARC flavours), padding, launch semantics and checks."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import compiler
from xetile_dsl.errors import LaunchError
from xetile_dsl.kernels.matmul import matmul, matmul_kernel

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _inputs(M, N, K, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(DTYPES[dtype]), rng.standard_normal((K, N)).astype(DTYPES[dtype]))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", [(64, 64, 64), (128, 96, 64), (300, 200, 100)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_in_the_interpreter_matches_numpy(shape, dtype):
    M, N, K = shape
    a, b = _inputs(M, N, K, dtype)
    c = matmul(a, b, target="interpret")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_unaligned_gemm_pads_with_zero_and_writes_only_inside():
    """300x200x100 with 32x32x32 tiles: edge tiles read zeros beyond A and B and drop
    their stores beyond C (prefilled with NaN: any stray or missing write shows)."""
    M, N, K = 300, 200, 100
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    matmul(a, b, c, target="interpret")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_interpreter_agrees_with_the_compiled_kernel_on_the_cpu_device(dtype, flavour):
    """The interpreter is the reference of the compiled path: same kernel, same launch."""
    M, N, K = 160, 96, 128
    a, b = _inputs(M, N, K, dtype, seed=11)
    interpreted = matmul(a, b, BK=32, target="interpret")
    compiled = matmul(a, b, BK=32, target=f"cpu-{flavour}")
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-4, atol=1e-4 * np.abs(interpreted).max())


def test_small_integer_gemm_is_bit_identical_to_the_compiled_kernel():
    M, N, K = 300, 200, 100
    rng = np.random.default_rng(9)
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(np.float16)
    np.testing.assert_array_equal(matmul(a, b, target="interpret"), matmul(a, b, target="cpu-arc"))


def test_xetile_interpret_environment_variable(monkeypatch):
    """XETILE_INTERPRET=1 routes launches without an explicit target to the interpreter
    (a read-only output would be rejected by the same check as a compiled launch)."""
    monkeypatch.setenv("XETILE_INTERPRET", "1")
    a, b = _inputs(64, 32, 32, "f16")
    c = np.zeros((64, 32), np.float32)
    before = compiler.stats["compiles"]
    matmul_kernel[(2, 1)](a, b, c, 32, BM=32, BN=32, BK=32)
    assert compiler.stats["compiles"] == before  # nothing was compiled
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)


@xd.jit
def padded_copy(x, y, PAD: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """Copy BM x BN tiles of x into y; y is larger than x, so edge tiles store padding."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    v = xt.load_tile(xt.init_tile(x, [pid_m * BM, pid_n * BN], [BM, BN]), padding=PAD)
    xt.store_tile(v, xt.init_tile(y, [pid_m * BM, pid_n * BN], [BM, BN]))


@pytest.mark.parametrize("pad,dtype", [(-1.5, np.float32), (3.0, np.float16), (42, np.int32)])
def test_non_zero_padding(pad, dtype):
    x = np.arange(10 * 13).reshape(10, 13).astype(dtype)
    y = np.zeros((16, 16), dtype)
    padded_copy.on("interpret")[(2, 2)](x, y, PAD=pad, BM=8, BN=8)
    want = np.full((16, 16), pad, dtype)
    want[:10, :13] = x
    np.testing.assert_array_equal(y, want)


@xd.jit
def grid_ids(out, BM: xt.constexpr):
    """Program (m, n) fills its own tile with m + num_programs(0) * n + 1, counted by a
    loop of that many trips (which also carries the tile, moved by 0)."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    n = xt.num_programs(0)
    t = xt.init_tile(out, [pid_m * BM, pid_n * BM], [BM, BM])
    v = xt.zeros([BM, BM], xt.int32)
    for i in range(0, pid_m + n * pid_n + 1):   # after the loop: v = pid_m + n*pid_n + 1
        v = v + 1
        t = xt.update_tile_offset(t, 0, 0)
    xt.store_tile(v, t)


def test_grid_and_program_ids():
    out = np.full((24, 16), -1, np.int32)
    grid_ids.on("interpret")[lambda meta: (3, 2)](out, BM=8)
    m, n = np.meshgrid(np.arange(3), np.arange(2), indexing="ij")
    want = np.kron(m + 3 * n + 1, np.ones((8, 8), np.int64))      # one 8x8 tile per program
    np.testing.assert_array_equal(out, want)   # each program wrote its own tile, with its own ids


def test_launch_argument_checks_match_the_compiled_launcher():
    a, b = _inputs(64, 64, 64, "f16")
    c = np.zeros((64, 64), np.float32)
    run = matmul_kernel.on("interpret")
    with pytest.raises(LaunchError, match="grid"):
        run[(0, 1)](a, b, c, 64, BM=32, BN=32, BK=32)
    with pytest.raises(LaunchError, match="C-contiguous"):
        run[(2, 2)](a, np.asfortranarray(b), c, 64, BM=32, BN=32, BK=32)
    c.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        run[(2, 2)](a, b, c, 64, BM=32, BN=32, BK=32)
    with pytest.raises(LaunchError, match="missing"):
        run[(2, 2)](a, b, np.zeros((64, 64), np.float32), BM=32, BN=32, BK=32)
