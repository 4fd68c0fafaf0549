"""XeTile RFC Appendix 2.4 in its literal form (kernels/gemm_slm_ring.py): cooperative
global loads into a ring of K slices in user-allocated SLM (``xt.slm_alloc``), read back
with the mma maps; the RFC's maps exactly, 64 subgroups, 256x256 workgroup tiles."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError, CompilationWarning
from xetile_dsl.kernels.gemm_slm_ring import RFC_MAPS, gemm_slm_ring, gemm_slm_ring_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _operands(m, n, k, seed):
    """Small-integer f16 inputs: every f32 sum is exact, so results compare exactly."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _nan_c(m, n):
    return np.full((m, n), np.nan, np.float32)


def test_rfc_maps_at_512_cubed_pvc_flavour():
    """2x2 workgroups of 256x256, 64 subgroups x 16 lanes = 1024 work items each; the
    whole ring (4 slices of A and B = 128 KiB) is PVC's SLM; no compiler warning."""
    a, b, ref = _operands(512, 512, 512, 24)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationWarning)
        c = gemm_slm_ring(a, b, _nan_c(512, 512), "cpu-pvc")
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("k,ring", [(160, 4), (224, 3)], ids=["K160-ring4", "K224-ring3"])
def test_partial_rings_pvc_flavour(k, ring):
    """K not a multiple of the ring (the offsets wrap mid-way; the last global slices
    read past K as zeros), and a ring of 3 slices (96 KiB)."""
    a, b, ref = _operands(256, 256, k, 25)
    np.testing.assert_array_equal(gemm_slm_ring(a, b, _nan_c(256, 256), "cpu-pvc", ring), ref)


def test_the_kernel_uses_exactly_the_rfc_maps_and_slm():
    kernel = xd.compile(gemm_slm_ring_kernel, SIG, {"RING": 4}, target="cpu-pvc")
    ir = kernel.asm["xetile"]
    found = {tuple(map(int, g)) for g in re.findall(r"sg_layout = \[(\d+), (\d+)\], sg_data = \[(\d+), (\d+)\]", ir)}
    assert found == {(*m.sg_layout, *m.sg_data) for m in RFC_MAPS.values()}
    assert "memref.alloc() : memref<256x128xf16, 3 : i64>" in ir
    assert "memref.alloc() : memref<128x256xf16, 3 : i64>" in ir
    assert len(re.findall(r"!xetile.tile<256x32xf16, #xetile.tile_attr<wg_map = [^>]*>, memory_space = 3>", ir)) > 0
    loop = ir[ir.index("scf.for %k"):]
    assert loop.count('"gpu.barrier"') == 1 and "xetile.tile_mma" in loop
    assert kernel.abi.workgroup_size == 64 * 16


def test_rfc_ring_on_arc_says_why_at_the_slm_alloc():
    """4 slices of 256x32 + 32x256 f16 = 128 KiB > ARC's 64 KiB of SLM."""
    with pytest.raises(CompilationError) as info:
        xd.compile(gemm_slm_ring_kernel, SIG, {"RING": 4}, target="cpu-arc")
    text = str(info.value)
    assert ("the xt.slm_alloc buffers of this kernel need 131072 B of shared local memory "
            "(256x128 f16 = 65536 B, 128x256 f16 = 65536 B), but arc has 65536 B per workgroup") in text
    assert "b_slm = xt.slm_alloc([RING * 32, 256], xt.float16)" in text  # the user's line


def test_ring_of_two_fits_arc_flavour():
    """A ring of 2 (64 KiB, with the second barrier it needs) fits ARC's SLM; the
    32x32 f32 accumulator + A + B fill ARC's register file (warned), results are right."""
    a, b, ref = _operands(256, 256, 128, 26)
    with pytest.warns(CompilationWarning, match="will spill"):
        c = gemm_slm_ring(a, b, _nan_c(256, 256), "cpu-arc", ring=2)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("mode", ["interpret", "interpret-subgroups"])
def test_interpreter_agrees_with_the_compiled_kernel(mode):
    a, b, ref = _operands(256, 512, 192, 27)
    compiled = gemm_slm_ring(a, b, _nan_c(256, 512), "cpu-pvc")
    interpreted = gemm_slm_ring(a, b, _nan_c(256, 512), mode)
    np.testing.assert_array_equal(compiled, ref)
    np.testing.assert_array_equal(interpreted, compiled)


MP = xt.wg_map(sg_layout=[4, 4], sg_data=[16, 16])


@xd.jit
def _copy_with_tiles_made_in_the_loop(a, o):
    for k in range(0, 4):
        xt.store_tile(xt.load_tile(xt.init_tile(a, [0, k * 64], [64, 64], wg_map=MP)),
                      xt.init_tile(o, [0, k * 64], [64, 64], wg_map=MP))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_init_tile_in_a_loop_with_subgroup_offsets(target):
    """Regression: LLVM's loop strength reduction turned the subgroup column
    ``(id mod 4) * 16`` plus the loop's offset into ``(id & 255) << 4`` (an i2 widened
    without its mask), so subgroups of rows 1..3 skipped iterations; codegen now freezes
    subgroup coordinates."""
    a = np.random.default_rng(28).standard_normal((64, 256)).astype(np.float16)
    o = np.full((64, 256), np.nan, np.float16)
    _copy_with_tiles_made_in_the_loop.on(target)[(1,)](a, o)
    np.testing.assert_array_equal(o, a)


def test_slm_tiles_must_be_row_major():
    @xd.jit
    def bad(a):
        s = xt.slm_alloc([64, 64], xt.float16)
        xt.store_tile(xt.load_tile(xt.init_tile(a, [0, 0], [64, 64])), xt.init_tile(s, [0, 0], [64, 64], order=(0, 1)))

    with pytest.raises(CompilationError, match=r"a tile of an xt.slm_alloc buffer must be row-major"):
        xd.compile(bad, {"a": "f16[:,:]"}, {}, target="cpu-pvc")
