"""XeTile RFC Appendix 2.2 and 2.3, written in the DSL with the RFC's wg_map values:
``C = A @ transpose(BT) + broadcast(bcast, dim 0)`` and ``Reduce = row sums of C``.

Each workgroup computes a 256x256 tile of C with 32 subgroups. BT (``N x K``) is loaded in
256x32 slices with ``MP_BT`` (Appendix 2.2: sg_layout [4, 8], a cross-subgroup transpose,
which the compiler folds into transposed loads since BT is in global memory) or
``MP_BT_23`` (Appendix 2.3: sg_layout [32, 1], where every subgroup loads exactly the
transpose of its B piece, so the transpose needs no exchange), transposed to
``MP_B`` and multiplied; the 1x256 bcast row is loaded with ``MP_BCAST`` and broadcast to
``MP_C``; the sum is converted to ``MP_REDUCE2`` (32 subgroups x 8 whole rows) and
reduced along dim 1 to ``MP_REDUCE``.

Corrections to the RFC text (see docs/ir.md, "The RFC's appendix programs, as implemented"): the stored value is the reduction
(``%16``, not ``%7``); ``%2p`` advances along K like ``%2`` (``%c0, %c32``); the bcast
load yields f32; the program reads ``%bt`` (the argument is named ``%b``); the maps of
tile_transpose/conv_layout/reduce are listed source first. A workgroup's reduction covers
its own 256 columns, so workgroup column ``j`` writes column ``j`` of ``res``
(``res[:, j]`` = partial row sums; ``res.sum(1)`` is the RFC's Reduce) instead of all
workgroups overwriting one vector. C is stored too, so that it can be checked.
"""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

MP_A = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 32])
MP_A_PFH = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 32])
MP_B = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64])
MP_BT = xt.wg_map(sg_layout=[4, 8], sg_data=[64, 32])
MP_BT_PFH = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 32])
MP_C = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64])
MP_BCAST = xt.wg_map(sg_layout=[8, 4], sg_data=[1, 64])
MP_REDUCE = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 1])
MP_REDUCE2 = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 256])
#: Appendix 2.3: the BT map whose subgroups each load the transpose of their own B piece
MP_BT_23 = xt.wg_map(sg_layout=[32, 1], sg_data=[64, 32])

BM = BN = 256
BK = 32


@xd.jit
def gemm_bt_bcast_reduce_kernel(a, bt, bcast, c, res, K, MP_BT_LOAD: xt.constexpr, PF: xt.constexpr):
    """RFC Appendix 2.2 (``MP_BT_LOAD=MP_BT``) or 2.3 (``MP_BT_LOAD=MP_BT_23``):
    ``c = a @ bt.T + bcast`` per 256x256 workgroup tile and ``res[:, j]`` = row sums of
    workgroup column ``j``'s tile of ``c``; A and BT are prefetched ``PF`` K-steps ahead."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=MP_A)
    tbt = xt.init_tile(bt, [n, 0], [BN, BK], wg_map=MP_BT_LOAD)
    pa = xt.init_tile(a, [m, PF * BK], [BM, BK], wg_map=MP_A_PFH)
    pbt = xt.init_tile(bt, [n, PF * BK], [BN, BK], wg_map=MP_BT_PFH)
    tbcast = xt.init_tile(bcast, [0, n], [1, BN], wg_map=MP_BCAST)
    tres = xt.init_tile(res, [m, xt.program_id(1)], [BM, 1], wg_map=MP_REDUCE)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vbt = xt.load_tile(tbt)
        vb = xt.tile_transpose(vbt, wg_map=MP_B)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pbt)
        acc = xt.tile_mma(va, vb, acc, wg_map=MP_C)
        ta = xt.update_tile_offset(ta, 0, BK)
        tbt = xt.update_tile_offset(tbt, 0, BK)
        pa = xt.update_tile_offset(pa, 0, BK)
        pbt = xt.update_tile_offset(pbt, 0, BK)
    row = xt.load_tile(tbcast)
    total = acc + xt.tile_broadcast(row, [BM, BN])
    xt.store_tile(total, xt.init_tile(c, [m, n], [BM, BN], wg_map=MP_C))
    rows = xt.tile_conv_layout(total, MP_REDUCE2)
    xt.store_tile(xt.tile_reduce("add", rows, [1]), tres)


def gemm_bt_bcast_reduce(a, bt, bcast, appendix="2.2", target=None, PF=3):
    """``(c, res)``: ``c = a @ bt.T + bcast`` (f32) and ``res[:, j]`` = row sums of
    ``c[:, 256j:256j+256]`` with the Appendix 2.2 (or ``appendix="2.3"``) kernel."""
    (M, K), N = a.shape, bt.shape[0]
    c = np.full((M, N), np.nan, np.float32)
    res = np.full((M, max(16, N // BN)), np.nan, np.float32)  # rows of >= 64 bytes for 2D blocks
    launcher = gemm_bt_bcast_reduce_kernel.on(target) if target else gemm_bt_bcast_reduce_kernel
    mp_bt = MP_BT if appendix == "2.2" else MP_BT_23
    launcher[(M // BM, N // BN)](a, bt, np.asarray(bcast, np.float32).reshape(1, N), c, res, K,
                                 MP_BT_LOAD=mp_bt, PF=PF)
    return c, res[:, :N // BN]
