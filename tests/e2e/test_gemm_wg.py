"""Workgroup-level GEMM (XeTile RFC Appendix 2.1: 256x256 workgroup tiles, 32 subgroups
in an [8, 4] layout, cooperative prefetch maps) on the CPU device against numpy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels.gemm_wg import gemm_prefetch, gemm_prefetch_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
CONSTS = {"BM": 256, "BN": 256, "BK": 32, "PF": 3}


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_appendix_2_1_gemm_512_matches_numpy(dtype):
    M = N = K = 512
    rng = np.random.default_rng(21)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = gemm_prefetch(a, b, target="cpu-pvc")
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())


def test_every_subgroup_writes_its_own_piece():
    """Small integers: exact; a C prefilled with NaN shows any piece no subgroup wrote."""
    M, N, K = 512, 256, 96
    rng = np.random.default_rng(22)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = gemm_prefetch(a, b, np.full((M, N), np.nan, np.float32), target="cpu-pvc")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_workgroup_size_is_subgroups_times_lanes():
    for target, lanes in (("cpu-pvc", 16), ("pvc", 16), ("arc", 8)):
        kernel = xd.compile(gemm_prefetch_kernel, SIG, CONSTS, target=target)
        assert kernel.abi.workgroup_size == 32 * lanes
        assert kernel.abi.subgroup_size == lanes
        assert "gpu.subgroup_id" in kernel.asm["xegpu"]


def test_bad_wg_map_points_at_the_user_line():
    with pytest.raises(CompilationError) as info:
        xd.compile(_bad_wg_map_kernel, {"a": "f16[:,:]"}, {}, target="cpu-pvc")
    text = str(info.value)
    assert "init_tile of shape [64, 64]: wg_map dim 1" in text and "divide one another" in text
    assert "wg_map=xt.wg_map(" in text  # the source excerpt


@xd.jit
def _bad_wg_map_kernel(a):
    t = xt.init_tile(a, [0, 0], [64, 64], wg_map=xt.wg_map(sg_layout=[2, 2], sg_data=[32, 48]))
    xt.prefetch_tile(t)


def test_appendix_2_1_gemm_arc_flavour():
    """The same workgroup kernel in the ARC flavour: 8-lane subgroups, 256 work items."""
    M = N = K = 256
    rng = np.random.default_rng(23)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = gemm_prefetch(a, b, target="cpu-arc")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_editing_a_global_wg_map_changes_the_cache_key(monkeypatch):
    import xetile_dsl.kernels.gemm_wg as mod

    specs = {"a": xd.compiler.parse_signature(SIG)["a"]}
    before = gemm_prefetch_kernel.cache_key(specs, CONSTS, "cpu-pvc")
    monkeypatch.setattr(mod, "MP_A", xt.wg_map(sg_layout=[8, 4], sg_data=[32, 16]))
    assert gemm_prefetch_kernel.cache_key(specs, CONSTS, "cpu-pvc") != before


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_coalesced_messages_at_the_edges_are_exact(dtype):
    """M, N and K not multiples of the tiles: the coalesced 32-row, two-block reads of A
    and B (lowering/rewrites/block_messages.py) and the last, partial K step read zeros outside
    the arrays exactly as one read per block did; small integers, so exact; NaN shows
    any C element no subgroup wrote."""
    M, N, K = 264, 280, 72
    rng = np.random.default_rng(24)
    a = rng.integers(-3, 4, (M, K)).astype(dtype)
    b = rng.integers(-3, 4, (K, N)).astype(dtype)
    c = gemm_prefetch(a, b, np.full((M, N), np.nan, np.float32), target="cpu-pvc")
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
