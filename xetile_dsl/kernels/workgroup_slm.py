"""Workgroup-level kernels that exchange data between subgroups through shared local
memory (XeTile RFC, Workgroup Level extension): a layout conversion, reductions across
the rows and columns of a workgroup tile, and the Appendix 2.2 style GEMM with a row-sum
epilogue (tile_conv_layout from the mma map to a row map, then a per-subgroup reduce)."""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt

#: the RFC's tile_reduce example: 32 subgroups, each with 8 whole rows of a 256x128 tile
MP_ROWS8 = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 128])
#: 4 subgroups: row bands / column bands of a 64x64 tile
MP_ROWBAND = xt.wg_map(sg_layout=[4, 1], sg_data=[16, 64])
MP_COLBAND = xt.wg_map(sg_layout=[1, 4], sg_data=[64, 16])
#: a 64x64 GEMM tile over a [2, 2] subgroup grid, and the row map its epilogue reduces in
MP_C = xt.wg_map(sg_layout=[2, 2], sg_data=[32, 32])
MP_C_ROWS = xt.wg_map(sg_layout=[4, 1], sg_data=[16, 64])


@xd.jit
def conv_layout_kernel(a, c):
    """``c = 2a + 1``: loaded in row bands, converted to column bands, stored."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [64, 64], wg_map=MP_ROWBAND))
    w = xt.tile_conv_layout(v * 2.0, MP_COLBAND)
    xt.store_tile(w + 1.0, xt.init_tile(c, [0, 0], [64, 64], wg_map=MP_COLBAND))


@xd.jit
def row_sum_kernel(a, out):
    """The RFC's workgroup tile_reduce: row sums of a 256x128 tile per workgroup,
    sg_layout [32, 1] (each subgroup reduces its 8 whole rows; result map [8, 1])."""
    m = xt.program_id(0) * 256
    v = xt.load_tile(xt.init_tile(a, [m, 0], [256, 128], wg_map=MP_ROWS8))
    s = xt.tile_reduce("add", v, [1])
    xt.store_tile(s, xt.init_tile(out, [m, 0], [256, 1], wg_map=xt.wg_map(sg_layout=[32, 1], sg_data=[8, 1])))


@xd.jit
def col_max_kernel(a, out):
    """Column maxima of a 64x64 tile split in row bands: each subgroup reduces its band,
    the partials meet in SLM after a barrier and every subgroup combines them."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [64, 64], wg_map=MP_ROWBAND))
    s = xt.tile_reduce("max", v, [0])
    xt.store_tile(s, xt.init_tile(out, [0, 0], [1, 64], wg_map=xt.wg_map(sg_layout=[4, 1], sg_data=[1, 64])))


#: a 128x64 tile over an [8, 4] subgroup grid (16x16 pieces), and its row / column results
MP_GRID = xt.wg_map(sg_layout=[8, 4], sg_data=[16, 16])
MP_GRID_ROWS = xt.wg_map(sg_layout=[8, 4], sg_data=[16, 1])
MP_GRID_COLS = xt.wg_map(sg_layout=[8, 4], sg_data=[1, 16])


@xd.jit
def grid_row_sum_kernel(a, out):
    """Row sums of 128x64 tiles split over [8, 4] subgroups: only the 4 subgroups of a
    row of the grid exchange partials (8 independent groups: named barriers on pvc)."""
    m = xt.program_id(0) * 128
    v = xt.load_tile(xt.init_tile(a, [m, 0], [128, 64], wg_map=MP_GRID))
    s = xt.tile_reduce("add", v, [1])
    xt.store_tile(s, xt.init_tile(out, [m, 0], [128, 1], wg_map=MP_GRID_ROWS))


@xd.jit
def grid_col_sum_kernel(a, out):
    """Column sums of 128x64 tiles split over [8, 4] subgroups: only the 8 subgroups of a
    column of the grid exchange partials (4 independent groups)."""
    m = xt.program_id(0) * 128
    v = xt.load_tile(xt.init_tile(a, [m, 0], [128, 64], wg_map=MP_GRID))
    s = xt.tile_reduce("add", v, [0])
    xt.store_tile(s, xt.init_tile(out, [xt.program_id(0), 0], [1, 64], wg_map=MP_GRID_COLS))


@xd.jit
def gemm_rowsum_kernel(a, b, c, rowsum, K, BK: xt.constexpr):
    """``c = a @ b`` (64x64 workgroup tiles, [2, 2] subgroups) and ``rowsum = c.sum(1)``:
    written as a conversion from the mma map to row bands and a row reduce; the compiler
    reduces each subgroup's piece first and exchanges only the 64x2 partials through SLM."""
    m = xt.program_id(0) * 64
    n = xt.program_id(1) * 64
    ta = xt.init_tile(a, [m, 0], [64, BK], wg_map=xt.wg_map(sg_layout=[2, 2], sg_data=[32, BK]))
    tb = xt.init_tile(b, [0, n], [BK, 64], wg_map=xt.wg_map(sg_layout=[2, 2], sg_data=[BK, 32]))
    acc = xt.zeros([64, 64], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc, wg_map=MP_C)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [64, 64], wg_map=MP_C))
    rows = xt.tile_conv_layout(acc, MP_C_ROWS)
    s = xt.tile_reduce("add", rows, [1])
    xt.store_tile(s, xt.init_tile(rowsum, [m, xt.program_id(1)], [64, 1],
                                  wg_map=xt.wg_map(sg_layout=[4, 1], sg_data=[16, 1])))


