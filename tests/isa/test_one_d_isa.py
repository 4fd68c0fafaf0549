"""Tiles of 1-D arrays in PVC machine code: a 256-element load of a 1-D array is one-row
2D block messages, eight ``1r16x2c`` for f16 (two blocks per message, block_messages.py)
and sixteen ``1r16x1c`` for f32 (one element per lane: the widest 32-bit one-row read),
and its store sixteen one-row 2D block writes, with no per-lane gather or scatter
(docs/decisions/025-one-dimensional-values.md); a ``[1, 256]`` tile of a 2-D array (a
norm weight stored ``[1, N]``, a row of a matrix) is read and written alike."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.tools import ocloc

#: a SIMD8/16/32 LSC message of global memory: one address per lane (a gather or scatter)
PER_LANE = r"send\.ugm \((8|16|32)\|M0\)"


@xd.jit
def copy_1d(x, out, BLOCK: xt.constexpr):
    off = xt.program_id(0) * BLOCK
    xt.store_tile(xt.load_tile(xt.init_tile(x, [off], [BLOCK])), xt.init_tile(out, [off], [BLOCK]))


@pytest.mark.parametrize("dtype, loads", [("f16", 8), ("f32", 16)])
def test_one_d_load_is_block_messages(dtype, loads, ocloc_path):
    compiled = xd.compile(copy_1d, {"x": f"{dtype}[:]", "out": f"{dtype}[:]"}, {"BLOCK": 256}, target="pvc")
    isa = compiled.asm["isa"]
    assert ocloc.count(isa, ocloc.LOAD_BLOCK2D) == loads
    assert ocloc.count(isa, ocloc.STORE_BLOCK2D) == 256 // 16
    assert ocloc.count(isa, PER_LANE) == 0
    assert compiled.report().spill_bytes == 0
    assert {p.name: p.block2d for p in compiled.abi.params} == {"x": True, "out": True}


@xd.jit
def copy_row(x, out, BLOCK: xt.constexpr):
    r, c = xt.program_id(0), xt.program_id(1) * BLOCK
    xt.store_tile(xt.load_tile(xt.init_tile(x, [r, c], [1, BLOCK])), xt.init_tile(out, [r, c], [1, BLOCK]))


@pytest.mark.parametrize("dtype, loads", [("f16", 8), ("f32", 16)])
def test_row_of_2d_array_is_block_messages(dtype, loads, ocloc_path):
    """Before one-row block messages of 2-D arrays: 16 per-lane loads and 16 per-lane stores."""
    compiled = xd.compile(copy_row, {"x": f"{dtype}[:, :]", "out": f"{dtype}[:, :]"}, {"BLOCK": 256}, target="pvc")
    isa = compiled.asm["isa"]
    assert ocloc.count(isa, ocloc.LOAD_BLOCK2D) == loads
    assert ocloc.count(isa, ocloc.STORE_BLOCK2D) == 256 // 16
    assert ocloc.count(isa, PER_LANE) == 0
    assert compiled.report().spill_bytes == 0
    assert {p.name: p.block2d for p in compiled.abi.params} == {"x": True, "out": True}
