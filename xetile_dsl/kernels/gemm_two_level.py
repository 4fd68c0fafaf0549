"""XeTile RFC Appendix 2.5, "Gemm implementation with two cache levels", in the DSL.

The workgroup computes a ``BM x BN`` tile of C with ``SM x SN`` subgroups.  Besides the
A/B loads with the tile_mma maps it keeps two prefetch streams running ahead of them:

* L2 (``locality=2``): ``BM x L2K`` slices of A and ``L2K x BN`` slices of B
  (``L2K = 4 * BK``), the first two before the loop, then one every four K steps inside
  an ``if`` that also holds a workgroup barrier (the subgroups stay within one L2 block
  of each other, so the shared L2 lines they prefetched are still there);
* L1 (``locality=3``): ``BM x BK`` / ``BK x BN`` slices, the first four K steps before
  the loop, then one step (four ahead) every iteration.

With ``BM=512, BN=256, BK=32, SM=8, SN=4`` the maps are exactly the RFC's: mp_a
[8, 4]/[64, 32], mp_b [8, 4]/[32, 64], mp_c [8, 4]/[64, 64]; L2 a [32, 1]/[16, 128],
b [16, 2]/[8, 128]; L1 a [32, 1]/[16, 32], b [4, 8]/[8, 32].  The RFC's listing has
typos (see docs/ir.md, "The RFC's appendix programs, as implemented"); this is its evident intent.
"""
import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

#: the RFC's literal maps (what gemm_two_level_kernel derives for BM=512, BN=256, BK=32, [8, 4])
RFC_MAPS = {
    "mp_a": xt.wg_map(sg_layout=[8, 4], sg_data=[64, 32]),
    "mp_b": xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64]),
    "mp_c": xt.wg_map(sg_layout=[8, 4], sg_data=[64, 64]),
    "mp_a_copl2": xt.wg_map(sg_layout=[32, 1], sg_data=[16, 128]),
    "mp_b_copl2": xt.wg_map(sg_layout=[16, 2], sg_data=[8, 128]),
    "mp_a_copl1": xt.wg_map(sg_layout=[32, 1], sg_data=[16, 32]),
    "mp_b_copl1": xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32]),
}

#: the RFC program's workgroup tile and subgroup layout
RFC_TILES = {"BM": 512, "BN": 256, "BK": 32, "SM": 8, "SN": 4}
#: the closest variant whose 32x64 accumulator per subgroup fits PVC's registers
SMALL_TILES = {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4}
#: the same structure within ARC's 8 KiB register file (16x32 accumulator per subgroup)
ARC_TILES = {"BM": 128, "BN": 128, "BK": 32, "SM": 8, "SN": 4}


@xd.jit
def gemm_two_level_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
                          SN: xt.constexpr):
    """RFC Appendix 2.5: C = A @ B (f32) with L2 and L1 prefetch streams (module docstring)."""
    NS = SM * SN
    L2K = 4 * BK  # K width of one L2 prefetch block
    mp_a = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK])
    mp_b = xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN])
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    mp_a_l2 = xt.wg_map(sg_layout=[NS, 1], sg_data=[BM // NS, L2K])
    mp_b_l2 = xt.wg_map(sg_layout=[NS // 2, 2], sg_data=[L2K // (NS // 2), BN // 2])
    mp_a_l1 = xt.wg_map(sg_layout=[NS, 1], sg_data=[BM // NS, BK])
    mp_b_l1 = xt.wg_map(sg_layout=[4, NS // 4], sg_data=[BK // 4, BN // (NS // 4)])
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN

    # L2: the first two L2K blocks of K; a2_l2/b2_l2 then stream on, one block per 4 K steps
    xt.prefetch_tile(xt.init_tile(a, [m, 0], [BM, L2K], wg_map=mp_a_l2), locality=2)
    xt.prefetch_tile(xt.init_tile(b, [0, n], [L2K, BN], wg_map=mp_b_l2), locality=2)
    a2_l2 = xt.init_tile(a, [m, L2K], [BM, L2K], wg_map=mp_a_l2)
    b2_l2 = xt.init_tile(b, [L2K, n], [L2K, BN], wg_map=mp_b_l2)
    xt.prefetch_tile(a2_l2, locality=2)
    xt.prefetch_tile(b2_l2, locality=2)
    a2_l2 = xt.update_tile_offset(a2_l2, 0, L2K)
    b2_l2 = xt.update_tile_offset(b2_l2, L2K, 0)

    # L1: the first four K steps; a4_l1/b4_l1 then stay four steps ahead of the loads
    for s in xt.static_range(3):
        xt.prefetch_tile(xt.init_tile(a, [m, s * BK], [BM, BK], wg_map=mp_a_l1), locality=3)
        xt.prefetch_tile(xt.init_tile(b, [s * BK, n], [BK, BN], wg_map=mp_b_l1), locality=3)
    a4_l1 = xt.init_tile(a, [m, 3 * BK], [BM, BK], wg_map=mp_a_l1)
    b4_l1 = xt.init_tile(b, [3 * BK, n], [BK, BN], wg_map=mp_b_l1)
    xt.prefetch_tile(a4_l1, locality=3)
    xt.prefetch_tile(b4_l1, locality=3)
    a4_l1 = xt.update_tile_offset(a4_l1, 0, BK)
    b4_l1 = xt.update_tile_offset(b4_l1, BK, 0)

    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=mp_a)
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=mp_b)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        if k % L2K == 0:
            xt.barrier()
            xt.prefetch_tile(a2_l2, locality=2)
            xt.prefetch_tile(b2_l2, locality=2)
            a2_l2 = xt.update_tile_offset(a2_l2, 0, L2K)
            b2_l2 = xt.update_tile_offset(b2_l2, L2K, 0)
        xt.prefetch_tile(a4_l1, locality=3)
        xt.prefetch_tile(b4_l1, locality=3)
        a4_l1 = xt.update_tile_offset(a4_l1, 0, BK)
        b4_l1 = xt.update_tile_offset(b4_l1, BK, 0)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        acc = xt.tile_mma(va, vb, acc, wg_map=mp_c)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


def gemm_two_level(a, b, c=None, target=None, tiles=None):
    """``a @ b`` in f32 with :func:`gemm_two_level_kernel`; ``tiles`` defaults to the
    RFC's (512x256 workgroup tiles)."""
    tiles = dict(tiles or RFC_TILES)
    (M, K), N = a.shape, b.shape[1]
    if c is None:
        c = np.zeros((M, N), np.float32)
    launcher = gemm_two_level_kernel.on(target) if target else gemm_two_level_kernel
    launcher[((M + tiles["BM"] - 1) // tiles["BM"], (N + tiles["BN"] - 1) // tiles["BN"])](a, b, c, K, **tiles)
    return c
