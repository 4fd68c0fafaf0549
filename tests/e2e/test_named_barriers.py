"""Cross-subgroup exchanges whose barriers xetile-wg-to-sg makes named barriers per group
of subgroups (pvc) or keeps as workgroup barriers (arc), run against numpy on the
OpenCL CPU device in both flavours and in both interpreter modes (the per-subgroup one
executes the named barriers with their own semantics)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.kernels import workgroup_slm as W

MODES = ["cpu-pvc", "cpu-arc", "interpret", "interpret-subgroups"]
F32_IO = {"a": "f32[:,:]", "out": "f32[:,:]"}
GEMM_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "rowsum": "f32[:,:]", "K": "i32"}


def _ints(shape, seed, dtype=np.float32):
    """Small integers: every summation order gives the exact sum."""
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
def test_row_sums_over_an_8x4_grid(mode):
    """tile_reduce [1] of 128x64 tiles over [8, 4] subgroups (grid rows exchange), 3 workgroups."""
    a = _ints((384, 64), 1)
    out = np.full((384, 16), np.nan, np.float32)  # rows of >= 64 bytes; column 0 is the result
    W.grid_row_sum_kernel.on(mode)[(3,)](a, out)
    np.testing.assert_array_equal(out[:, 0], a.sum(1))


@pytest.mark.parametrize("mode", MODES)
def test_column_sums_over_an_8x4_grid(mode):
    """tile_reduce [0] of 128x64 tiles over [8, 4] subgroups (grid columns exchange)."""
    a = _ints((384, 64), 2)
    out = np.full((3, 64), np.nan, np.float32)
    W.grid_col_sum_kernel.on(mode)[(3,)](a, out)
    np.testing.assert_array_equal(out, a.reshape(3, 128, 64).sum(1))


@pytest.mark.parametrize("mode", MODES)
def test_gemm_with_row_sum_epilogue(mode):
    """C = A @ B over [2, 2] subgroups per 64x64 tile; the row-sum partials of the two
    subgroups of a grid row meet behind their own named barrier (2 groups of 2 on pvc)."""
    M, N, K = 128, 128, 64
    a, b = _ints((M, K), 3, np.float16) // 4, _ints((K, N), 4, np.float16) // 4
    c = np.full((M, N), np.nan, np.float32)
    rowsum = np.full((M, 16), np.nan, np.float32)
    W.gemm_rowsum_kernel.on(mode)[(2, 2)](a, b, c, rowsum, K, BK=32)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(c, ref)
    np.testing.assert_array_equal(rowsum[:, :2], ref.reshape(M, 2, 64).sum(2))


@pytest.mark.parametrize("mode", ["cpu-pvc", "interpret-subgroups"])
def test_cooperative_gemm_with_named_and_workgroup_barriers_in_the_loop(mode):
    """gemm_coop_kernel: A's exchange stays inside grid rows (named barriers), B's connects
    every subgroup (gpu.barrier); both inside the K loop."""
    M, N, K = 64, 128, 96
    a, b = _ints((M, K), 5, np.float16) // 4, _ints((K, N), 6, np.float16) // 4
    c = np.full((M, N), np.nan, np.float32)
    W.gemm_coop_kernel.on(mode)[(1, 2)](a, b, c, K, BK=32)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("fn,sig,consts,groups,count", [
    (W.grid_row_sum_kernel, F32_IO, {}, 8, 4),
    (W.grid_col_sum_kernel, F32_IO, {}, 4, 8),
    (W.gemm_rowsum_kernel, GEMM_SIG, {"BK": 32}, 2, 2),
], ids=["rows", "cols", "gemm_rowsum"])
def test_the_decision_is_visible_in_the_xegpu_ir(fn, sig, consts, groups, count):
    pvc = xd.compile(fn, sig, consts, target="pvc").asm["xegpu"]
    assert f"xegpu.alloc_nbarrier {groups}" in pvc and f"%nb_count = arith.constant {count} : i8" in pvc
    assert "gpu.barrier" not in pvc and pvc.count("xegpu.nbarrier_wait %nb") == 1
    arc = xd.compile(fn, sig, consts, target="arc").asm["xegpu"]
    assert "nbarrier" not in arc and arc.count("gpu.barrier") == 1
