"""xetile-wg-to-sg's first rule (lowering/passes/wg_to_sg/operand_swap.py): a K loop reading both tile_mma
operands through order=(0, 1) tiles accumulates C^T with row-major operand reads and
stores it through a transposed view of C; a swapped C subgroup tile narrower than 16
(an 8-row M = 1 tile) keeps the transposed reads."""
from __future__ import annotations

import pytest

from tests.lowering.test_lowering_rules import opt, wg


def _kernel(bm: int, bn: int, sm: int, sn: int, stored_transposed: bool = True) -> str:
    """The K loop with A and B stored transposed (``order = [0, 1]`` tiles), or both
    row-major (``stored_transposed=False``: the plain A.B GEMM)."""
    bk = 32
    ma, mb, mc = wg([sm, sn], [bm // sm, bk]), wg([sm, sn], [bk, bn // sn]), wg([sm, sn], [bm // sm, bn // sn])
    order = "order = [0, 1], " if stored_transposed else ""
    ta = f"!xetile.tile<{bm}x{bk}xf16, #xetile.tile_attr<{order}wg_map = {ma}>>"
    tb = f"!xetile.tile<{bk}x{bn}xf16, #xetile.tile_attr<{order}wg_map = {mb}>>"
    tc = f"!xetile.tile<{bm}x{bn}xf32, #xetile.tile_attr<wg_map = {mc}>>"
    mem = "memref<?x?xf16, strided<[?, 1]>>"
    cmem = "memref<?x?xf32, strided<[?, 1]>>"
    strides = "[%c1, %n]" if stored_transposed else "[%n, %c1]"
    return f"""
func.func @k(%a: {mem}, %b: {mem}, %c: {cmem}, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %ta0 = xetile.init_tile %a[%c0, %c0], [%n, %n], {strides} : {mem} -> {ta}
  %tb0 = xetile.init_tile %b[%c0, %c0], [%n, %n], {strides} : {mem} -> {tb}
  %z = arith.constant dense<0.0> : vector<{bm}x{bn}xf32>
  %acc, %ta, %tb = scf.for %k = %c0 to %n step %c32 iter_args(%acc1 = %z, %ta1 = %ta0, %tb1 = %tb0) -> (vector<{bm}x{bn}xf32>, {ta}, {tb}) {{
    %va = xetile.load_tile %ta1 : {ta} -> vector<{bm}x{bk}xf16>
    %vb = xetile.load_tile %tb1 : {tb} -> vector<{bk}x{bn}xf16>
    %r = xetile.tile_mma %va, %vb, %acc1 {{wg_map = {mc}}} : vector<{bm}x{bk}xf16>, vector<{bk}x{bn}xf16>, vector<{bm}x{bn}xf32> -> vector<{bm}x{bn}xf32>
    %ta2 = xetile.update_tile_offset %ta1, %c0, %c32 : {ta}
    %tb2 = xetile.update_tile_offset %tb1, %c32, %c0 : {tb}
    scf.yield %r, %ta2, %tb2 : vector<{bm}x{bn}xf32>, {ta}, {tb}
  }}
  %tc = xetile.init_tile %c[%c0, %c0], [%n, %n], [%n, %c1] : {cmem} -> {tc}
  xetile.store_tile %acc, %tc : vector<{bm}x{bn}xf32>, {tc}
  func.return
}}"""


def test_both_transposed_operands_swap(tmp_path):
    out = opt(tmp_path, _kernel(64, 128, 2, 2), "xetile-wg-to-sg{target=pvc}")
    loads = [line for line in out.splitlines() if "xetile.load_tile" in line]
    # subgroup pieces: B^T-stored as operand A (64x32 row-major), A^T-stored as operand B (32x32)
    assert loads and not any("order = [0, 1]" in line for line in loads), out
    assert "tile_mma" in out and "vector<64x32xf32>" in out, out  # C^T piece of a 32x64 C piece
    store = [line for line in out.splitlines() if "xetile.store_tile" in line]
    assert store and all("order = [0, 1]" in line for line in store), out


@pytest.mark.parametrize("bm,sm", [(8, 1)])
def test_narrow_c_keeps_transposed_reads(tmp_path, bm, sm):
    out = opt(tmp_path, _kernel(bm, 128, sm, 4), "xetile-wg-to-sg{target=pvc}")
    loads = [line for line in out.splitlines() if "xetile.load_tile" in line]
    assert loads and all("order = [0, 1]" in line for line in loads), out


def test_row_major_gemm_swaps_where_transposed_reads_are_lane_rows(tmp_path):
    """ARC reads transposed 16-bit operands with per-lane row loads
    (``Target.lane_row_load_elem_bits``), so a plain A.B loop computes C^T = B^T.A^T
    there (both operands read through order=[0, 1] tiles, C^T stored through a column
    view of C); pvc keeps it as written (2D block reads)."""
    kernel = _kernel(64, 64, 2, 2, stored_transposed=False)
    arc = opt(tmp_path, kernel, "xetile-wg-to-sg{target=arc}")
    loads = [line for line in arc.splitlines() if "xetile.load_tile" in line]
    assert len(loads) == 2 and all("order = [0, 1]" in line for line in loads), arc
    store = [line for line in arc.splitlines() if "xetile.store_tile" in line]
    assert store and all("order = [0, 1]" in line for line in store), arc
    pvc = opt(tmp_path, kernel, "xetile-wg-to-sg{target=pvc}")
    loads = [line for line in pvc.splitlines() if "xetile.load_tile" in line]
    assert len(loads) == 2 and not any("order = [0, 1]" in line for line in loads), pvc