@xd.jit
def big_conv_kernel(a, c):
    """A 256x128 f32 conversion: 128 KiB of SLM (fits PVC whole; two rounds of 128 rows on ARC)."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [256, 128], wg_map=xt.wg_map(sg_layout=[16, 1], sg_data=[16, 128])))
    w = xt.tile_conv_layout(v, xt.wg_map(sg_layout=[4, 4], sg_data=[64, 32]))
    xt.store_tile(w, xt.init_tile(c, [0, 0], [256, 128], wg_map=xt.wg_map(sg_layout=[4, 4], sg_data=[64, 32])))


@xd.jit
def gemm_coop_kernel(a, b, c, K, BK: xt.constexpr):
    """RFC Appendix 2.4 in its simplest form: each K step, the workgroup's A (64xBK) and B
    (BKx64) tiles are loaded cooperatively (every subgroup a distinct band, no duplicate
    global loads), exchanged through SLM into the mma maps, and multiplied."""
    m = xt.program_id(0) * 64
    n = xt.program_id(1) * 64
    ta = xt.init_tile(a, [m, 0], [64, BK], wg_map=xt.wg_map(sg_layout=[4, 1], sg_data=[16, BK]))
    tb = xt.init_tile(b, [0, n], [BK, 64], wg_map=xt.wg_map(sg_layout=[4, 1], sg_data=[BK // 4, 64]))
    acc = xt.zeros([64, 64], xt.float32)
    for k in range(0, K, BK):
        va = xt.tile_conv_layout(xt.load_tile(ta), xt.wg_map(sg_layout=[2, 2], sg_data=[32, BK]))
        vb = xt.tile_conv_layout(xt.load_tile(tb), xt.wg_map(sg_layout=[2, 2], sg_data=[BK, 32]))
        acc = xt.tile_mma(va, vb, acc, wg_map=MP_C)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [64, 64], wg_map=MP_C))


#: a 512x512 f32 tile (1 MiB) between 4-piece row bands over [8, 4] and whole 16-row bands
#: over [32, 1]: larger than any target's SLM, so the conversion goes in rounds of row chunks
MP_ROUNDS_SRC = xt.wg_map(sg_layout=[8, 4], sg_data=[16, 128])
MP_ROUNDS_DST = xt.wg_map(sg_layout=[32, 1], sg_data=[16, 512])


@xd.jit
def conv_rounds_kernel(a, c):
    """``c = 2a + 1`` for one 512x512 f32 tile per workgroup (rows ``512 * program_id``):
    loaded over [8, 4], converted to [32, 1] in rounds of row chunks, stored."""
    m = xt.program_id(0) * 512
    v = xt.load_tile(xt.init_tile(a, [m, 0], [512, 512], wg_map=MP_ROUNDS_SRC))
    w = xt.tile_conv_layout(v * 2.0, MP_ROUNDS_DST)
    xt.store_tile(w + 1.0, xt.init_tile(c, [m, 0], [512, 512], wg_map=MP_ROUNDS_DST))


@xd.jit
def conv_rounds_after_slm_kernel(a, c, TM: xt.constexpr, ROWS: xt.constexpr):
    """The kernel's own SLM buffer (``ROWS`` x 128 f32, ``ROWS >= TM``) keeps a copy of the
    ``TM`` x 128 f32 tile, so the conversion of that tile (over 32 subgroups, ``TM/8`` x 32
    pieces -> ``TM/32``-row whole-width bands) may no longer fit the SLM whole: it goes in
    rounds of row chunks in what is left. ``c = 2a + 1`` per tile (rows ``TM * program_id``).
    PVC: TM 128, ROWS 192 (96 + 64 KiB > 128 KiB); ARC: TM 64, ROWS 96 (48 + 32 > 64 KiB)."""
    src = xt.wg_map(sg_layout=[8, 4], sg_data=[TM // 8, 32])
    dst = xt.wg_map(sg_layout=[32, 1], sg_data=[TM // 32, 128])
    m = xt.program_id(0) * TM
    own = xt.slm_alloc([ROWS, 128], xt.float32)
    xt.store_tile(xt.load_tile(xt.init_tile(a, [m, 0], [TM, 128], wg_map=src)),
                  xt.init_tile(own, [0, 0], [TM, 128], wg_map=src))
    xt.barrier()
    v = xt.load_tile(xt.init_tile(own, [0, 0], [TM, 128], wg_map=src))
    w = xt.tile_conv_layout(v * 2.0, dst)
    xt.store_tile(w + 1.0, xt.init_tile(c, [m, 0], [TM, 128], wg_map=dst))


@xd.jit
def conv_rounds_loop_kernel(a, c, STEPS: xt.constexpr):
    """The 1 MiB conversion of ``conv_rounds_kernel`` inside a loop over ``STEPS`` row
    blocks of 512 rows: each iteration's rounds reuse the one chunk buffer."""
    ta = xt.init_tile(a, [0, 0], [512, 512], wg_map=MP_ROUNDS_SRC)
    tc = xt.init_tile(c, [0, 0], [512, 512], wg_map=MP_ROUNDS_DST)
    for _ in range(STEPS):
        w = xt.tile_conv_layout(xt.load_tile(ta) * 2.0, MP_ROUNDS_DST)
        xt.store_tile(w + 1.0, tc)
        ta = xt.update_tile_offset(ta, 512, 0)
        tc = xt.update_tile_offset(tc, 512, 0)
