"""An ARC (DG2) GEMM that stages A through shared local memory.

DG2 has no 2D block messages: a tile row is one subgroup block message, so an A operand
read from global memory costs one message per row (8 per 8x16 DPAS block).  Here the
workgroup's ``BM x 16`` A slice is read once, cooperatively (every subgroup ``BM / NS``
distinct rows), and written to an SLM buffer exactly 16 elements wide: each 8x16 DPAS
block of it is 256 contiguous bytes, one 8-unit SLM block read (codegen/emit/slm.py).  B is
read from global memory by rows as in :func:`~xetile_dsl.kernels.gemm_wg.gemm_wg_kernel`.
"""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def gemm_slm_a_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, SM: xt.constexpr, SN: xt.constexpr):
    """``c = a @ b`` (f16 in, f32 out), K a multiple of 16: per K step of 16 the A slice
    goes global -> SLM with the cooperative map, a barrier, then each subgroup reads its
    ``BM/SM x 16`` A piece from SLM (mma map) and multiplies with its ``16 x BN/SN`` B
    piece; a second barrier frees the buffer for the next step."""
    NS = SM * SN
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    mp_coop = xt.wg_map(sg_layout=[NS, 1], sg_data=[BM // NS, 16])
    mp_a = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, 16])
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    a_slm = xt.slm_alloc([BM, 16], xt.float16)
    ta = xt.init_tile(a, [m, 0], [BM, 16], wg_map=mp_coop)
    tb = xt.init_tile(b, [0, n], [16, BN], wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[16, BN // SN]))
    a_store = xt.init_tile(a_slm, [0, 0], [BM, 16], wg_map=mp_coop)
    a_load = xt.init_tile(a_slm, [0, 0], [BM, 16], wg_map=mp_a)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, 16):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.store_tile(va, a_store)
        xt.barrier()
        a_rr = xt.load_tile(a_load)
        acc = xt.tile_mma(a_rr, vb, acc, wg_map=mp_c)
        xt.barrier()
        ta = xt.update_tile_offset(ta, 0, 16)
        tb = xt.update_tile_offset(tb, 16, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))
