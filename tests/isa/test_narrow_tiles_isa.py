"""Narrow tiles and 8-bit transposes in PVC/ARC machine code:
kernels that were refused now compile to machine code ocloc accepts, without spills or
unresolved calls.  A 16x2 tile is cut into replicated columns: no 2D block message, its
stores per lane; an int8 transpose of a computed value goes through SLM widened to 16
bits: SLM stores and loads of 16-bit data, and no byte-wide SLM access."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from conftest_tools import require_ocloc
from kernels.subgroup_transposes import transpose_computed_kernel
from xetile_dsl.tools import ocloc

SIMD = {"pvc": 16, "arc": 8}


@xd.jit
def column_pair(x, y):
    """y = 2x + 1 on a 16x2 tile."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, 2]))
    xt.store_tile(v * 2.0 + 1.0, xt.init_tile(y, [0, 0], [16, 2]))


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_a_16x2_tile_compiles_to_per_lane_messages(target):
    require_ocloc()
    kernel = xd.compile(column_pair, {"x": "f32[:,:]", "y": "f32[:,:]"}, {}, target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "column_pair", expect_dpas=False, expect_block2d=False,
                           expect_simd=SIMD[target]) == []
    assert ocloc.count(kernel.asm["isa"], r"\bstore\.ugm") >= 1


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_an_int8_transpose_goes_through_slm_in_16_bits(target):
    require_ocloc()
    kernel = xd.compile(transpose_computed_kernel, {"x": "i8[:,:]", "y": "i8[:,:]"}, {"M": 16, "N": 32},
                        target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "transpose_computed_kernel", expect_dpas=False,
                           expect_simd=SIMD[target]) == []
    slm = [line for line in kernel.asm["isa"].splitlines() if re.search(r"\.slm\b", line)]
    assert any("store" in line for line in slm) and any("load" in line for line in slm)
    assert not any(re.search(r"\.d8\b|d8u32", line) for line in slm), "byte-wide SLM access"
