"""Workgroup-level GEMMs from the XeTile RFC's Appendix 2, written in the DSL.

Each workgroup computes a 256x256 tile of C with 32 subgroups in an [8, 4] layout
(the RFC's wg_map values); the kernel runs with 32 x subgroup-size work items per
workgroup and ``program_id`` numbering workgroups.
"""
import xetile_dsl as xd
import xetile_dsl.language as xt

# Appendix 2.1, "Simple Gemm with prefetch"
MP_A = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 32])
MP_A_PFH = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 32])
MP_B = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64])
MP_B_PFH = xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32])
MP_C = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64])


@xd.jit
def gemm_prefetch_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, PF: xt.constexpr):
    """RFC Appendix 2.1: C = A @ B; A and B are loaded with the mma maps and prefetched
    ``PF`` K-steps ahead with the cooperative maps (each subgroup prefetches its slice)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=MP_A)
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=MP_B)
    pa = xt.init_tile(a, [m, PF * BK], [BM, BK], wg_map=MP_A_PFH)
    pb = xt.init_tile(b, [PF * BK, n], [BK, BN], wg_map=MP_B_PFH)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=MP_C)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, 0, BK)
        pb = xt.update_tile_offset(pb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=MP_C))


def gemm_prefetch(a, b, c=None, target=None):
    """``a @ b`` in f32 with the Appendix 2.1 kernel (256x256 workgroup tiles)."""
    import numpy as np

    (M, K), N = a.shape, b.shape[1]
    if c is None:
        c = np.zeros((M, N), np.float32)
    launcher = gemm_prefetch_kernel.on(target) if target else gemm_prefetch_kernel
    launcher[((M + 255) // 256, (N + 255) // 256)](a, b, c, K, BM=256, BN=256, BK=32, PF=3)
    return c
