"""Workgroup-level programs that exchange data through shared local memory, run on the
OpenCL CPU device (workgroups of several subgroups, barriers, local memory) against numpy,
in both flavours (16 and 8 lanes)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels import workgroup_slm as W

FLAVOURS = ["cpu-pvc", "cpu-arc"]


@pytest.mark.parametrize("target", FLAVOURS)
def test_conv_layout_round_trip(target):
    """Row bands -> (SLM, barrier) -> column bands; every element lands where it was."""
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    c = np.full_like(a, np.nan)
    W.conv_layout_kernel.on(target)[(1,)](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


@pytest.mark.parametrize("target", FLAVOURS)
def test_rfc_row_reduction_256x128(target):
    """The RFC's workgroup tile_reduce (sg_layout [32, 1]) over two workgroups."""
    a = np.random.default_rng(2).standard_normal((512, 128)).astype(np.float32)
    out = np.full((512, 16), np.nan, np.float32)  # rows of >= 64 bytes; column 0 is the result
    W.row_sum_kernel.on(target)[(2,)](a, out)
    np.testing.assert_allclose(out[:, 0], a.sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", FLAVOURS)
def test_column_max_across_subgroups(target):
    """Each of 4 subgroups holds 16 rows: partial maxima meet in SLM."""
    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    out = np.full((1, 64), np.nan, np.float32)
    W.col_max_kernel.on(target)[(1,)](a, out)
    np.testing.assert_array_equal(out[0], a.max(0))


@pytest.mark.parametrize("target", FLAVOURS)
def test_workgroup_gemm_with_row_sum_epilogue(target):
    """C = A @ B over a 2x2 grid of 64x64 workgroup tiles, and each workgroup's row sums of
    its C tile (conv_layout from the mma map [2,2] to row bands [4,1], then reduce)."""
    M, N, K = 128, 128, 64
    rng = np.random.default_rng(4)
    a = rng.integers(-2, 3, (M, K)).astype(np.float16)
    b = rng.integers(-2, 3, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    rowsum = np.full((M, 16), np.nan, np.float32)
    W.gemm_rowsum_kernel.on(target)[(2, 2)](a, b, c, rowsum, K, BK=32)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(c, ref)
    np.testing.assert_array_equal(rowsum[:, :2], ref.reshape(M, 2, 64).sum(2))


def test_slm_budget_is_checked_against_the_target():
    """128 KiB of f32 fits PVC's SLM whole; ARC's 64 KiB take it in two rounds of 128 rows
    (tests/e2e/test_conv_rounds.py runs it)."""
    sig = {"a": "f32[:,:]", "c": "f32[:,:]"}
    pvc = xd.compile(W.big_conv_kernel, sig, {}, target="cpu-pvc").asm["xegpu"]
    assert "memref.alloc() : memref<256x128xf32, 3 : i64>" in pvc and "scf.for" not in pvc
    arc = xd.compile(W.big_conv_kernel, sig, {}, target="cpu-arc").asm["xegpu"]
    assert "memref.alloc() : memref<128x128xf32, 3 : i64>" in arc and "scf.for" in arc


@xd.jit
def _many_subgroups_kernel(a):
    t = xt.init_tile(a, [0, 0], [256, 256], wg_map=xt.wg_map(sg_layout=[32, 4], sg_data=[8, 64]))
    xt.prefetch_tile(t)


def test_workgroup_size_limit_is_explained():
    """128 subgroups: 1024 work items at 8 lanes (arc) fit, 2048 at 16 lanes (pvc) do not."""
    sig = {"a": "f16[:,:]"}
    assert xd.compile(_many_subgroups_kernel, sig, {}, target="cpu-arc").abi.workgroup_size == 1024
    with pytest.raises(CompilationError) as info:
        xd.compile(_many_subgroups_kernel, sig, {}, target="cpu-pvc")
    assert "128 subgroups of 16 lanes = 2048 work items per workgroup, but pvc runs at most 1024" in str(info.value)


@pytest.mark.parametrize("target", FLAVOURS)
def test_cooperative_load_gemm_through_slm(target):
    """RFC 2.4's idea: A and B loaded in bands by all subgroups, moved into the mma maps
    through SLM each K step (two barriers per exchange), including VNNI-packed B."""
    M, N, K = 128, 128, 96
    rng = np.random.default_rng(5)
    a = rng.integers(-2, 3, (M, K)).astype(np.float16)
    b = rng.integers(-2, 3, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    W.gemm_coop_kernel.on(target)[(2, 2)](a, b, c, K, BK=32)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@xd.jit
def _row_sum_split_kernel(a, out):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [64, 64], wg_map=xt.wg_map(sg_layout=[1, 4], sg_data=[64, 16])))
    s = xt.tile_reduce("add", v, [1])
    xt.store_tile(s, xt.init_tile(out, [0, 0], [64, 1], wg_map=xt.wg_map(sg_layout=[1, 4], sg_data=[64, 1])))


@pytest.mark.parametrize("target", FLAVOURS)
def test_row_reduction_split_across_subgroups(target):
    """Column bands [1, 4]: each subgroup's 16 partial columns -> 64x4 partials in SLM,
    every subgroup adds the 4 partials of each row (all write the same result)."""
    a = np.random.default_rng(5).integers(-8, 9, (64, 64)).astype(np.float32)
    out = np.full((64, 16), np.nan, np.float32)
    _row_sum_split_kernel.on(target)[(1,)](a, out)
    np.testing.assert_array_equal(out[:, 0], a.sum(1))
