"""Masked loads compiled by Intel's offline compiler for PVC: Triton's fused-softmax row
load, ``load_tile(t, mask=cols < n_cols, other=-inf)``, stays block messages plus a
select.  A [BM, BLOCK] tile reads with 2D block loads and no per-lane loads; a one-row
[1, BLOCK] tile reads exactly as the same kernel without the mask does (the mask adds no
message: one-row tiles are one-row 2D block messages on PVC, mask or not).
Masked stores: a row edge mask keeps the 2D block store (fewer rows); other masks store per
lane while the stored value's load stays 2D block messages, and no mask reads the stored
array (no read-modify-write)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.masked import masked_copy, softmax_rows, softmax_rows_unmasked
from xetile_dsl.tools import ocloc

SIG = {"x": "f32[:,:]", "y": "f32[:,:]", "N": "i32"}
#: a per-lane (gather) load of global memory: an LSC load of one dword per lane, 64-bit addresses
PER_LANE_LOAD = r"\bload\.ugm\.d32\.a64\b"
#: every global-memory load or store message (kernel arguments are read as a32 bti loads)
GLOBAL_MESSAGES = r"\b(load|store)(_block2d)?\.ugm\.\S*\.a64\b"


def _isa(kernel, BM):
    compiled = xd.compile(kernel, SIG, {"BM": BM, "BN": 256}, target="pvc")
    assert ocloc.check_isa(compiled.asm["zebin"], kernel.__name__, expect_dpas=False,
                           expect_block2d=True, expect_simd=16) == []
    return compiled.asm["isa"]


def test_softmax_tile_masked_load_is_block_loads_and_a_select(ocloc_path):
    isa = _isa(softmax_rows, 4)
    assert ocloc.count(isa, ocloc.LOAD_BLOCK2D) >= 1
    assert ocloc.count(isa, PER_LANE_LOAD) == 0


@pytest.mark.parametrize("BM", [1, 4])
def test_the_mask_adds_no_memory_message(BM, ocloc_path):
    masked, plain = _isa(softmax_rows, BM), _isa(softmax_rows_unmasked, BM)
    assert ocloc.count(plain, GLOBAL_MESSAGES) > 0
    for pattern in (GLOBAL_MESSAGES, ocloc.LOAD_BLOCK2D, PER_LANE_LOAD):
        assert ocloc.count(masked, pattern) == ocloc.count(plain, pattern), pattern


COPY_SIG = {"x": "f32[:,:]", "y": "f32[:,:]", "n_rows": "i32", "n_cols": "i32", "fill": "f32"}
PER_LANE_STORE = r"\bstore\.ugm\.d32\.a64\b"
LOADS = r"\bload(_block2d)?\.ugm\.\S*\.a64\b"


def _copy_isa(store):
    consts = {"BM": 8, "BN": 32, "LOAD": "", "STORE": store, "OTHER": None, "PAD": 0}
    compiled = xd.compile(masked_copy, COPY_SIG, consts, target="pvc")
    assert ocloc.check_isa(compiled.asm["zebin"], "masked_copy", expect_dpas=False, expect_block2d=None,
                           expect_simd=16) == []
    return compiled.asm["isa"]


@pytest.mark.parametrize("store", ["rows", "rows_triton", "rows_swapped"])
def test_row_edge_store_mask_keeps_the_block_store(store, ocloc_path):
    isa, plain = _copy_isa(store), _copy_isa("")
    assert ocloc.count(isa, ocloc.STORE_BLOCK2D) == ocloc.count(plain, ocloc.STORE_BLOCK2D) > 0
    assert ocloc.count(isa, PER_LANE_STORE) == 0
    assert ocloc.count(isa, LOADS) == ocloc.count(plain, LOADS)  # x's load only


@pytest.mark.parametrize("store", ["cols", "general"])
def test_other_store_masks_are_per_lane_stores_without_a_read(store, ocloc_path):
    """8x32 f32 = 16 rows of 16 lanes: 16 predicated per-lane stores; x is read as the
    unmasked copy reads it, with 2D block loads and no per-lane load (the stored value is
    blocked in one-row pieces, cut lane-locally out of the messages' rows; before, one
    per-lane load per piece: 16), and those are the only loads, so y is never read."""
    isa, plain = _copy_isa(store), _copy_isa("")
    assert ocloc.count(isa, ocloc.STORE_BLOCK2D) == 0
    assert ocloc.count(isa, PER_LANE_STORE) == 16
    assert ocloc.count(isa, ocloc.LOAD_BLOCK2D) == ocloc.count(plain, ocloc.LOAD_BLOCK2D) == 2
    assert ocloc.count(isa, PER_LANE_LOAD) == 0
    assert ocloc.count(isa, LOADS) == ocloc.count(plain, LOADS)
